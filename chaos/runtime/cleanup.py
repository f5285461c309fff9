"""What a run whose runner was killed outright (no `finally` ran) left behind: its server's data in the
run dir, its schema on the user's server. The next run in the same runs dir, or `chaos clean`, finds
such runs by their ledgers (a start and no end, and the runner recorded there no longer alive) and
removes what each backend recorded that it made, never anything else; the run's ledger then ends with
`abandoned`, so it is cleaned once."""

from __future__ import annotations

from pathlib import Path

import psutil

from chaos import events
from chaos.backends.registry import provider
from chaos.errors import ChaosError
from chaos.ledger import Ledger, read_events


def clean_killed_runs(runs_dir: Path, url: str | None = None) -> list[str]:
    """One line per killed run found under `runs_dir`, saying what was removed."""
    cleaned = []
    for ledger_path in sorted(runs_dir.glob("*/ledger.sqlite")) if runs_dir.is_dir() else []:
        try:
            recorded = read_events(ledger_path)
        except ChaosError:
            continue  # not a ledger this suite can read: not ours to touch
        start = next((e.data for e in recorded if e.kind == events.RUN_START), None)
        if start is None or any(e.kind == events.RUN_END for e in recorded) or _runner_alive(start):
            continue
        removed = []
        for started in (e.data for e in recorded if e.kind == events.BACKEND_START):
            try:
                backend = provider(str(start.get("backend_kind")), str(started.get("provider"))).backend_class()
            except ChaosError:
                continue
            removed.append(backend.clean_after_killed_run(started, url))
        done = "; ".join(filter(None, removed)) or "nothing of it was left"
        ledger = Ledger(ledger_path)
        try:
            ledger.append(events.run_end("abandoned", f"its runner (pid {start.get('pid')}) was killed; {done}"))
        finally:
            ledger.close()
        cleaned.append(f"{ledger_path.parent}: {done}")
    return cleaned


def _runner_alive(start: dict[str, object]) -> bool:
    """Is the process that ran it, the very one (pid and start time), still there?"""
    pid, born = start.get("pid"), start.get("pid_create_time")
    if not isinstance(pid, int):
        return False
    try:
        process = psutil.Process(pid)
        return born is None or abs(process.create_time() - float(str(born))) < 0.01
    except psutil.Error:
        return False
