"""SQS backends: ``local`` starts its own moto server (`python -m moto.server`, an SQS emulator) on a free
port in the run dir; ``external`` uses any SQS-compatible endpoint you name (real SQS, ElasticMQ,
LocalStack: --backend-url or CHAOS_SQS_URL). Each run gets its own queues (jobs, dead letters, completion
records), which an external run deletes at its end.

moto keeps everything in memory and persists nothing, so a restart of it would only wipe the queue: the
local provider offers no restart or kill, and scenarios that need them are refused before they start.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

ENV_URL = "CHAOS_SQS_URL"  # the external provider's endpoint, when --backend-url is not given

# moto is a Python dependency of the suite, run by the suite's own interpreter: the only Debian package
# the local server needs is that interpreter's, present wherever the suite runs.
SERVER_PACKAGE = DebianPackage("python3", ("python3",))
REFERENCE_TARGET = "sqs_visibility"  # the bundled correct target `chaos target new --backend sqs` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"SqsQueueControl": "chaos.backends.sqs.control"}
WORKER_HELPERS = ("chaos.worker.sqs",)

PROVIDERS = {
    "local": Provider("sqs", "local", "chaos.backends.sqs.local:LocalSqs"),
    "external": Provider("sqs", "external", "chaos.backends.sqs.external:ExternalSqs"),
}
