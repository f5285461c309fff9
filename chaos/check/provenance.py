"""Where a run came from, read from its ledger alone: the stamp a red build's box (and a green one's line)
carries, so a reader can tell which suite, target commit, server and Python gave the verdict, when, and
for how long it ran. A field the run did not record (an older ledger, a server that cannot tell its
version) is absent, never guessed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from chaos import events
from chaos.events import Event


def provenance(ledger: Sequence[Event]) -> dict[str, Any]:
    """suite_version, target, target_commit, server, python, date (UTC, ISO 8601), duration_s."""
    if not ledger:
        return {}
    start = next((e for e in ledger if e.kind == events.RUN_START), None)
    backend = next((e.data for e in ledger if e.kind == events.BACKEND_START), None)
    first, last = start or ledger[0], ledger[-1]
    found: dict[str, Any] = {}
    if start is not None:
        found.update({key: start.data[key] for key in ("suite_version", "target", "target_commit", "python")
                      if start.data.get(key) is not None})
    if backend is not None:
        found["server"] = _server(backend, start.data if start is not None else {})
    found["date"] = datetime.fromtimestamp(first.wall, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    found["duration_s"] = round(max(last.wall - first.wall, 0.0), 3)
    return found


def _server(backend: dict[str, Any], start: dict[str, Any]) -> str:
    """What backend.start says of the server: its version, an emulator's, a container's image, else its kind
    and provider with no version."""
    kind = start.get("backend_kind") or "server"
    provider = backend.get("provider") or start.get("backend") or "?"
    for key in ("version", "emulator", "image"):
        if backend.get(key):
            return f"{backend[key]} ({kind}, {provider})"
    return f"{kind} ({provider}), version not recorded"
