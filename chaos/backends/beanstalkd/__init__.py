"""beanstalkd backends: ``local`` starts its own ``beanstalkd`` on a free port in the run dir, with its
binlog (-b) when the target's [server] `binlog` is on; ``external`` uses a server you name
(--backend-url or CHAOS_BEANSTALKD_URL). Each run uses its own tube, emptied at the run's end.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.options import ServerOption
from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

BINLOG = ServerOption("binlog", "off", "the local server's binlog (-b in the run dir): off, a restart loses every job",
                      choices=("on", "off"))

ENV_URL = "CHAOS_BEANSTALKD_URL"  # the external provider's server, when --backend-url is not given

SERVER_PACKAGE = DebianPackage("beanstalkd", ("beanstalkd",))
REFERENCE_TARGET = "beanstalkd_ttr"  # the bundled correct target `chaos target new --backend beanstalkd` starts from
# The public names of its control and observer code (`chaos` exports them), and its worker-side modules.
EXPORTS = {"BeanstalkdQueueControl": "chaos.backends.beanstalkd.control"}
WORKER_HELPERS = ("chaos.worker.beanstalkd",)

PROVIDERS = {
    "local": Provider("beanstalkd", "local", "chaos.backends.beanstalkd.local:LocalBeanstalkd", (BINLOG,)),
    "external": Provider("beanstalkd", "external", "chaos.backends.beanstalkd.external:ExternalBeanstalkd"),
    "docker": Provider("beanstalkd", "docker", "chaos.backends.beanstalkd.docker:DockerBeanstalkd", (BINLOG,)),
}
