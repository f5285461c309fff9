"""One event as one line of text, the same in every text report (the red box's decisive events, the
summary's witness, `chaos report --job`): its time, the label of the execution it belongs to (`w1#2`), its
kind, job and worker, and the fields that matter. A token is never written out: the label names the
execution, and verdict.json keeps the token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaos import events
from chaos.check.labels import Labels
from chaos.reports.formatting import short

# Data too long or too internal for a line (verdict.json and the ledger keep it). pid is kept only where a
# process event is about the process.
QUIET = frozenset(("argv", "create_time", "log", "log_tail", "clock", "sent", "token"))
PROCESS_KINDS = frozenset((events.PROCESS_START, events.PROCESS_EXIT, events.BACKEND_START))


def _data(entry: Mapping[str, Any]) -> dict[str, Any]:
    found = entry.get("data")
    return found if isinstance(found, dict) else {}


def label_of(entry: Mapping[str, Any], labels: Labels | None) -> str | None:
    """The execution's label (a witness entry carries the checker's), else (no claim of it was reported, or
    neither a label nor the ledger at hand) the token's head."""
    if isinstance(entry.get("label"), str):
        return str(entry["label"])
    data = _data(entry)
    token = data.get("token")
    job, worker = entry.get("job"), entry.get("worker")
    named = isinstance(job, str) and isinstance(worker, str)  # an edited verdict.json may hold anything
    found = labels.of(job, worker, token) if labels is not None and named else None
    if found is not None:
        return found
    return f"token {short(token)}" if token is not None else None


def fields(kind: str, data: dict[str, Any]) -> str:
    quiet = QUIET if kind in PROCESS_KINDS else QUIET | {"pid"}
    return " ".join(f"{key}={value}" for key, value in sorted(data.items()) if key not in quiet and value is not None)


def event_line(entry: Mapping[str, Any], labels: Labels | None, *, seq: bool = True) -> str:
    """`#22    +  1.164s  probe.claim      job=job-0003 worker=w2 w2#1 point=claim` (a witness entry's dict)."""
    data = {key: value for key, value in _data(entry).items()
            if not (key in ("job", "worker") and value == entry.get(key))}  # said once, before the label
    t = entry.get("t") if isinstance(entry.get("t"), (int, float)) else 0.0
    who = " ".join(f"{key}={entry[key]}" for key in ("job", "worker") if entry.get(key))
    label = label_of(entry, labels)
    head = f"#{entry.get('seq')!s:<5} " if seq else ""
    parts = [who, label or "", fields(str(entry.get("kind")), data)]
    return f"{head}+{t:8.3f}s  {entry.get('kind')!s:<16} " + " ".join(p for p in parts if p)
