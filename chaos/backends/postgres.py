"""PostgreSQL for a run: `open_postgres` starts the provider the user chose.

The ``local`` provider starts its own ``postgres`` on a free port in the run dir, so a fault never
touches anything else on the machine. The ``external`` provider only gets a fresh schema on a server
the user names, so faults that need control of the server are unavailable there.

The names below are re-exported so callers need only this module. Settings are re-exported for
reading: to change one (as tests do), patch the module that defines and reads it, e.g.
``chaos.backends.pg_binaries.PG_LIB_ROOT`` or ``chaos.backends.pg_cluster.USE_TEMPLATE``.
"""

from __future__ import annotations

import os
from pathlib import Path

from chaos.backends.pg_backend import ENV_URL, EventSink, PostgresBackend, RestartMode
from chaos.backends.pg_binaries import PG_LIB_ROOT, find_binaries
from chaos.backends.pg_cluster import USE_TEMPLATE
from chaos.backends.pg_external import ExternalPostgres, mask_password, schema_name
from chaos.backends.pg_local import SERVER_SETTINGS, LocalPostgres
from chaos.errors import ConfigError

__all__ = [
    "ENV_URL", "PG_LIB_ROOT", "SERVER_SETTINGS", "USE_TEMPLATE", "EventSink", "ExternalPostgres", "LocalPostgres",
    "PostgresBackend", "RestartMode", "find_binaries", "mask_password", "open_postgres", "schema_name",
]


def open_postgres(
    provider: str,
    data_root: Path,
    url: str | None,
    run_id: str,
    on_event: EventSink | None = None,
) -> PostgresBackend:
    """Build and start the backend the user chose; url (or CHAOS_POSTGRES_URL) is only for 'external'."""
    if provider == "local":
        return LocalPostgres(data_root, on_event).start()
    if provider == "external":
        url = url or os.environ.get(ENV_URL) or None
        if url is None:
            raise ConfigError(
                "The external PostgreSQL provider needs the URL of an existing server, but neither "
                f"--backend-url nor {ENV_URL} is set. Pass --backend-url postgresql://user:pass@host:5432/db "
                f"(or export {ENV_URL}), or drop --backend external to let the suite start its own server."
            )
        backend = ExternalPostgres(url, run_id).start()
        if on_event is not None:
            on_event("backend.start", {"provider": "external", "url": mask_password(url), "schema": backend.schema})
        return backend
    raise ConfigError(
        f"Expected a PostgreSQL backend provider of 'local' or 'external', but got {provider!r}. "
        "Fix the --backend option (or the scenario's backend setting)."
    )
