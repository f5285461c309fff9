"""Redis backends: ``local`` starts its own ``redis-server`` on a free port in the run dir (persistence
from the target's [server] `persistence`: none, aof-everysec or aof-always); ``external`` uses a server
you name (--backend-url or CHAOS_REDIS_URL). Each run keeps its keys under its own prefix, which an
external run deletes at its end.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.options import ServerOption
from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

PERSISTENCE = ServerOption("persistence", "none", "what of the local server's data survives a crash",
                           choices=("none", "aof-everysec", "aof-always"))

ENV_URL = "CHAOS_REDIS_URL"  # the external provider's server, when --backend-url is not given

SERVER_PACKAGE = DebianPackage("redis-server", ("redis-server",))
REFERENCE_TARGET = "redis_reliable"  # the bundled correct target `chaos target new --backend redis` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"RedisQueueControl": "chaos.backends.redis.control", "ReplicaObserver": "chaos.backends.redis.observer",
           "StreamObserver": "chaos.backends.redis.streams"}
# An observer declared in target.toml's [observer] table: the module whose parse_layout(table, where) reads the
# table, and the class built with (backend, params, contract, layout); a target's layout needs no observer code.
LAYOUT = "chaos.backends.redis.layout"
LAYOUT_OBSERVER = "chaos.backends.redis.observer:LayoutObserver"
WORKER_HELPERS = ("chaos.worker.redis", "chaos.worker.redis_streams")

PROVIDERS = {
    "local": Provider("redis", "local", "chaos.backends.redis.local:LocalRedis", (PERSISTENCE,)),
    "external": Provider("redis", "external", "chaos.backends.redis.external:ExternalRedis"),
    "docker": Provider("redis", "docker", "chaos.backends.redis.docker:DockerRedis", (PERSISTENCE,)),
}
