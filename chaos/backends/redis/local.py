"""The local Redis provider: a private `redis-server` in the run dir, with the persistence the target's
[server] `persistence` asks for, so a restart keeps exactly what that setting keeps."""

from __future__ import annotations

from typing import Any, ClassVar

import redis

from chaos.backends.local_server import HOST, LocalServer, require_binary
from chaos.backends.redis import PERSISTENCE

PERSISTENCE_ARGV = {  # the setting's values, as redis-server options
    "none": ["--appendonly", "no"],
    "aof-everysec": ["--appendonly", "yes", "--appendfsync", "everysec"],
    "aof-always": ["--appendonly", "yes", "--appendfsync", "always"],
}

# An observer attaches as a replica (chaos.backends.redis.observer): its snapshot goes straight down the
# socket, at once, so no RDB file appears in the data dir for a restart to load, whatever `persistence` says.
REPLICA_ARGV = ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
# A title written over the process's environment would erase the marker (chaos.backends.local_server.MARKER)
# by which every process of the server, a forked child too, is found.
NO_TITLE_ARGV = ["--set-proc-title", "no"]


def namespace(run_id: str) -> str:
    """The run's key prefix: every key a target makes starts with it."""
    return f"chaos:{run_id}:"


def url_at(host: str, port: int) -> str:
    return f"redis://{host}:{port}/0"


def answers(url: str) -> bool:
    """Whether the server there answers PING (not while it still loads its append-only file)."""
    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        return bool(client.ping())
    except redis.RedisError:  # refused, or still LOADING its append-only file
        return False
    finally:
        client.close()


class LocalRedis(LocalServer):
    kind: ClassVar[str] = "redis"
    name: ClassVar[str] = "Redis"

    namespace_for = staticmethod(namespace)

    @property
    def persistence(self) -> str:
        return str(self.option(PERSISTENCE))

    def argv(self) -> list[str]:
        return [require_binary("redis-server", "redis-server", "Redis"), "--port", str(self.port), "--bind", HOST,
                "--dir", str(self.data_dir), "--save", "", "--daemonize", "no", "--protected-mode", "no",
                "--logfile", "", *NO_TITLE_ARGV, *PERSISTENCE_ARGV[self.persistence], *REPLICA_ARGV]

    def ready(self) -> bool:
        return answers(url_at(HOST, self.port))

    def url_at(self, host: str, port: int) -> str:
        return url_at(host, port)

    def describe(self) -> dict[str, Any]:
        return {"persistence": self.persistence, "namespace": self.namespace}
