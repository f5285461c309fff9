"""Proof that a leftover is the suite's own, made for one run. `chaos clean`, and the start of every run,
act on what a run dir's ledger names, and a run dir can come from anywhere: a restored CI cache, a
downloaded artifact, a shared volume, a directory planted in a suite's --out. So a ledger only says where
to look; the thing itself must prove it was made for that run, by a random marker of one exact form that
the run journaled before it made the thing: a data directory's parent holds an owner file with it, a
server's processes carry it in their environment (PostgreSQL's, which write their title over their
environment, as the cluster name in that title), a namespace on a user's server holds a marker object
with it (a key, a comment, a description, a tag). Anything else is reported and left alone, and nothing
is ever recognised by a prefix of its name."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

MARKER_PREFIX = "queue-chaos-"
OWNER_FILE = "queue-chaos-owner"  # in the directory that holds a run's data directory, written before it
_MARKER = re.compile(r"queue-chaos-[0-9a-f]{16}")


def new_marker() -> str:
    """A fresh random marker, of the one form `is_marker` accepts."""
    return MARKER_PREFIX + secrets.token_hex(8)


def is_marker(value: object) -> bool:
    return isinstance(value, str) and _MARKER.fullmatch(value) is not None


def mark(directory: Path, marker: str) -> None:
    """Write the owner file into `directory` (made if need be): before the data directory inside it exists,
    so a runner killed at any moment leaves no data that cannot prove whose it is."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / OWNER_FILE).write_text(marker + "\n")


def marked(directory: Path, marker: str) -> bool:
    """Whether `directory` holds the owner file with exactly this marker (a symlink proves nothing)."""
    owner = directory / OWNER_FILE
    try:
        return is_marker(marker) and not owner.is_symlink() and owner.read_text().strip() == marker
    except (OSError, UnicodeDecodeError):
        return False


def plain(path: Path) -> bool:
    """An absolute path with no '.', '..' or repeated separator in it, and no symlink at its end."""
    return path.is_absolute() and os.path.normpath(path) == str(path) and not path.is_symlink()


def why_not_owned(named: str, run_dir: Path, marker: str, leaf: str) -> str:
    """'' when `named` is a data directory the run made: `<run_dir>/<its own dir>/<leaf>`, no symlink on the
    way, whose parent holds the owner file with `marker`; else why it is not, for a message."""
    path = Path(named)
    if not is_marker(marker):
        return "its ledger gives no marker of the suite's form for it"
    if (not plain(path) or path.name != leaf or not plain(path.parent)
            or path.parent.parent.resolve() != run_dir.resolve()):
        return f"it is not inside this run's directory {run_dir}"
    if not marked(path.parent, marker):
        return f"{path.parent} holds no owner file ({OWNER_FILE}) with the run's marker {marker}"
    return ""
