"""What the PostgreSQL providers share, so the run, the nemesis and targets never care which one runs."""

from __future__ import annotations

from typing import ClassVar

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from chaos.backends.base import Backend, Endpoint


class PostgresBackend(Backend):
    """A PostgreSQL server; `dsn` is the control's own connection settings (database, user, schema)."""

    kind: ClassVar[str] = "postgres"
    dsn: str

    @property
    def endpoint(self) -> Endpoint:
        """The server's address as its dsn gives it (host may be a socket directory; port defaults to 5432)."""
        params = conninfo_to_dict(self.dsn)
        host = str(params.get("host") or params.get("hostaddr") or "localhost").split(",")[0]
        return self.endpoint_at(host, int(str(params.get("port") or 5432).split(",")[0]))

    def endpoint_at(self, host: str, port: int) -> Endpoint:
        return Endpoint(host, port, make_conninfo(self.dsn, host=host, hostaddr="", port=str(port)))
