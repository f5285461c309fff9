"""Redis backends: ``local`` starts its own ``redis-server`` on a free port in the run dir (persistence
from the target's `persistence` parameter: none, aof-everysec or aof-always); ``external`` uses a server
you name (--backend-url or CHAOS_REDIS_URL). Each run keeps its keys under its own prefix, which an
external run deletes at its end.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.registry import Provider

PROVIDERS = {
    "local": Provider("redis", "local", "chaos.backends.redis.local:LocalRedis"),
    "external": Provider("redis", "external", "chaos.backends.redis.external:ExternalRedis"),
}
