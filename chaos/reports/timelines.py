"""One job's or one worker's timeline in the terminal (`chaos report RUN_DIR --job JOB | --worker W`), for
any run, a pass included: "why was this job redelivered in no_faults?" is answered from the ledger without
SQL.

A job's timeline holds its own events and, as its witness does, the faults and process events of every
worker that touched it and the backend's during its life; a worker's holds its executions (every probe
it sent, by label), its process events and the faults on it. One line per event (`chaos.reports.lines`),
with the lease ends the contract implies written in where they fall (`chaos.reports.proof.in_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaos import events
from chaos.check.labels import Labels, of_ledger
from chaos.errors import ConfigError
from chaos.events import Event
from chaos.reports import proof
from chaos.reports.lines import event_line
from chaos.reports.run_model import natural_key

CONTEXT = ("process.", "fault", "backend.", "network.")  # a worker's or the server's events around a job
NAMED = 8  # the jobs or workers an error lists


def _entry(event: Event, origin: float) -> dict[str, Any]:
    return {"seq": event.seq, "t": round(event.mono - origin, 4), "kind": event.kind, "job": event.job,
            "worker": event.worker, "data": event.data}


def _lease(ledger: Sequence[Event]) -> float | None:
    start = next((e.data for e in ledger if e.kind == events.RUN_START), {})
    lease = (start.get("contract") or {}).get("lease_s")
    return float(lease) if isinstance(lease, (int, float)) and not isinstance(lease, bool) and lease > 0 else None


def _context_of(event: Event, workers: set[str]) -> bool:
    """A fault or process event of one of `workers` (a fault names its target), or the backend's own."""
    if event.job is not None or not event.kind.startswith(CONTEXT):
        return False
    who = event.worker or event.data.get("target")
    return who in workers or who in (None, events.BACKEND) or event.kind.startswith("backend.")


def job_timeline(ledger: Sequence[Event], job: str, outcome: str | None = None) -> list[str]:
    """The job's timeline as lines, a header first; ConfigError for a job the ledger never names."""
    own = [e for e in ledger if e.job == job]
    if not own:
        jobs = sorted({e.job for e in ledger if e.job and e.kind == events.ENQUEUE}, key=natural_key)
        raise ConfigError(f"No job {job!r} in this run's ledger. It enqueued {len(jobs)} jobs"
                          + (f", such as {', '.join(jobs[:NAMED])}" if jobs else "")
                          + ". Pass one of them to --job (a job's name as the reports write it), or --worker W "
                            "for a worker's timeline.")
    labels = of_ledger(ledger)
    workers = {e.worker for e in own if e.worker and e.kind.startswith(events.PROBE_PREFIX)}
    first, last = own[0].seq, own[-1].seq
    shown = [e for e in ledger if e.job == job or (_context_of(e, workers) and (
        e.worker in workers or first <= e.seq <= last))]
    origin = ledger[0].mono
    entries = [_entry(e, origin) for e in shown]
    executions = [labels.of_event(e) for e in own if e.kind == events.PROBE_CLAIM]
    head = f"{job}" + (f": {outcome}" if outcome else "") + (
        f"; executions {', '.join(x for x in executions if x)}" if executions else "; never claimed")
    return [head] + _lines(entries, job, _lease(ledger), labels, ledger)


def worker_timeline(ledger: Sequence[Event], worker: str) -> list[str]:
    """A worker's timeline as lines, a header first; ConfigError for a worker the ledger never names."""
    shown = [e for e in ledger if e.worker == worker or (e.kind.startswith("fault") and
                                                       e.data.get("target") == worker)]
    if not shown:
        workers = sorted({e.worker for e in ledger if e.kind == events.PROCESS_START and e.worker}, key=natural_key)
        raise ConfigError(f"No worker {worker!r} in this run's ledger. Its processes were "
                          + (", ".join(workers[:NAMED]) + (", …" if len(workers) > NAMED else "") if workers
                             else "none (no process started)")
                          + ". Pass one of them to --worker, or --job JOB for a job's timeline.")
    labels = of_ledger(ledger)
    claims = [labels.of_event(e) for e in shown if e.kind == events.PROBE_CLAIM]
    jobs = {e.job for e in shown if e.job}
    head = f"{worker}: {len(claims)} executions of {len(jobs)} jobs" + (
        f" ({', '.join(x for x in claims[:NAMED] if x)}{', …' if len(claims) > NAMED else ''})" if claims else "")
    origin = ledger[0].mono
    return [head] + [event_line(_entry(e, origin), labels) for e in shown]


def _lines(entries: list[dict[str, Any]], job: str, lease: float | None, labels: Labels,
           ledger: Sequence[Event]) -> list[str]:
    """Each entry's line, and the lease ends in_words derives, where they fall."""
    journal = {str(e.data.get("id")): e for e in ledger if e.kind == events.FAULT}
    by_seq = {entry["seq"]: entry for entry in entries}
    out = []
    for seq, sentence in proof.in_words(entries, job, lease, journal):
        entry = by_seq.get(seq) if seq is not None else None
        out.append(event_line(entry, labels) if entry is not None else f"{'':6} ~ {sentence}")
    return out
