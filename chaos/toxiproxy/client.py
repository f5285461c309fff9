"""The suite's control of one Toxiproxy server, through toxiproxy-python.

toxiproxy-python keeps the server's host and port as class attributes of its APIConsumer (global state),
so every call here sets them, under one lock, for the server this control speaks to: two controls (two
runs in one process, or a test beside a run) never send a request to each other's server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.proxy import Proxy

from chaos.errors import ConfigError, HarnessError

_GLOBAL = threading.Lock()  # guards APIConsumer.host/port for the length of one call
ASK_TIMEOUT_S = 5.0  # a server that accepts and never answers (a user's, a stopped one) must not hang us
T = TypeVar("T")


class ToxiproxyControl:
    """Proxies and toxics on the server at `url` (http://host:port)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        if not parts.hostname or not parts.port:
            raise ConfigError(f"Toxiproxy URL {url!r}: expected http://host:port, e.g. http://127.0.0.1:8474.")
        self.url = f"http://{parts.hostname}:{parts.port}"
        self.host, self.port = parts.hostname, parts.port
        self._client = Toxiproxy()

    @contextmanager
    def _bound(self) -> Iterator[None]:
        with _GLOBAL:
            saved = APIConsumer.host, APIConsumer.port
            APIConsumer.host, APIConsumer.port = self.host, self.port
            try:
                yield
            finally:
                APIConsumer.host, APIConsumer.port = saved

    def _call(self, what: str, action: Callable[[], T]) -> T:
        with self._bound():
            try:
                return action()
            except (ProxyExists, NotFound, InvalidToxic) as exc:
                raise HarnessError(f"Toxiproxy at {self.url} refused to {what}: {_text(exc)}") from exc
            except OSError as exc:  # requests' ConnectionError is an OSError
                raise HarnessError(f"Toxiproxy at {self.url} is unreachable ({exc}) while trying to {what}") from exc

    def version(self) -> str:
        """The server's version; a HarnessError while nothing answers (toxiproxy-python's own version()
        says None then, which made a server still starting look ready)."""
        response = self._call("report its version", lambda: APIConsumer.get("/version", timeout=ASK_TIMEOUT_S))
        return str(response.text).strip()

    def delete_if_present(self, name: str) -> bool:
        """Delete the proxy `name` if the server has it (whatever its toxics or state); False if it had none."""
        try:
            self._call(f"delete proxy {name}",
                       lambda: APIConsumer.delete(f"/proxies/{quote(name, safe='')}", timeout=ASK_TIMEOUT_S))
        except HarnessError as exc:
            if isinstance(exc.__cause__, NotFound):
                return False
            raise
        return True

    def create(self, name: str, upstream: str, listen: str = "127.0.0.1:0") -> str:
        """A proxy in front of `upstream`; its bound listen address ("host:port")."""
        proxy: Proxy = self._call(f"create proxy {name}", lambda: self._client.create(upstream=upstream, name=name,
                                                                                       listen=listen))
        return str(proxy.listen)

    def _proxy(self, name: str) -> Proxy:
        proxy = self._client.get_proxy(name)
        if proxy is None:
            raise NotFound(f"no proxy named {name}".encode())
        return proxy

    def enabled(self, name: str, enabled: bool) -> None:
        self._call(f"{'enable' if enabled else 'disable'} proxy {name}",
                   lambda: self._proxy(name).enable() if enabled else self._proxy(name).disable())

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str, attributes: dict[str, Any],
                  toxicity: float = 1.0) -> None:
        self._call(f"add toxic {name} to {proxy}", lambda: self._proxy(proxy).add_toxic(
            name=name, type=kind, stream=stream, toxicity=toxicity, attributes=attributes))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call(f"remove toxic {name} from {proxy}", lambda: self._proxy(proxy).destroy_toxic(name))

    def delete(self, name: str) -> None:
        self._call(f"delete proxy {name}", lambda: self._proxy(name).destroy())


def _text(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("utf-8", "replace").strip() if isinstance(arg, bytes) else str(arg)
