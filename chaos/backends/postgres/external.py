"""The external PostgreSQL provider: your server (--backend-url or CHAOS_POSTGRES_URL, a URL or a conninfo
string); the run's tables live in a schema of their own, dropped at the run's end. The schema's comment
is its marker object: the run's marker, set in the transaction that creates it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from chaos.backends.external import ExternalServer, mask_password
from chaos.backends.postgres import ENV_URL
from chaos.backends.postgres.base import PostgresBackend
from chaos.errors import ConfigError, HarnessError


def schema_name(run_id: str) -> str:
    """chaos_<run_id> reduced to a plain lower-case identifier within PostgreSQL's 63-byte limit."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", run_id.lower()).strip("_") or "run"
    return f"chaos_{cleaned}"[:63]


class ExternalPostgres(PostgresBackend, ExternalServer):
    """The run's namespace is a schema that the control's dsn (and every worker's) puts first on its
    search_path."""

    name: ClassVar[str] = "PostgreSQL"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "postgresql://user:pass@host:5432/db"

    namespace_for = staticmethod(schema_name)

    def __init__(self, url: str, run_id: str) -> None:
        self.dsn = ""
        super().__init__(url, run_id)

    def check_url(self) -> None:
        """A URL or a conninfo string psycopg can parse."""
        try:
            conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise ConfigError(
                f"Expected a PostgreSQL URL or conninfo string (e.g. {self.example_url}), but "
                f"{mask_password(self.url)!r} cannot be parsed: {' '.join(str(exc).split())}. Fix --backend-url "
                f"or {ENV_URL}.") from exc

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """Ledgers written before the schema was the namespace name it `schema`: still cleaned."""
        namespace = started.get("namespace") or started.get("schema")
        return super().clean_after_killed_run({**started, "namespace": namespace}, run_dir, url)

    def drop_namespace_quietly(self) -> None:
        """Nothing to undo after a failed create: the schema is made in one transaction (and a second
        connect to an unreachable server would only double the wait for the error)."""

    def create_namespace(self) -> None:
        """A fresh schema with the run's marker as its comment (one transaction: never made halfway), and the
        dsn whose search_path is it."""
        masked = mask_password(self.url)
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn, conn.transaction():
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(self._schema()))
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(self._schema()))
                conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(self._schema(), sql.Literal(self.marker)))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigError(
                f"Expected to create schema {self.namespace} on the external PostgreSQL server {masked}, but the "
                f"server refused: {' '.join(str(exc).split())}. Grant the user CREATE on the database (GRANT "
                "CREATE ON DATABASE ... TO ...), or connect as a user that has it.") from exc
        except psycopg.OperationalError as exc:
            raise ConfigError(
                f"Expected a reachable PostgreSQL server at {masked} (from --backend-url or {ENV_URL}), "
                f"but connecting failed: {' '.join(str(exc).split())}. Check the host, port, user, password and "
                "database name and that the server accepts TCP connections from here, or drop --backend "
                "external to let the suite start its own server.") from exc
        except psycopg.Error as exc:
            raise HarnessError(f"could not create schema {self.namespace} on {masked}: {exc}") from exc
        options = f"{conninfo_to_dict(self.url).get('options') or ''} -csearch_path={self.namespace}".strip()
        self.dsn = make_conninfo(self.url, options=options)

    def namespace_marker(self) -> str | None:
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn:
                row = conn.execute("SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace "
                                   "WHERE nspname = %s", (self.namespace,)).fetchone()
        except psycopg.Error as exc:
            raise HarnessError(f"could not look for schema {self.namespace} on {mask_password(self.url)}; drop it "
                               f"by hand if it is left: {' '.join(str(exc).split())}") from exc
        return None if row is None else str(row[0])

    def drop_namespace(self) -> None:
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(self._schema()))
        except psycopg.Error as exc:
            raise HarnessError(f"could not drop schema {self.namespace} on {mask_password(self.url)}; drop it by "
                               f"hand: {' '.join(str(exc).split())}") from exc

    def _schema(self) -> sql.Identifier:
        return sql.Identifier(self.namespace)
