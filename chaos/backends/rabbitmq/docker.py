"""The docker RabbitMQ provider: the host's own RabbitMQ and Erlang in an image built here, started
through testcontainers-python's RabbitMQ module, with the node's data (mnesia, cookie) in the container's
volume and the same server settings as the local provider's: its user, channel tick, firehose on the
default vhost, event exchange, and the target's [server] `consumer_timeout_ms`.

The node is the run's own, so the run uses its default vhost, as on the local provider: nothing to create.
Its name is fixed (rabbit@localhost, which resolves in any container, on its network or cut off it), so a
restart of the container finds its mnesia directory in the volume again.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import TYPE_CHECKING, Any, ClassVar

import pika
import pika.exceptions

from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.rabbitmq import CONSUMER_TIMEOUT_MS
from chaos.backends.rabbitmq.local import PASSWORD, TICK_MS, TRACE_VHOSTS, USER, amqp_url, server_script
from chaos.containers.images import ImageSpec, passwd, shell
from chaos.errors import ConfigError

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 5672
NODE = "rabbit@localhost"
ERLANG = "/usr/lib/erlang"
RABBITMQ = "/usr/lib/rabbitmq"
# What the server scripts (rabbitmq-server, rabbitmq-env, rabbitmq-defaults), Erlang's erl and the
# entrypoint run besides the shell's builtins; df is the node's free disk space monitor.
TOOLS = ("basename", "dirname", "readlink", "date", "expr", "mkdir", "df")
ENTRYPOINT = "/usr/local/bin/queue-chaos-rabbitmq"
# Writes the run's config into the volume on every start (the options travel in the container's env),
# then execs the server script, which execs the VM (NOTIFY_SOCKET set): the VM is the container's main
# process, so a stop's SIGTERM reaches it and shuts the node down cleanly, and a kill is a crash.
ENTRYPOINT_SCRIPT = """#!/bin/sh
set -e
mkdir -p /data/mnesia /data/log
printf '%s\\n' "$CHAOS_RABBITMQ_CONF" > /data/rabbitmq.conf
printf '%s\\n' "$CHAOS_RABBITMQ_ADVANCED" > /data/advanced.config
printf '%s\\n' "$CHAOS_RABBITMQ_PLUGINS" > /data/enabled_plugins
exec {server} "$@"
"""
SERVER_ENV = {
    "HOME": "/data",  # its .erlang.cookie
    "RABBITMQ_NODENAME": NODE,
    "RABBITMQ_CONF_ENV_FILE": "/data/rabbitmq-env.conf",  # never written: the host's is not read either
    "RABBITMQ_MNESIA_BASE": "/data/mnesia", "RABBITMQ_LOG_BASE": "/data/log",
    "RABBITMQ_CONFIG_FILE": "/data/rabbitmq", "RABBITMQ_ADVANCED_CONFIG_FILE": "/data/advanced.config",
    "RABBITMQ_ENABLED_PLUGINS_FILE": "/data/enabled_plugins", "RABBITMQ_FEATURE_FLAGS_FILE": "/data/feature_flags",
    "RABBITMQ_PLUGINS_EXPAND_DIR": "/data/plugins-expand", "RABBITMQ_PID_FILE": "/data/rabbitmq.pid",
    "NOTIFY_SOCKET": "/data/no-systemd",
    "PATH": f"{ERLANG}/bin:/usr/bin",
}
# localhost from /etc/hosts first: the network's DNS would be asked for it otherwise, and is gone once the
# container is cut off its network.
NSSWITCH = "hosts: files dns\n"


def _tools() -> tuple[str, ...]:
    found = {tool: shutil.which(tool) for tool in TOOLS}
    missing = [tool for tool, path in found.items() if path is None]
    if missing:
        raise ConfigError(f"The docker RabbitMQ provider's image takes the host's {', '.join(missing)} for the "
                          "server's scripts, which are not on PATH. Install them (Debian: apt-get install coreutils) "
                          "or put their folder on PATH.")
    return tuple(str(path) for path in found.values())


def _erlang() -> str:
    if not glob.glob(f"{ERLANG}/erts-*/bin/beam.smp"):
        raise ConfigError(f"The docker RabbitMQ provider builds its image from the host's Erlang runtime in {ERLANG}, "
                          "which is not installed. Install it (Debian: apt-get install rabbitmq-server, which brings "
                          "erlang-base, or run ci/setup.sh).")
    return ERLANG


class DockerRabbitMQ(DockerServer):
    kind: ClassVar[str] = "rabbitmq"
    name: ClassVar[str] = "RabbitMQ"
    container_port: ClassVar[int] = PORT

    @staticmethod
    def namespace_for(run_id: str) -> str:
        return "/"  # the node is the run's own: its default vhost

    @property
    def consumer_timeout_ms(self) -> int | None:
        value = self.option(CONSUMER_TIMEOUT_MS)
        return None if value == "default" else int(value)

    def image(self) -> ImageSpec:
        server = server_script()
        home = os.path.realpath(os.path.join(os.path.dirname(os.path.realpath(server)), ".."))
        return ImageSpec(
            "rabbitmq", (RABBITMQ, home, _erlang(), *shell(), *_tools()),
            files={**passwd(), "/etc/nsswitch.conf": NSSWITCH, ENTRYPOINT: ENTRYPOINT_SCRIPT.format(server=server)},
            executables=(ENTRYPOINT,),
            changes=(f'ENTRYPOINT ["{ENTRYPOINT}"]', *(f"ENV {key}={value}" for key, value in SERVER_ENV.items())))

    def wrapper(self, image: str) -> DockerContainer:
        from testcontainers.community.rabbitmq import RabbitMqContainer

        container = RabbitMqContainer(image, port=PORT, username=USER, password=PASSWORD, vhost=self.namespace)
        for key, value in self.config().items():
            container.with_env(key, value)
        return container

    def config(self) -> dict[str, str]:
        """The node's config files, as the local provider writes them, for the entrypoint to write."""
        conf = [f"default_user = {USER}", f"default_pass = {PASSWORD}", "loopback_users = none",
                "log.console = true", "log.file = false", f"listeners.tcp.default = 0.0.0.0:{PORT}"]
        rabbit = [f"{{channel_tick_interval, {TICK_MS}}}", TRACE_VHOSTS]
        if self.consumer_timeout_ms is not None:
            rabbit.append(f"{{consumer_timeout, {self.consumer_timeout_ms}}}")
        return {"CHAOS_RABBITMQ_CONF": "\n".join(conf),
                "CHAOS_RABBITMQ_ADVANCED": f"[{{rabbit, [{', '.join(rabbit)}]}}].",
                "CHAOS_RABBITMQ_PLUGINS": "[rabbitmq_event_exchange]."}

    def ready(self) -> bool:
        params = pika.URLParameters(self.url_at(HOST, self.port))
        params.connection_attempts, params.socket_timeout, params.blocked_connection_timeout = 1, 2, 2
        try:
            pika.BlockingConnection(params).close()
        except (pika.exceptions.AMQPError, OSError):
            return False
        return True

    def url_at(self, host: str, port: int) -> str:
        return amqp_url(host, port, self.namespace)

    def describe(self) -> dict[str, Any]:
        return {"node": NODE, "consumer_timeout_ms": self.consumer_timeout_ms}
