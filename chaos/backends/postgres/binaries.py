"""Finding the PostgreSQL server binaries, so initdb and postgres always come from one installation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from chaos.backends.postgres import ENV_URL
from chaos.errors import ConfigError
from chaos.events import ENV_POSTGRES_BIN

# Where Debian/Ubuntu install server binaries that are not on PATH; a constant so tests can patch it.
PG_LIB_ROOT = Path("/usr/lib/postgresql")


@dataclass(frozen=True)
class PgBinaries:
    """The server binaries of one installation, so initdb and postgres always match."""

    initdb: Path
    postgres: Path
    version: str


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort /usr/lib/postgresql/<version> numerically, so 16 beats 9.6."""
    try:
        return tuple(int(part) for part in path.parent.name.split("."))
    except ValueError:
        return (-1,)


def _server_version(postgres: Path) -> str:
    """Ask the binary, since the template cache must never mix clusters of different versions."""
    try:
        out = subprocess.run([str(postgres), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise ConfigError(
            f"Expected {postgres} to be a runnable PostgreSQL server binary, but running it failed: {exc}. "
            "Reinstall the PostgreSQL server package, or use --backend external --backend-url DSN "
            f"(or set {ENV_URL})."
        ) from exc
    match = re.search(r"\(PostgreSQL\)\s+(\d+(?:\.\d+)*)", out.stdout)
    if out.returncode != 0 or match is None:
        found = " ".join((out.stdout + out.stderr).split()) or f"exit status {out.returncode}"
        raise ConfigError(
            f"Expected '{postgres} --version' to report a PostgreSQL version, but it printed: {found}. "
            "Reinstall the PostgreSQL server package, or use --backend external --backend-url DSN "
            f"(or set {ENV_URL})."
        )
    return match.group(1)


def find_binaries() -> PgBinaries:
    """Find initdb and postgres: in $CHAOS_POSTGRES_BIN only when set, else on PATH, else the newest
    Debian-style install under PG_LIB_ROOT."""
    chosen = os.environ.get(ENV_POSTGRES_BIN)
    initdb, postgres = shutil.which("initdb", path=chosen), shutil.which("postgres", path=chosen)
    pair: tuple[Path, Path] | None = None
    if initdb is not None and postgres is not None:
        pair = (Path(initdb), Path(postgres))
    elif chosen:
        raise ConfigError(
            f"{ENV_POSTGRES_BIN}={chosen} should be a directory holding the PostgreSQL server binaries initdb and "
            "postgres, but they are not there. Point it at your installation's bin directory (e.g. "
            "/usr/lib/postgresql/15/bin) or unset it to search PATH."
        )
    else:
        for bin_dir in sorted(PG_LIB_ROOT.glob("*/bin"), key=_version_key, reverse=True):
            candidates = (bin_dir / "initdb", bin_dir / "postgres")
            if all(os.access(path, os.X_OK) for path in candidates):
                pair = candidates
                break
    if pair is None:
        raise ConfigError(
            "The local PostgreSQL backend needs the PostgreSQL server binaries (initdb, postgres), "
            f"but neither PATH nor {PG_LIB_ROOT}/*/bin has both. Install them (e.g. the Debian/Ubuntu "
            "package 'postgresql', or put your installation's bin directory on PATH), or run against "
            f"an existing server with --backend external --backend-url DSN (or set {ENV_URL})."
        )
    return PgBinaries(initdb=pair[0], postgres=pair[1], version=_server_version(pair[1]))
