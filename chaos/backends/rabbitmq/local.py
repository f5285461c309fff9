"""The local RabbitMQ provider: a private node in the run dir. Every setting that could reach another
node on the machine is its own: node name, AMQP, distribution and epmd ports, data directory, cookie
(HOME), config files (the machine's rabbitmq-env.conf is not read). The node's epmd carries the server's
marker, so stopping the node stops it too."""

from __future__ import annotations

import shutil
import signal
import socket
import urllib.parse
from pathlib import Path
from typing import Any, ClassVar

import pika
import pika.exceptions

from chaos.backends.local_server import HOST, LocalServer
from chaos.backends.rabbitmq import CONSUMER_TIMEOUT_MS, MANAGEMENT
from chaos.errors import ConfigError

SERVER_SCRIPT = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # as the current user (/usr/sbin's wrapper switches)
USER = PASSWORD = "chaos"
# The channel's tick is when RabbitMQ looks for deliveries past consumer_timeout (60 s by default);
# RabbitMQ's own consumer-timeout tests shorten it the same way.
TICK_MS = 200
# For an observer (chaos.backends.rabbitmq.observer): the firehose on the node's vhost from boot, after every
# restart too (the application setting `rabbitmqctl trace_on` changes, which a restart would forget), and
# the event exchange, whose connection.created events name each connection. Bound to nothing, both publish
# to no queue.
TRACE_VHOSTS = '{trace_vhosts, [<<"/">>]}'


def server_script() -> str:
    found = SERVER_SCRIPT if Path(SERVER_SCRIPT).is_file() else shutil.which("rabbitmq-server")
    if found is None:
        raise ConfigError("The local RabbitMQ provider starts its own node with `rabbitmq-server`, which is not "
                          "installed. Install it (Debian: apt-get install rabbitmq-server, or run ci/setup.sh), or "
                          "point the run at a broker of yours with --backend-url.")
    return found


def amqp_url(host: str, port: int, vhost: str, user: str = USER, password: str = PASSWORD) -> str:
    quote = urllib.parse.quote
    return f"amqp://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{port}/{quote(vhost, safe='')}"


def answers(url: str) -> bool:
    """Whether the node there takes an AMQP connection (it boots for seconds before it does)."""
    params = pika.URLParameters(url)
    params.connection_attempts, params.socket_timeout, params.blocked_connection_timeout = 1, 2, 2
    try:
        pika.BlockingConnection(params).close()
    except (pika.exceptions.AMQPError, OSError):
        return False
    return True


class LocalRabbitMQ(LocalServer):
    kind: ClassVar[str] = "rabbitmq"
    name: ClassVar[str] = "RabbitMQ"
    ready_timeout_s: ClassVar[float] = 60.0
    version_flag: ClassVar[str | None] = None  # rabbitmq-server would start a node
    close_signal: ClassVar[signal.Signals] = signal.SIGKILL  # a clean shutdown takes seconds, for data deleted next

    @staticmethod
    def namespace_for(run_id: str) -> str:
        return "/"  # the node is the run's own: its default vhost

    def port_names(self) -> tuple[str, ...]:
        return ("amqp", "dist", "epmd", *(("management",) if self.management else ()))

    @property
    def management(self) -> bool:
        """The management API (for a node shared by many runs as their external broker, one vhost each)."""
        return bool(self.option(MANAGEMENT) == "on")

    @property
    def consumer_timeout_ms(self) -> int | None:
        value = self.option(CONSUMER_TIMEOUT_MS)
        return None if value == "default" else int(value)

    def argv(self) -> list[str]:
        self._write_config()
        return [server_script()]

    def companions(self) -> list[list[str]]:
        """The node's own epmd on its own port, a child of ours: the node would otherwise fork a daemon that
        outlives a runner killed outright."""
        epmd = shutil.which("epmd")
        if epmd is None:
            raise ConfigError("The local RabbitMQ provider needs Erlang's `epmd`, which is not on PATH. Install "
                              "rabbitmq-server (Debian: apt-get install rabbitmq-server, or run ci/setup.sh).")
        return [[epmd, "-port", str(self.ports["epmd"]), "-address", HOST]]

    def companions_ready(self) -> bool:
        try:
            socket.create_connection((HOST, self.ports["epmd"]), timeout=1).close()
        except OSError:
            return False
        return True

    def server_env(self) -> dict[str, str]:
        base = self.data_dir
        node = f"{self.marker}@localhost"
        return {
            "HOME": str(base),  # its .erlang.cookie
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
            "RABBITMQ_NODENAME": node, "RABBITMQ_NODE_IP_ADDRESS": HOST,
            "RABBITMQ_NODE_PORT": str(self.ports["amqp"]), "RABBITMQ_DIST_PORT": str(self.ports["dist"]),
            "ERL_EPMD_PORT": str(self.ports["epmd"]), "ERL_EPMD_ADDRESS": HOST,
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"), "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(base / "feature_flags"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(base / "plugins-expand"),
            "RABBITMQ_PID_FILE": str(base / "rabbitmq.pid"),
            # The script then execs the VM instead of running it as a child behind signal traps: the VM is
            # the process we started, so it dies with a runner killed outright (no systemd listens there).
            "NOTIFY_SOCKET": str(base / "no-systemd"),
        }

    def _write_config(self) -> None:
        base = self.data_dir
        for folder in ("mnesia", "log"):
            (base / folder).mkdir(exist_ok=True)
        (base / "rabbitmq-env.conf").write_text("")
        plugins = ["rabbitmq_event_exchange", *(["rabbitmq_management"] if self.management else [])]
        (base / "enabled_plugins").write_text(f"[{','.join(plugins)}].\n")
        conf = [f"default_user = {USER}", f"default_pass = {PASSWORD}", "loopback_users = none",
                "log.console = true", "log.file = false"]
        if self.management:
            conf += [f"management.tcp.port = {self.ports['management']}", f"management.tcp.ip = {HOST}"]
        (base / "rabbitmq.conf").write_text("\n".join(conf) + "\n")
        rabbit = [f"{{channel_tick_interval, {TICK_MS}}}", TRACE_VHOSTS]
        if self.consumer_timeout_ms is not None:
            rabbit.append(f"{{consumer_timeout, {self.consumer_timeout_ms}}}")
        (base / "advanced.config").write_text(f"[{{rabbit, [{', '.join(rabbit)}]}}].\n")

    def ready(self) -> bool:
        return answers(self.url_at(HOST, self.ports["amqp"]))

    def url_at(self, host: str, port: int) -> str:
        return amqp_url(host, port, self.namespace)

    @property
    def api_url(self) -> str | None:
        return f"http://{HOST}:{self.ports['management']}/" if self.management else None

    def describe(self) -> dict[str, Any]:
        return {"node": f"{self.marker}@localhost", "consumer_timeout_ms": self.consumer_timeout_ms,
                "management": self.management}

