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
import re
import shutil
from typing import TYPE_CHECKING, Any, ClassVar

from chaos.backends.docker_server import HOST, DockerServer
from chaos.backends.rabbitmq import CONSUMER_TIMEOUT_MS
from chaos.backends.rabbitmq.local import PASSWORD, TICK_MS, TRACE_VHOSTS, USER, amqp_url, answers, server_script
from chaos.containers.images import ImageSpec, passwd, shell
from chaos.errors import ConfigError

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

PORT = 5672
NODE = "rabbit@localhost"
ERLANG = "/usr/lib/erlang"
# What the server scripts (rabbitmq-server, rabbitmq-env, rabbitmq-defaults), Erlang's erl and the
# entrypoint run besides the shell's builtins; the node itself runs df (its free disk space monitor) and
# getconf (the memory page size).
TOOLS = ("basename", "dirname", "readlink", "date", "expr", "mkdir", "df", "getconf")
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
PLUGINS = ("rabbitmq_event_exchange",)  # the local provider's: connection.created names each connection
_APPLICATIONS = re.compile(r"\{\s*(?:included_)?applications\s*,\s*\[([^\]]*)\]")
# localhost from /etc/hosts first: the network's DNS would be asked for it otherwise, and is gone once the
# container is cut off its network.
NSSWITCH = "hosts: files dns\n"


def _tools() -> tuple[str, ...]:
    found = {tool: shutil.which(tool) for tool in TOOLS}
    missing = [tool for tool, path in found.items() if path is None]
    if missing:
        raise ConfigError(f"The docker RabbitMQ provider's image takes the host's {', '.join(missing)} for the "
                          "server and its scripts, which are not on PATH. Install them (Debian: apt-get install "
                          "coreutils libc-bin) or put their folder on PATH.")
    return tuple(str(path) for path in found.values())


def _server_folders(server: str) -> tuple[str, ...]:
    """The server's scripts, the plugins the node starts, then the folder of links to its scripts (the
    command-line tools' escripts and the plugins no run enables stay out: a third of the size)."""
    home = os.path.dirname(os.path.dirname(os.path.realpath(server)))
    return (os.path.join(home, "sbin"), *_plugins(os.path.join(home, "plugins")), os.path.dirname(server))


def _plugins(folder: str) -> list[str]:
    """The folders of rabbit and the enabled plugins, and of every application they need, as their .app
    files list them (the applications the node starts; the rest of what it loads is Erlang's own)."""
    found = {os.path.basename(path).rpartition("-")[0]: path for path in glob.glob(os.path.join(folder, "*-*"))
             if os.path.isdir(path)}
    wanted, todo = set(), ["rabbit", *PLUGINS]
    while todo:
        app = todo.pop()
        if app in wanted or app not in found:
            continue  # an application of Erlang's own (kernel, mnesia...), or already listed
        wanted.add(app)
        with open(os.path.join(found[app], "ebin", f"{app}.app"), encoding="utf-8") as file:
            listed = _APPLICATIONS.findall(file.read())
        todo += [name for names in listed for name in re.findall(r"\w+", names)]
    if "rabbit" not in wanted:
        raise ConfigError(f"The docker RabbitMQ provider builds its image from the host's RabbitMQ, whose plugins "
                          f"folder {folder} has no rabbit application. Reinstall it (Debian: apt-get install "
                          "--reinstall rabbitmq-server, or run ci/setup.sh).")
    return sorted(found[app] for app in wanted)


def _erlang() -> tuple[str, ...]:
    """The Erlang runtime the server scripts' `erl` runs: the emulator first, then the rest of its root."""
    emulators = sorted(os.path.dirname(os.path.dirname(path)) for path in glob.glob(f"{ERLANG}/erts-*/bin/beam.smp"))
    if not emulators:
        raise ConfigError(f"The docker RabbitMQ provider builds its image from the host's Erlang runtime in {ERLANG}, "
                          "which is not installed. Install it (Debian: apt-get install rabbitmq-server, which brings "
                          "erlang-base, or run ci/setup.sh).")
    return (*emulators, f"{ERLANG}/bin", f"{ERLANG}/lib", f"{ERLANG}/releases")


class DockerRabbitMQ(DockerServer):
    kind: ClassVar[str] = "rabbitmq"
    name: ClassVar[str] = "RabbitMQ"
    container_ports: ClassVar[dict[str, int]] = {"client": PORT}
    python_modules: ClassVar[tuple[str, ...]] = (*DockerServer.python_modules, "testcontainers.community.rabbitmq")

    @staticmethod
    def namespace_for(run_id: str) -> str:
        return "/"  # the node is the run's own: its default vhost

    @property
    def consumer_timeout_ms(self) -> int | None:
        value = self.option(CONSUMER_TIMEOUT_MS)
        return None if value == "default" else int(value)

    def image(self) -> ImageSpec:
        server = server_script()
        return ImageSpec(
            "rabbitmq", (*_server_folders(server), *_erlang(), *shell(), *_tools()),
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
                "CHAOS_RABBITMQ_PLUGINS": f"[{','.join(PLUGINS)}]."}

    def ready(self) -> bool:
        return answers(self.url_at(HOST, self.port))

    def url_at(self, host: str, port: int) -> str:
        return amqp_url(host, port, self.namespace)

    def describe(self) -> dict[str, Any]:
        return {"node": NODE, "consumer_timeout_ms": self.consumer_timeout_ms}
