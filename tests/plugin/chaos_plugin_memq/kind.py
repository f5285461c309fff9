"""The memq backend kind, as chaos.backends.registry reads a kind's package: its providers, the system
package its server comes from, and the target `chaos target new --backend memq` starts from."""

from chaos.backends.packages import DebianPackage
from chaos.backends.registry import Provider

SERVER_PACKAGE = DebianPackage("python3", ("python3",))  # the server is this package's own Python module
REFERENCE_TARGET = "memq_pop"

PROVIDERS = {
    "local": Provider("memq", "local", "chaos_plugin_memq.local:LocalMemq"),
}
