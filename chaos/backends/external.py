"""The external provider's shared half: a server the user names, where each run only gets a fresh
namespace of its own (a schema, a key prefix, a tube, a vhost) and removes it at its end.

The suite does not own that server, so faults that need control of it are unavailable there; and a
killed run's namespace is removed only when it proves it is that run's (`chaos.ownership`): named exactly
as the suite names that run's, and holding a marker object (a key, a comment, a description, a tag) with
the random marker the run journaled before it made the namespace.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, ClassVar, Self

from chaos import events
from chaos.backends.base import Backend, BackendSettings, Endpoint
from chaos.errors import ConfigError, HarnessError
from chaos.ownership import is_marker, new_marker


def mask_password(url: str) -> str:
    """The URL or conninfo with any password replaced by ***, safe for messages and logs."""
    masked = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url)
    masked = re.sub(r"([?&]password=)[^&#]*", r"\1***", masked)
    if "://" not in url:
        masked = re.sub(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", masked)
    return masked


class ExternalServer(Backend):
    """A user's server (provider 'external'): the run gets its own namespace and no server faults."""

    provider: ClassVar[str] = "external"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    name: ClassVar[str] = ""  # as a message names it: "Redis"
    env_url: ClassVar[str] = ""  # the environment variable naming the server
    example_url: ClassVar[str] = ""
    schemes: ClassVar[tuple[str, ...]] = ()

    parts: urllib.parse.SplitResult  # the URL's parts, as check_url found them

    def __init__(self, url: str, run_id: str) -> None:
        self.url = url
        self.check_url()
        self.namespace = self.namespace_for(run_id)
        self.marker = new_marker()
        self._started = False
        self._closed = False

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        """The user's server from --backend-url, else the kind's environment variable; a fresh namespace."""
        url = cls.server_url(settings.url)
        backend = cls(url, settings.run_id)
        recorded = {"provider": cls.provider, "url": mask_password(url), "namespace": backend.namespace,
                    "marker": backend.marker}
        if settings.on_event is not None:  # before the namespace exists: a runner killed meanwhile is cleaned
            settings.on_event(events.backend_prepare(**recorded))
        backend.start()
        if settings.on_event is not None:
            settings.on_event(events.backend_start(**recorded))
        return backend

    @classmethod
    def preflight(cls, url: str | None) -> None:
        """A URL is given or exported, and this kind can use it (the server is first asked when a run starts)."""
        cls(cls.server_url(url), "")

    @classmethod
    def server_url(cls, given: str | None) -> str:
        """--backend-url, else the kind's environment variable."""
        url = given or os.environ.get(cls.env_url) or None
        if url is None:
            raise ConfigError(
                f"The external {cls.name} provider needs the URL of an existing server, but neither --backend-url "
                f"nor {cls.env_url} is set. Pass --backend-url {cls.example_url} (or export {cls.env_url}), or "
                "drop --backend external to let the suite start its own server.")
        return url

    # -- what a server kind says ---------------------------------------------------------------------

    def check_url(self) -> None:
        """Refuse (ConfigError) a URL this kind cannot use; by default, one of its schemes with a host."""
        try:
            self.parts = urllib.parse.urlsplit(self.url)
            usable = self.parts.scheme in self.schemes and bool(self.parts.hostname) and self.parts.port != 0
        except ValueError:  # a port that is no number, or an unclosed [ of an IPv6 address
            usable = False
        if not usable:
            raise ConfigError(f"Expected a {self.name} URL like {self.example_url}, but got "
                              f"{mask_password(self.url)!r}. Fix --backend-url or {self.env_url}.")

    @staticmethod
    def namespace_for(run_id: str) -> str:
        raise NotImplementedError

    def create_namespace(self) -> None:
        """Check the server answers and make the run's namespace (raise ConfigError when it cannot), its
        marker object first, or in the same step."""
        raise NotImplementedError

    def namespace_marker(self) -> str | None:
        """The marker the namespace's marker object holds: None when the server has no such namespace, ''
        when it has one without it (HarnessError when the server does not answer)."""
        raise NotImplementedError

    def drop_namespace(self) -> None:
        """Remove everything the run made on the server."""
        raise NotImplementedError

    def url_at(self, host: str, port: int) -> str:
        raise NotImplementedError

    # -- Backend ---------------------------------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        return self.endpoint_at(self.parts.hostname or "", self.parts.port or 0)

    def endpoint_at(self, host: str, port: int) -> Endpoint:
        return Endpoint(host, port, self.url_at(host, port))

    def netloc_at(self, host: str, port: int) -> str:
        """The URL's user and password in front of another address."""
        user = self.parts.netloc.rpartition("@")[0]
        return f"{user}@{host}:{port}" if user else f"{host}:{port}"

    def start(self) -> Self:
        if self._closed:
            raise HarnessError(f"external {self.name}: start() after close()")
        if not self._started:
            try:
                self.create_namespace()
            except BaseException:
                self.drop_namespace_quietly()  # made halfway (a vhost without its permissions)
                raise
            self._started = True
        return self

    def drop_namespace_quietly(self) -> None:
        try:
            self.drop_namespace()
        except (HarnessError, ConfigError):
            pass

    def restart(self, mode: str = "immediate") -> None:
        raise self._no_control(f"restart ({mode})")

    def kill(self) -> None:
        raise self._no_control("kill")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._started:
            self.drop_namespace()

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """Remove the namespace a killed run made, when given (or told by the environment) the same server,
        and only when it proves it is that run's; else say what is left, and why."""
        url = url or os.environ.get(cls.env_url)
        namespace, recorded, marker = (str(started.get("namespace") or ""), started.get("url"),
                                       str(started.get("marker") or ""))
        if not namespace:
            return True, ""
        where = f"its {cls.name} namespace {namespace} on {recorded}"
        if namespace != cls.namespace_for(run_dir.name):
            return False, (f"{where} is not touched: it is not the one the suite names for this run dir "
                           f"({cls.namespace_for(run_dir.name)})")
        if not is_marker(marker):
            return False, f"{where} is not touched: its ledger gives no marker of the suite's form for it"
        if not url or mask_password(url) != recorded:
            return False, (f"its {cls.name} namespace {namespace} may be left on {recorded}: run `chaos clean "
                           "--backend-url` with that server's URL to remove it")
        backend = cls(url, run_dir.name)
        backend.marker = marker
        try:
            found = backend.namespace_marker()
            if found is None:
                return True, ""  # never made, or already removed
            if found != marker:
                return False, f"{where} is not touched: it holds no marker object with the run's marker {marker}"
            backend.drop_namespace()
        except HarnessError as exc:
            return False, str(exc)
        return True, f"removed {where}"

    def _no_control(self, fault: str) -> ConfigError:
        return ConfigError(
            f"The {self.name} {fault} fault needs control of the server process, but the backend is the external "
            f"server {mask_password(self.url)}, which the suite does not own. Run the scenario with the local "
            "provider (drop --backend external), or pick a scenario without server faults.")
