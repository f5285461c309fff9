"""What the ledger proves about the faults: whether each one landed (else the run proved nothing), and
how long the jobs whose owners it took waited to be reclaimed."""

from __future__ import annotations

import statistics
from typing import Any

from chaos.check.history import FaultHistory, RunHistory
from chaos.check.verdict import FaultReport
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
    prove = fault.rule.prove
    if prove is None:
        return not_exercised_without_proof(fault.kind)
    return prove(fault, run)


def recovery_summary(run: RunHistory) -> dict[str, Any]:
    """Every job's recovery times, and their min, median and max over the run."""
    per_job = {job: [round(r.seconds, 4) for r in h.recoveries] for job, h in run.jobs.items() if h.recoveries}
    times = [r for values in per_job.values() for r in values]
    if not times:
        return {"jobs": {}}
    return {"jobs": per_job, "min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4)}
