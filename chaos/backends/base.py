"""What every backend provider offers, so the run, the environment and the nemesis never care which
server runs or who owns it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self

from chaos.events import Record

EventSink = Callable[[Record], object]  # the ledger's append
# Capabilities: what a provider lets faults do to its server. A fault kind declares the ones it needs.
RESTART = "restart"
KILL = "kill"
CONTAINER = "container"  # the server runs in a container: it can be paused and cut off its network


@dataclass(frozen=True)
class Endpoint:
    """Where a client reaches the backend: an address, and the complete connection string a client at
    that address uses (a URL, or for PostgreSQL a libpq conninfo), with database, user and the like."""

    host: str
    port: int
    url: str


@dataclass(frozen=True)
class BackendSettings:
    """What a run hands a provider: where its files go, the user's URL (external), the ledger, and its
    server settings (`options`: the target's [server] values for the options the provider declares, such as
    Redis's `persistence`, beanstalkd's `binlog`, RabbitMQ's `consumer_timeout_ms`)."""

    data_root: Path
    run_id: str
    url: str | None = None
    on_event: EventSink | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    """A started server (or the run's share of one). Providers subclass it for the with-block: start on
    entry, close on exit."""

    kind: ClassVar[str]
    provider: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    # The Python modules it imports beyond the suite's own dependencies, and the extra of queue-chaos that
    # installs them: a run refuses to start without them, and `chaos doctor` says which are missing.
    python_modules: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""
    namespace: str = ""  # the run's own part of the server, where it has one: a key prefix, a tube, a vhost
    marker: str = ""  # the run's random marker, which what it makes carries (chaos.ownership), where it has one

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        """Build the backend from the run's settings and start it."""
        raise NotImplementedError

    @classmethod
    def preflight(cls, url: str | None) -> None:
        """Refuse (ConfigError), before a run starts anything, what keeps this provider from having a server
        here at all (an external server's missing URL, a Docker engine that does not answer); `url` is
        --backend-url. A suite asks it of every cell before its first run."""
        return None

    @property
    def endpoint(self) -> Endpoint:
        """Where the server listens (the run's workers get their own endpoints from the environment)."""
        raise NotImplementedError

    def endpoint_at(self, host: str, port: int) -> Endpoint:
        """The same server reached at another address (a proxy in front of it)."""
        raise NotImplementedError

    def start(self) -> Self:
        """Make the server usable; a second call does nothing."""
        raise NotImplementedError

    def restart(self, mode: str = "immediate") -> None:
        """Stop the server and start it again on the same data and address (capability RESTART)."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL the whole server, leaving it down until restart() (capability KILL)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop and clean up everything the backend created; safe to call twice."""
        raise NotImplementedError

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """Remove what a run whose runner was killed left of this backend, by what its `backend.start`
        event recorded (`started`), and nothing else. (done, what was removed or what is left and why):
        not done when something is left that a later clean may remove."""
        return True, ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
