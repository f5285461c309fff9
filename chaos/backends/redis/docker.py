"""The docker Redis provider: the host's own redis-server in an image built here, started through
testcontainers-python's Redis module, with the persistence the target's [server] `persistence` asks for
and its append-only file in the container's volume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.local_server import require_binary
from chaos.backends.redis import PERSISTENCE
from chaos.backends.redis.local import PERSISTENCE_ARGV, REPLICA_ARGV, answers, namespace, url_at
from chaos.containers.images import ImageSpec, passwd

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 6379


class DockerRedis(DockerServer):
    kind: ClassVar[str] = "redis"
    name: ClassVar[str] = "Redis"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT}
    python_modules: ClassVar[tuple[str, ...]] = (*DockerServer.python_modules, "testcontainers.community.redis")

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
        return answers(url_at(HOST, self.port))

    def url_at(self, host: str, port: int) -> str:
        return url_at(host, port)

    def describe(self) -> dict[str, Any]:
        return {"persistence": self.persistence, "namespace": self.namespace}

