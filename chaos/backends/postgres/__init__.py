"""PostgreSQL backends: the ``local`` provider starts its own ``postgres`` on a free port in the run dir,
so a fault never touches anything else on the machine; the ``external`` provider only gets a fresh
schema on a server the user names, so faults that need control of the server are unavailable there.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

ENV_URL = "CHAOS_POSTGRES_URL"  # the external provider's server, when --backend-url is not given

SERVER_PACKAGE = DebianPackage("postgresql", ("initdb",), ("/usr/lib/postgresql/*/bin/initdb",))
REFERENCE_TARGET = "pg_txlock"  # the bundled correct target `chaos target new --backend postgres` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"TableQueueControl": "chaos.backends.postgres.control",
           "TriggerObserver": "chaos.backends.postgres.observer"}
WORKER_HELPERS = ("chaos.worker.postgres",)

PROVIDERS = {
    # local: a private server on a free port, in the run dir (the default)
    "local": Provider("postgres", "local", "chaos.backends.postgres.local:LocalPostgres"),
    # external: your server (--backend-url or CHAOS_POSTGRES_URL), a fresh schema per run
    "external": Provider("postgres", "external", "chaos.backends.postgres.external:ExternalPostgres"),
    # docker: the host's PostgreSQL in a container of its own (an image built here), faults on the container
    "docker": Provider("postgres", "docker", "chaos.backends.postgres.docker:DockerPostgres"),
}
