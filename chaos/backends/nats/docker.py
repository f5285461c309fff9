"""The docker NATS provider: the host's own nats-server with JetStream in an image built here, started
through testcontainers-python's generic container, its store in the container's volume (a file stream
survives a restart of the container, a memory stream does not)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.local_server import require_binary
from chaos.backends.nats.local import healthy
from chaos.containers.images import ImageSpec, passwd
from chaos.worker.nats import stream_for

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT, MONITOR = 4222, 8222


class DockerNats(DockerServer):
    kind: ClassVar[str] = "nats"
    name: ClassVar[str] = "NATS"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT, "monitor": MONITOR}

    namespace_for = staticmethod(stream_for)

    def image(self) -> ImageSpec:
        return ImageSpec("nats", (require_binary("nats-server", "nats-server", "NATS"),), files=passwd())

    def wrapper(self, image: str) -> DockerContainer:
        from testcontainers.core.container import DockerContainer

        return DockerContainer(image).with_command(
            ["nats-server", "-js", "-sd", self.data_path, "-a", "0.0.0.0", "-p", str(PORT), "-m", str(MONITOR),
             "-n", self.container_name])

    def ready(self) -> bool:
        return healthy(HOST, self.ports["monitor"])

    def url_at(self, host: str, port: int) -> str:
        return f"nats://{host}:{port}"

    def describe(self) -> dict[str, Any]:
        return {"namespace": self.namespace}
