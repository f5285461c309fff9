"""The docker beanstalkd provider: the host's own beanstalkd in an image built here, started through
testcontainers-python's generic container, its binlog (when the target's [server] `binlog` is on) in
the container's volume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from chaos.backends.beanstalkd import BINLOG
from chaos.backends.beanstalkd.local import answers
from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.local_server import require_binary
from chaos.containers.images import ImageSpec, passwd
from chaos.worker.beanstalkd import tube_for

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 11300


class DockerBeanstalkd(DockerServer):
    kind: ClassVar[str] = "beanstalkd"
    name: ClassVar[str] = "beanstalkd"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT}

    namespace_for = staticmethod(tube_for)

    @property
    def binlog(self) -> bool:
        return bool(self.option(BINLOG) == "on")

    def image(self) -> ImageSpec:
        return ImageSpec("beanstalkd", (require_binary("beanstalkd", "beanstalkd", "beanstalkd"),), files=passwd())

    def wrapper(self, image: str) -> DockerContainer:
        from testcontainers.core.container import DockerContainer

        return DockerContainer(image).with_command(
            ["beanstalkd", "-l", "0.0.0.0", "-p", str(PORT), *(["-b", self.data_path] if self.binlog else [])])

    def ready(self) -> bool:
        return answers(HOST, self.port)

    def url_at(self, host: str, port: int) -> str:
        return f"beanstalk://{host}:{port}"

    def describe(self) -> dict[str, Any]:
        return {"binlog": self.binlog, "namespace": self.namespace}
