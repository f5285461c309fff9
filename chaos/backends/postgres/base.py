"""What the PostgreSQL providers share, so the run, the nemesis and targets never care which one runs."""

from __future__ import annotations

from typing import ClassVar, Literal

from chaos.backends.base import Backend
from chaos.events import ENV_POSTGRES_URL

RestartMode = Literal["immediate", "fast"]
# Names the external provider's server; messages about a local server that cannot run point at it.
ENV_URL = ENV_POSTGRES_URL


class PostgresBackend(Backend):
    """A PostgreSQL server; `dsn` is the control's own connection settings (database, user, schema)."""

    kind: ClassVar[str] = "postgres"
    dsn: str
