"""beanstalkd backends: ``local`` starts its own ``beanstalkd`` on a free port in the run dir, with its
binlog (-b) when the target's `binlog` parameter is on; ``external`` uses a server you name
(--backend-url or CHAOS_BEANSTALKD_URL). Each run uses its own tube, emptied at the run's end.

Importing this package is cheap: a provider's server code is imported when a run opens it.
"""

from chaos.backends.registry import Provider

PROVIDERS = {
    "local": Provider("beanstalkd", "local", "chaos.backends.beanstalkd.local:LocalBeanstalkd"),
    "external": Provider("beanstalkd", "external", "chaos.backends.beanstalkd.external:ExternalBeanstalkd"),
}
