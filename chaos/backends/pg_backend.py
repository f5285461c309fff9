"""What every PostgreSQL provider offers, so the run, the nemesis and targets never care which one runs."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Literal, Protocol, Self

EventSink = Callable[[str, dict[str, object]], None]
RestartMode = Literal["immediate", "fast"]
# Names the external provider's server; messages about a local server that cannot run point at it.
ENV_URL = "CHAOS_POSTGRES_URL"


class PostgresBackend(Protocol):
    """What scenarios need from any provider: a DSN to hand to workers, and the server faults.

    The providers subclass it to share the with-block: start on entry, close on exit.
    """

    dsn: str

    def start(self) -> Self:
        """Make the server usable and set dsn; a second call does nothing."""

    def restart(self, mode: RestartMode = "immediate") -> None:
        """Stop the server (immediate = crash-like, fast = clean) and start it again on the same data."""

    def kill(self) -> None:
        """SIGKILL the whole server, leaving it down until restart()."""

    def close(self) -> None:
        """Stop and clean up everything the backend created; safe to call twice."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
