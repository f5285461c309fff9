"""The external Redis provider: your server (--backend-url or CHAOS_REDIS_URL); the run's keys live under
its own prefix, deleted at the run's end. Its first key is its marker object: `<prefix>queue-chaos-owner`,
holding the run's marker."""

from __future__ import annotations

from typing import ClassVar

import redis

from chaos.backends.external import ExternalServer, mask_password
from chaos.backends.redis import ENV_URL
from chaos.backends.redis.local import namespace
from chaos.errors import ConfigError, HarnessError
from chaos.worker.redis import Keys

MARKER_KEY = "queue-chaos-owner"  # under the run's prefix


class ExternalRedis(ExternalServer):
    kind: ClassVar[str] = "redis"
    name: ClassVar[str] = "Redis"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "redis://127.0.0.1:6379/0"
    schemes: ClassVar[tuple[str, ...]] = ("redis", "rediss")

    namespace_for = staticmethod(namespace)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    def create_namespace(self) -> None:
        """A prefix needs no creation: check the server answers, and set the marker key."""
        try:
            with self.client() as client:
                client.set(self.namespace + MARKER_KEY, self.marker)
        except redis.RedisError as exc:
            raise ConfigError(f"Expected a reachable Redis server at {mask_password(self.url)} (from --backend-url "
                              f"or {ENV_URL}), but got: {exc}. Check the address and password, or drop "
                              "--backend external to let the suite start its own server.") from exc

    def namespace_marker(self) -> str | None:
        try:
            with self.client() as client:
                found = client.get(self.namespace + MARKER_KEY)
                if found is None:
                    return None if next(client.scan_iter(match=Keys(self.namespace).every_key(), count=1000),
                                        None) is None else ""
        except redis.RedisError as exc:
            raise HarnessError(f"could not look for the keys {self.namespace}* on {mask_password(self.url)}; "
                               f"delete them by hand if they are left: {exc}") from exc
        return found.decode(errors="replace") if isinstance(found, bytes) else str(found)

    def drop_namespace(self) -> None:
        try:
            with self.client() as client:
                keys = list(client.scan_iter(match=Keys(self.namespace).every_key(), count=1000))
                for start in range(0, len(keys), 500):
                    client.delete(*keys[start:start + 500])
        except redis.RedisError as exc:
            raise HarnessError(f"could not delete the keys {self.namespace}* on {mask_password(self.url)}; delete "
                               f"them by hand: {exc}") from exc

    def url_at(self, host: str, port: int) -> str:
        return self.parts._replace(netloc=self.netloc_at(host, port)).geturl()
