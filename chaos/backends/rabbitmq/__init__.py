"""RabbitMQ backends: ``local`` starts a private node (its own node name, ports, epmd, data directory and
cookie) in the run dir, with the target's [server] `consumer_timeout_ms` when it sets one; ``external`` uses a
broker you name (--backend-url or CHAOS_RABBITMQ_URL) and gives each run a fresh vhost through its
management API (CHAOS_RABBITMQ_API_URL, by default port 15672 of the broker's host), deleted at the end.

A node takes several seconds to boot: a suite of many runs can start one node (`chaos.backends.rabbitmq.local`
with the `management` option) and run every scenario without broker faults against it as external.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.options import ServerOption, positive_int_or
from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

CONSUMER_TIMEOUT_MS = ServerOption(
    "consumer_timeout_ms", "default", "the local node's delivery acknowledgement timeout",
    accepts=positive_int_or("default"), expected='"default" (30 minutes) or a positive number of milliseconds')
MANAGEMENT = ServerOption("management", "off", "the management API, for a node many runs share as external",
                          choices=("on", "off"))

ENV_URL = "CHAOS_RABBITMQ_URL"  # the external provider's broker, when --backend-url is not given
ENV_API_URL = "CHAOS_RABBITMQ_API_URL"  # its management API, which creates the run's vhost

SERVER_PACKAGE = DebianPackage("rabbitmq-server", ("rabbitmq-server",), ("/usr/lib/rabbitmq/bin/rabbitmq-server",))
REFERENCE_TARGET = "rabbitmq_ack"  # the bundled correct target `chaos target new --backend rabbitmq` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"RabbitMQQueueControl": "chaos.backends.rabbitmq.control",
           "FirehoseObserver": "chaos.backends.rabbitmq.observer"}
WORKER_HELPERS = ("chaos.worker.rabbitmq",)

PROVIDERS = {
    "local": Provider("rabbitmq", "local", "chaos.backends.rabbitmq.local:LocalRabbitMQ",
                      (CONSUMER_TIMEOUT_MS, MANAGEMENT)),
    "external": Provider("rabbitmq", "external", "chaos.backends.rabbitmq.external:ExternalRabbitMQ"),
    "docker": Provider("rabbitmq", "docker", "chaos.backends.rabbitmq.docker:DockerRabbitMQ", (CONSUMER_TIMEOUT_MS,)),
}
