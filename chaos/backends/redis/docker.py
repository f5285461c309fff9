"""The docker Redis provider: the host's own redis-server in an image built here, started through
testcontainers-python's Redis module, with the persistence the target's [server] `persistence` asks for
and its append-only file in the container's volume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import redis

from chaos.backends.docker_server import DockerServer
from chaos.backends.local_server import require_binary
from chaos.backends.redis import PERSISTENCE
from chaos.backends.redis.local import PERSISTENCE_ARGV, REPLICA_ARGV, namespace
from chaos.containers.images import ImageSpec, passwd

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 6379


class DockerRedis(DockerServer):
    kind: ClassVar[str] = "redis"
    name: ClassVar[str] = "Redis"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT}

    namespace_for = staticmethod(namespace)

    @property
    def persistence(self) -> str:
        return str(self.option(PERSISTENCE))

    def image(self) -> ImageSpec:
        return ImageSpec("redis", (require_binary("redis-server", "redis-server", "Redis"),), files=passwd())

    def wrapper(self, image: str) -> DockerContainer:
        from testcontainers.community.redis import RedisContainer

        container = RedisContainer(image, port=PORT)
        container.with_command(["redis-server", "--port", str(PORT), "--bind", "0.0.0.0", "--dir", self.data_path,
                                "--save", "", "--protected-mode", "no", *PERSISTENCE_ARGV[self.persistence],
                                *REPLICA_ARGV])
        return container

    def ready(self) -> bool:
        client = redis.Redis.from_url(self.url_at(HOST_FOR_READY, self.port), socket_timeout=2,
                                      socket_connect_timeout=2)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def url_at(self, host: str, port: int) -> str:
        return f"redis://{host}:{port}/0"

    def describe(self) -> dict[str, Any]:
        return {"persistence": self.persistence, "namespace": self.namespace}


HOST_FOR_READY = "127.0.0.1"
