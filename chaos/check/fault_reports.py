"""What the ledger proves about the faults: whether each one landed (else the run proved nothing), whether
the condition it was held until (the scenario's premise) ever held, and how long the jobs whose owners it
took waited to be reclaimed."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from chaos import events
from chaos.check.history import FaultHistory, RunHistory
from chaos.check.verdict import PREMISE_NOT_HELD, FaultReport
from chaos.faults import fault_kind
from chaos.faults.base import not_exercised_without_proof


def fault_reports(run: RunHistory) -> list[FaultReport]:
    """One report per fault, in journal order: exercised or not, and the ledger's reason."""
    reports = []
    for fault in run.faults.values():
        exercised, why = _exercised(fault, run)
        reports.append(FaultReport(fault.id, fault.kind, fault.target, exercised, why, fault.gate))
    return reports


def _exercised(fault: FaultHistory, run: RunHistory) -> tuple[bool, str]:
    """A fault counts only when the ledger proves it landed where the scenario aimed it: applied, after
    its gate matched, and shown by its kind's own proof (a kind without one is never exercised)."""
    if fault.applied is None:
        return False, "journaled but never applied"
    if fault.gate is not None and run.gate_matched.get(fault.gate, fault.seq) >= fault.seq:
        return False, f"gate {fault.gate} had not matched when the fault was applied"
    prove = fault_kind(fault.kind).prove
    if prove is None:
        return not_exercised_without_proof(fault.kind)
    return prove(fault, run)


def unmet_premises(run: RunHistory) -> list[str]:
    """Why the run exercised only part of its scenario: a fault held until a named condition (its journaled
    `until`, a premise) that ended on its deadline instead, each saying what the queue did instead."""
    notes = []
    for fault in run.faults.values():
        until = fault.data.get("until")
        if (not until or fault.data.get("premise") is False or fault.healed is None or fault.applied is None
                or fault.healed.data.get("condition_held") is not False):
            continue
        lasted = fault.healed.mono - fault.applied.mono
        notes.append(f"{PREMISE_NOT_HELD}: fault {fault.id} ({fault.kind} {fault.target}) was to last until {until}, "
                     f"but it ended on its deadline after {lasted:.1f}s; instead, {_instead(run, fault)}. The "
                     "scenario was exercised only in part: nothing shows how the queue takes the path it exists "
                     "to test")
    return notes


def _instead(run: RunHistory, fault: FaultHistory) -> str:
    """What the condition's job went through during the fault and after its heal, from the probes."""
    job = fault.data.get("until_job")
    history = run.jobs.get(str(job)) if job is not None else None
    if history is None or fault.applied is None or fault.healed is None:
        return "the ledger names no job the condition was about"
    start, end = fault.applied.mono, fault.healed.mono
    probes = [e for e in history.events if e.kind.startswith(events.PROBE_PREFIX)]
    during = Counter(_said(e) for e in probes if start <= e.mono <= end)
    after = [f"{_said(e)} at {run.at(e)}" for e in probes if e.mono > end][:3]
    said = (f"during the {fault.kind} {job} saw " + ", ".join(f"{what} x{n}" if n > 1 else what
                                                              for what, n in during.items())
            if during else f"nobody touched {job} during the {fault.kind}")
    then = f"after the heal {', '.join(after)}" if after else f"nothing more of {job} after the heal"
    return f"{said}; {then}"


def _said(event: events.Event) -> str:
    """A probe in a few words: its point, whether it was refused, and its worker."""
    point = event.kind.removeprefix(events.PROBE_PREFIX)
    refused = " (refused)" if event.data.get("ok") is False else ""
    return f"{point}{refused} by {event.worker}"


def recovery_summary(run: RunHistory) -> dict[str, Any]:
    """Every job's recovery times, and their min, median and max over the run."""
    per_job = {job: [round(r.seconds, 4) for r in h.recoveries] for job, h in run.jobs.items() if h.recoveries}
    times = [r for values in per_job.values() for r in values]
    if not times:
        return {"jobs": {}}
    return {"jobs": per_job, "min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4)}
