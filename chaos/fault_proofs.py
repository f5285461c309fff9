"""What the ledger proves about the faults: whether each one landed (else the run proved nothing), and
how long the jobs whose owners it took waited to be reclaimed."""

from __future__ import annotations

import statistics
from typing import Any

from chaos.history import FaultHistory, RunHistory
from chaos.verdict import FaultReport


def fault_reports(run: RunHistory) -> list[FaultReport]:
    """One report per fault, in journal order: exercised or not, and the ledger's reason."""
    reports = []
    for fault in run.faults.values():
        exercised, why = _exercised(fault, run)
        reports.append(FaultReport(fault.id, fault.kind, fault.target, exercised, why, fault.gate))
    return reports


def _exercised(fault: FaultHistory, run: RunHistory) -> tuple[bool, str]:
    """A fault counts only when the ledger proves it landed where the scenario aimed it."""
    if fault.applied is None:
        return False, "journaled but never applied"
    if fault.gate is not None and run.gate_matched.get(fault.gate, fault.seq) >= fault.seq:
        return False, f"gate {fault.gate} had not matched when the fault was applied"
    target = fault.target or ""
    pids = fault.applied.data.get("pids") or []
    if fault.kind in ("kill", "stop") and not pids:
        return False, "no live process of the target received the signal"
    if fault.kind == "kill":
        # The exit may be reaped before `fault.applied` is written: it only has to follow the journal entry.
        exits = [e for e in run.exits.get(target, []) if e.seq > fault.seq and e.data.get("pid") in pids]
        if not any(e.data.get("signal") == "SIGKILL" for e in exits):
            return False, f"no SIGKILL exit of a signalled process of {target} was reaped after the fault"
        return True, f"{target} killed by SIGKILL (pids {pids})"
    if fault.kind == "stop":
        resumed = f", resumed by SIGCONT at {run.at(fault.healed)}" if fault.healed else ", never resumed"
        return True, f"{target} stopped by SIGSTOP (pids {pids}){resumed}"
    if fault.kind == "restart":
        killed = next((e for e in run.exits.get(target, [])
                       if e.seq > fault.seq and e.data.get("signal") == "SIGKILL"), None)
        if killed is None:
            return False, f"no SIGKILL exit of {target} was reaped after the fault"
        started = next((e for e in run.starts.get(target, []) if e.seq > killed.seq), None)
        if started is None:
            return False, f"{target} was killed (pid {killed.data.get('pid')}) but never started again"
        return True, (f"{target} killed by SIGKILL (pid {killed.data.get('pid')}) and started again "
                      f"(pid {started.data.get('pid')})")
    if fault.kind == "backend_restart":
        restart = next((e for e in run.backend_restarts if e.seq > fault.seq), None)
        if restart is None:
            return False, "no backend.restart event followed the fault"
        return True, (f"backend restarted ({restart.data.get('mode', '?')}, pid {restart.data.get('old_pid')} -> "
                      f"{restart.data.get('new_pid')})")
    if fault.kind == "clock":
        offset = fault.data.get("offset_s") or 0.0
        if fault.clock_seen:
            return True, f"{target} ran with its wall clock shifted by {offset:+}s (seen on its probes)"
        if fault.clock_skew is None:
            return False, f"no probe from {target} carried its clock, so the {offset:+}s shift was never seen"
        return False, (f"{target}'s probes show a clock skew of {fault.clock_skew:+.3f}s, not the {offset:+}s "
                       "offset: the shifted clock did not take")
    return True, str(fault.applied.data.get("detail", "applied"))


def recovery_summary(run: RunHistory) -> dict[str, Any]:
    """Every job's recovery times, and their min, median and max over the run."""
    per_job = {job: [round(r.seconds, 4) for r in h.recoveries] for job, h in run.jobs.items() if h.recoveries}
    times = [r for values in per_job.values() for r in values]
    if not times:
        return {"jobs": {}}
    return {"jobs": per_job, "min_s": round(min(times), 4), "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4)}
