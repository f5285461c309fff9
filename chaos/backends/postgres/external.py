"""The external provider: a user's server, where each run only gets a fresh schema.

The suite does not own that server, so faults that need control of it are unavailable there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Self

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.external import mask_password
from chaos.backends.postgres.base import PostgresBackend
from chaos.errors import ConfigError, HarnessError
from chaos.events import ENV_POSTGRES_URL


def schema_name(run_id: str) -> str:
    """chaos_<run_id> reduced to a plain lower-case identifier within PostgreSQL's 63-byte limit."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", run_id.lower()).strip("_") or "run"
    return f"chaos_{cleaned}"[:63]


class ExternalPostgres(PostgresBackend):
    """A user's server (provider 'external'): the run gets its own schema and no server faults."""

    provider: ClassVar[str] = "external"
    capabilities: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, url: str, run_id: str) -> None:
        self.url = url
        self.schema = schema_name(run_id)
        self.dsn = ""
        self._started = False
        self._closed = False

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        """The user's server from --backend-url, else CHAOS_POSTGRES_URL; a fresh schema named for the run."""
        url = settings.url or os.environ.get(ENV_POSTGRES_URL) or None
        if url is None:
            raise ConfigError(
                "The external PostgreSQL provider needs the URL of an existing server, but neither "
                f"--backend-url nor {ENV_POSTGRES_URL} is set. Pass --backend-url postgresql://user:pass@host:5432/db "
                f"(or export {ENV_POSTGRES_URL}), or drop --backend external to let the suite start its own server."
            )
        backend = cls(url, settings.run_id).start()
        if settings.on_event is not None:
            settings.on_event(events.backend_start(provider=cls.provider, url=mask_password(url),
                                                   schema=backend.schema))
        return backend

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """Drop the schema a killed run made, when given (or told by CHAOS_POSTGRES_URL) the same server."""
        url = url or os.environ.get(ENV_POSTGRES_URL)
        schema, recorded = str(started.get("schema") or ""), started.get("url")
        if not schema.startswith("chaos_"):
            return True, ""
        if not url or mask_password(url) != recorded:
            return False, (f"its schema {schema} may be left on {recorded}: run `chaos clean --backend-url` with "
                           "that server's URL to drop it")
        try:
            with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        except psycopg.Error as exc:
            return False, f"could not drop its schema {schema} on {recorded} ({' '.join(str(exc).split())})"
        return True, f"dropped its schema {schema} on {recorded}"

    def start(self) -> Self:
        """Check the server is reachable and create a fresh schema that dsn's search_path points at."""
        if self._closed:
            raise HarnessError("ExternalPostgres.start() after close()")
        if self._started:
            return self
        masked = mask_password(self.url)
        try:
            params = conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise ConfigError(
                f"Expected a PostgreSQL URL or conninfo string (e.g. postgresql://user:pass@host:5432/db), "
                f"but {masked!r} cannot be parsed: {' '.join(str(exc).split())}. Fix --backend-url or "
                f"{ENV_POSTGRES_URL}."
            ) from exc
        schema = sql.Identifier(self.schema)
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn, conn.transaction():
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigError(
                f"Expected to create schema {self.schema} on the external PostgreSQL server {masked}, but "
                f"the server refused: {' '.join(str(exc).split())}. Grant the user CREATE on the database "
                "(GRANT CREATE ON DATABASE ... TO ...), or connect as a user that has it."
            ) from exc
        except psycopg.OperationalError as exc:
            raise ConfigError(
                f"Expected a reachable PostgreSQL server at {masked} (from --backend-url or {ENV_POSTGRES_URL}), but "
                f"connecting failed: {' '.join(str(exc).split())}. Check the host, port, user, password and "
                "database name and that the server accepts TCP connections from here, or drop "
                "--backend external to let the suite start its own server."
            ) from exc
        except psycopg.Error as exc:
            raise HarnessError(f"could not create schema {self.schema} on {masked}: {exc}") from exc
        options = f"{params.get('options') or ''} -csearch_path={self.schema}".strip()
        self.dsn = make_conninfo(self.url, options=options)
        self._started = True
        return self

    def restart(self, mode: str = "immediate") -> None:
        raise self._no_control(f"restart ({mode})")

    def kill(self) -> None:
        raise self._no_control("kill")

    def close(self) -> None:
        """Drop the run's schema (CASCADE); idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._started:
            return
        try:
            with psycopg.connect(self.url, connect_timeout=5, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))
        except psycopg.Error as exc:
            raise HarnessError(
                f"could not drop schema {self.schema} on {mask_password(self.url)}; drop it by hand: {exc}"
            ) from exc

    def _no_control(self, fault: str) -> ConfigError:
        return ConfigError(
            f"The PostgreSQL {fault} fault needs control of the server process, but the backend is the "
            f"external server {mask_password(self.url)}, which the suite does not own. Run the scenario "
            "with the local provider (drop --backend external), or pick a scenario without server faults."
        )
