"""Backend providers, keyed by backend kind and provider name.

Registering a kind is one line in BUILT_IN naming its package (or, from another distribution, an entry
point in the group `queue_chaos.backend_kinds` naming it: `chaos.plugins`). The package declares
PROVIDERS, whose factories import the server code only when a run opens one, so listing providers stays
cheap; SERVER_PACKAGE and REFERENCE_TARGET (see chaos.backends.packages, chaos.authoring.scaffold); and
optionally EXPORTS, the public names of its control and observer code (`chaos` exports a built-in
kind's), and WORKER_HELPERS, its modules that run inside a worker process (chaos.worker.<kind>), which
bundled targets may import as they may `chaos`'s own names; and LAYOUT, the module that reads an
observer declared as configuration in target.toml (`layout_module`).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from chaos.backends.base import Backend, BackendSettings
from chaos.backends.options import ServerOption
from chaos.errors import ConfigError
from chaos.plugins import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BUILT_IN: dict[str, str] = {
    "postgres": "chaos.backends.postgres",
    "redis": "chaos.backends.redis",
    "beanstalkd": "chaos.backends.beanstalkd",
    "rabbitmq": "chaos.backends.rabbitmq",
    "nats": "chaos.backends.nats",
    "sqs": "chaos.backends.sqs",
}
REQUIRED = ("PROVIDERS", "SERVER_PACKAGE", "REFERENCE_TARGET")  # what a kind's package must declare


def _plugin_kind(point: EntryPoint) -> str:
    """An entry point names a kind's package, as BUILT_IN does."""
    package = point.load()
    if not isinstance(package, ModuleType):
        raise ValueError(f"it names {package!r}, not a package (write its module path, such as my_queue.backend)")
    missing = [name for name in REQUIRED if not hasattr(package, name)]
    if missing:
        raise ValueError(f"its package {package.__name__} declares no {', '.join(missing)} (a backend kind's package "
                         f"declares {', '.join(REQUIRED)}: see chaos.backends.registry)")
    return package.__name__


KINDS: Registry[str] = Registry("backend_kinds", "backend kind", lambda: BUILT_IN, _plugin_kind)


@dataclass(frozen=True)
class Provider:
    """One way to get a backend of a kind; `backend` names its class as 'module:Class', imported on use;
    `options`: the settings its server takes (target.toml's [server] table)."""

    kind: str
    name: str
    backend: str
    options: tuple[ServerOption, ...] = ()

    def backend_class(self) -> type[Backend]:
        module, _, cls = self.backend.partition(":")
        found: type[Backend] = getattr(importlib.import_module(module), cls)
        return found

    @property
    def capabilities(self) -> frozenset[str]:
        return self.backend_class().capabilities

    def missing_packages(self) -> list[str]:
        """The Python packages its backend needs that do not import here, each with why (the error of its
        first module that fails)."""
        missing: dict[str, str] = {}
        for module in getattr(self.backend_class(), "python_modules", ()):
            package = module.partition(".")[0]
            if package in missing:
                continue
            try:
                with warnings.catch_warnings():  # a library's own deprecations, which the run would not show
                    warnings.simplefilter("ignore", DeprecationWarning)
                    importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - a package that fails to import, however it fails
                missing[package] = f"{package} ({type(exc).__name__}: {exc})"
        return list(missing.values())

    def require_packages(self) -> None:
        """Refuse, before anything starts, a provider whose Python packages are not installed here."""
        missing = self.missing_packages()
        if not missing:
            return
        extra = getattr(self.backend_class(), "extra", "")
        needs = f"the {extra} extra of queue-chaos" if extra else "Python packages beyond the suite's own"
        install = f"Install it: pip install 'queue-chaos[{extra}]'" if extra else "Install them"
        raise ConfigError(f"The {self.kind} {self.name} provider needs {needs}, and {', '.join(missing)} "
                          f"{'does' if len(missing) == 1 else 'do'} not import here. {install}; or run with "
                          "--backend local.")

    def open(self, settings: BackendSettings) -> Backend:
        """Build and start the backend."""
        return self.backend_class().open(settings)

    def preflight(self, url: str | None) -> None:
        """Refuse what keeps this provider from having a server here (Backend.preflight)."""
        self.backend_class().preflight(url)


def package(kind: str) -> ModuleType:
    """The package that declares `kind` (an unknown kind is the user's error, said as such)."""
    if kind not in KINDS:
        raise ConfigError(f"Backend kind {kind!r} is not supported: expected one of {', '.join(sorted(KINDS))}. "
                          "Fix the backend key in target.toml.")
    return importlib.import_module(KINDS[kind])


def providers(kind: str) -> dict[str, Provider]:
    found: dict[str, Provider] = package(kind).PROVIDERS
    return found


def provider(kind: str, name: str) -> Provider:
    known = providers(kind)
    if name not in known:
        raise ConfigError(f"Expected a {kind} backend provider among {', '.join(sorted(known))}, but got {name!r}. "
                          "Fix the --backend option.")
    return known[name]


def reference_target(kind: str) -> str:
    """The bundled correct target of `kind` that a new target starts from (its package's REFERENCE_TARGET)."""
    found: str = package(kind).REFERENCE_TARGET
    return found


def layout_module(kind: str) -> ModuleType | None:
    """The module whose `parse_layout(table, where)` reads a layout declared in target.toml's [observer]
    table, where `kind` reads one (its package's LAYOUT)."""
    name = getattr(package(kind), "LAYOUT", None)
    return importlib.import_module(name) if name else None


def layout_observer(kind: str) -> Any:
    """The observer class of a declared layout (its package's LAYOUT_OBSERVER, 'module:Class'), built with
    (backend, params, contract, layout)."""
    module, _, name = str(package(kind).LAYOUT_OBSERVER).partition(":")
    return getattr(importlib.import_module(module), name)


def server_options(kind: str) -> dict[str, ServerOption]:
    """Every server setting some provider of `kind` takes: what target.toml's [server] table may set."""
    return {option.name: option for found in providers(kind).values() for option in found.options}


def provider_names() -> list[str]:
    """Every provider name of every kind, for the CLI's --backend choices."""
    return sorted({name for kind in KINDS for name in providers(kind)})


def exports() -> dict[str, str]:
    """The public names of the suite's own kinds (name -> its module), which `chaos` exports; a plugin's
    are its own package's to export."""
    found: dict[str, str] = {}
    for kind in BUILT_IN:
        found.update(getattr(package(kind), "EXPORTS", {}))
    return found


def worker_helpers(kinds: Iterable[str]) -> list[str]:
    """The worker-side modules of `kinds` (their packages' WORKER_HELPERS)."""
    return [module for kind in kinds for module in getattr(package(kind), "WORKER_HELPERS", ())]
