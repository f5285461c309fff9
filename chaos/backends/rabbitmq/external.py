"""The external RabbitMQ provider: your broker (--backend-url or CHAOS_RABBITMQ_URL, an amqp:// URL); each
run gets a fresh vhost, made and deleted through the broker's management API (CHAOS_RABBITMQ_API_URL, by
default http://<broker host>:15672/, with the AMQP URL's user and password). The vhost's description is
its marker object: the run's marker, set by the request that creates it."""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import ClassVar

from chaos.backends.external import ExternalServer, mask_password
from chaos.backends.rabbitmq import ENV_API_URL, ENV_URL
from chaos.backends.rabbitmq.local import amqp_url
from chaos.errors import ConfigError, HarnessError

API_TIMEOUT_S = 10.0


def vhost_for(run_id: str) -> str:
    return "chaos-" + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)


class ExternalRabbitMQ(ExternalServer):
    kind: ClassVar[str] = "rabbitmq"
    name: ClassVar[str] = "RabbitMQ"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "amqp://guest:guest@127.0.0.1:5672/"
    schemes: ClassVar[tuple[str, ...]] = ("amqp",)

    namespace_for = staticmethod(vhost_for)

    @property
    def user(self) -> str:
        return urllib.parse.unquote(self.parts.username or "guest")

    @property
    def password(self) -> str:
        return urllib.parse.unquote(self.parts.password or "guest")

    @property
    def api_url(self) -> str:
        return os.environ.get(ENV_API_URL) or f"http://{self.parts.hostname}:15672/"

    def _api(self, method: str, path: str, body: dict[str, str] | None = None) -> bytes:
        url = urllib.parse.urljoin(self.api_url, "api/" + path)
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
        credentials = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        request.add_header("Authorization", f"Basic {credentials}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=API_TIMEOUT_S) as answer:
            return bytes(answer.read())

    def _vhost_path(self) -> str:
        return "vhosts/" + urllib.parse.quote(self.namespace, safe="")

    def create_namespace(self) -> None:
        """PUT the run's vhost (described by the run's marker) and the URL's user's full permissions on it."""
        try:
            self._api("PUT", self._vhost_path(), {"description": self.marker})
            self._api("PUT", f"permissions/{urllib.parse.quote(self.namespace, safe='')}/"
                             f"{urllib.parse.quote(self.user, safe='')}",
                      {"configure": ".*", "write": ".*", "read": ".*"})
        except (urllib.error.URLError, OSError) as exc:
            raise ConfigError(
                f"Expected the management API of the RabbitMQ broker {mask_password(self.url)} at {self.api_url} "
                f"(from {ENV_API_URL}, or port 15672 of the broker's host) to create the run's vhost "
                f"{self.namespace}, but got: {exc}. Enable the rabbitmq_management plugin, set "
                f"{ENV_API_URL}, or drop --backend external to let the suite start its own node.") from exc

    def namespace_marker(self) -> str | None:
        try:
            vhost = json.loads(self._api("GET", self._vhost_path()))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise HarnessError(f"could not look for the vhost {self.namespace} at {self.api_url}: {exc}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise HarnessError(f"could not look for the vhost {self.namespace} at {self.api_url}; delete it by hand "
                               f"if it is left: {exc}") from exc
        return str(vhost.get("description") or "") if isinstance(vhost, dict) else ""

    def drop_namespace(self) -> None:
        try:
            self._api("DELETE", self._vhost_path())
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise HarnessError(f"could not delete the vhost {self.namespace} at {self.api_url}: {exc}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise HarnessError(f"could not delete the vhost {self.namespace} at {self.api_url}; delete it by hand: "
                               f"{exc}") from exc

    def url_at(self, host: str, port: int) -> str:
        return amqp_url(host, port, self.namespace, self.user, self.password)
