"""NATS JetStream backends: ``local`` starts its own ``nats-server -js`` on a free port, its JetStream store
in the run dir; ``external`` uses a server you name (--backend-url or CHAOS_NATS_URL). Each run keeps its
jobs in streams of its own (named from the run id), which an external run deletes at its end. Whether a
restart keeps the jobs is the stream's storage (file or memory), which the target's control chooses.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

ENV_URL = "CHAOS_NATS_URL"  # the external provider's server, when --backend-url is not given

SERVER_PACKAGE = DebianPackage("nats-server", ("nats-server",), ("/usr/sbin/nats-server",))
REFERENCE_TARGET = "nats_jetstream"  # the bundled correct target `chaos target new --backend nats` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"NatsQueueControl": "chaos.backends.nats.control"}
WORKER_HELPERS = ("chaos.worker.nats",)

PROVIDERS = {
    "local": Provider("nats", "local", "chaos.backends.nats.local:LocalNats"),
    "external": Provider("nats", "external", "chaos.backends.nats.external:ExternalNats"),
    "docker": Provider("nats", "docker", "chaos.backends.nats.docker:DockerNats"),
}
