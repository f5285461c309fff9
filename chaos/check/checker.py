"""The checker: a pure function of the ledger and the contract, as Jepsen's checkers are of the history.

It never imports runtime or process code, and it never crashes into a pass: `judge` turns any exception
raised while checking into an `error` verdict carrying the traceback. The work is split in three:
`chaos.check.scan` builds the run's history in one pass, `chaos.check.judgement` judges each job against
the contract, and `chaos.check.fault_reports` says which faults landed (by each kind's own proof, in
`chaos.faults`) and how jobs recovered from them.
"""

from __future__ import annotations

import gc
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from http import HTTPStatus
from typing import Any

from chaos import events
from chaos.check.control_answers import Answer, Key, answered, done, source_of
from chaos.check.fault_reports import fault_reports, recovery_summary, unmet_premises
from chaos.check.history import JobHistory, RunHistory
from chaos.check.judgement import judge_job, lost_since, unproven_note, unsettled_for
from chaos.check.provenance import provenance
from chaos.check.queue_record import DISAGREE, STALE, committed, covered, evidence, judge_record
from chaos.check.scan import scan
from chaos.check.strays import strays
from chaos.check.verdict import OUTCOMES, FaultReport, Verdict, Violation
from chaos.contract import Contract
from chaos.events import Event

UNAUTHORIZED = HTTPStatus.UNAUTHORIZED.value  # the sink's answer to a request without the run's token


def judge(ledger: Sequence[Event], contract: Contract | None = None) -> Verdict:
    """Check a ledger; any exception becomes an `error` verdict, never a pass. Either carries the run's
    provenance."""
    try:
        verdict = check(ledger, contract)
    except Exception:  # noqa: BLE001 - the whole point is to turn every crash into a verdict
        run = next((e.data for e in ledger if e.kind == events.RUN_START), {})
        verdict = Verdict("error", str(run.get("target", "?")), str(run.get("scenario", "?")), run.get("seed"),
                          dict(run.get("contract", {})), {}, {}, [], [], {}, str(run.get("command", "")),
                          error=traceback.format_exc())
    return replace(verdict, provenance=provenance(ledger))


def check(ledger: Sequence[Event], contract: Contract | None = None) -> Verdict:
    """Check a ledger against the contract (by default the one the ledger's run.start recorded)."""
    # The pass allocates a few long-lived objects per event; the cyclic collector would rescan that
    # growing heap again and again (more than doubling the time on a million events), and none of it
    # is cyclic garbage. Pause it for the duration, restoring whatever the caller had.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(ledger, contract)
    finally:
        if collecting:
            gc.enable()


def _check(ledger: Sequence[Event], contract: Contract | None) -> Verdict:
    if contract is None:
        start = next((e.data for e in ledger if e.kind == events.RUN_START), {})
        contract = Contract.from_dict(dict(start.get("contract", {})), "ledger run.start")
    end = next((e.data for e in ledger if e.kind == events.RUN_END), {})
    if end.get("status") == events.SKIPPED:
        return _skipped(ledger, contract, str(end.get("detail", "")))
    covers = covered(ledger)
    answers = answered(ledger)
    completed_by_some = done(ledger)
    run = scan(ledger, contract.renewal_bound_s or float("inf"), contract.lease_scope == "worker",
               committed(ledger, covers), answers, completed_by_some)
    violations: list[Violation] = []
    anomalies: list[dict[str, Any]] = []
    outcomes: dict[str, str] = {}
    for job in sorted(run.jobs):
        outcome, found, allowed = judge_job(run.jobs[job], contract, run)
        outcomes[job] = outcome
        violations += found
        anomalies += allowed
    source = evidence(covers)
    if (answers or completed_by_some) and source["completions"] == "probes":
        source["completions"] = "probes and control"  # acks reported with ok null, judged by the control's word
    source["acks"] = _ack_sources(ledger, answers, source["completions"] == "queue")
    if covers:
        violations, anomalies = _from_the_queues_record(ledger, contract, covers, violations, anomalies)
    faults = fault_reports(run)
    verdict, notes = _verdict(run, violations, faults, outcomes, contract)
    notes += _emulated(ledger)
    error = _harness_error(run)
    if error:
        verdict = "error"
    start = run.start
    return Verdict(verdict, str(start.get("target", "?")), str(start.get("scenario", "?")), start.get("seed"),
                   contract.to_dict(), _counts(run, outcomes), outcomes, faults, violations, recovery_summary(run),
                   str(start.get("command", "")), notes, error or None, anomalies,
                   [_exit(e) for e in run.unexpected_exits], run.network, [_refused(e) for e in run.refusals],
                   source)


def _skipped(ledger: Sequence[Event], contract: Contract, why: str) -> Verdict:
    """A run whose scenario needs what the contract does not promise: nothing started, nothing is judged."""
    start = next((e.data for e in ledger if e.kind == events.RUN_START), {})
    return Verdict(events.SKIPPED, str(start.get("target", "?")), str(start.get("scenario", "?")), start.get("seed"),
                   contract.to_dict(), _counts(RunHistory(), {}), {}, [], [], {"jobs": {}},
                   str(start.get("command", "")), [why])


def _from_the_queues_record(ledger: Sequence[Event], contract: Contract, covers: frozenset[str],
                            violations: list[Violation],
                            anomalies: list[dict[str, Any]]) -> tuple[list[Violation], list[dict[str, Any]]]:
    """Where the record covers claims and completions, it adds the stale completions it shows that the
    probes did not (a handler that reported a refusal the queue did not make). A record never cancels what
    the probes prove: a record can miss an entry (a write the queue did not log, a row it deleted), so a
    stale ack the probes show and the record does not stays, and the disagreement is reported too."""
    from_record, record_anomalies = judge_record(ledger, contract, covers)
    if evidence(covers)["completions"] != "queue":
        return violations + from_record, anomalies + record_anomalies
    by_probes = {v.job for v in violations if v.kind == STALE} | {a["job"] for a in anomalies if a["kind"] == STALE}
    by_record = {v.job for v in from_record} | {a["job"] for a in record_anomalies if a["kind"] == STALE}
    for job in sorted(str(job) for job in by_probes - by_record):
        record_anomalies.append({"kind": DISAGREE, "job": job, "exposure_s": 0.0, "source": "queue",
                                 "message": f"the probes show a stale ack of {job} accepted, but the queue's record "
                                            "shows no completion from a stale owner"})
    return (violations + [v for v in from_record if v.job not in by_probes],
            anomalies + [a for a in record_anomalies if a["kind"] != STALE or a["job"] not in by_probes])


def _ack_sources(ledger: Sequence[Event], answers: dict[Key, Answer], recorded: bool) -> str:
    """Which sources decided whether acks were accepted (the workers' reports, the broker's answers as the
    workers read them, the queue's record: an observer's, or the control's answers from it), or none: a run
    whose acks only a result store vouched for proves its jobs completed, and no ack accepted or refused."""
    found = {source for source in (source_of(e) for e in ledger if e.kind == events.PROBE_ACK
                                   and e.data.get("ok") is not None) if source in events.ACK_SOURCES}
    found |= {source for _, source in answers.values()} | ({events.QUEUE_RECORD} if recorded else set())
    return ", ".join(sorted(found)) or "none"


def _emulated(ledger: Sequence[Event]) -> list[str]:
    """The server named as an emulator where its provider says it is one (backend.start's `emulator`): what
    the run found is what that emulator does, which the service it imitates may not."""
    emulators = sorted({str(e.data["emulator"]) for e in ledger if e.kind == events.BACKEND_START
                        and e.data.get("emulator")})
    return [f"the backend is an emulator, {name}: a finding here is a finding on {name}, not necessarily on the "
            "service it imitates" for name in emulators]


def _unsettled(history: JobHistory, contract: Contract, run: RunHistory) -> str:
    """Why a job still waiting for its recovery at the end is not called stuck."""
    state = (history.snapshot or {}).get("state", "?")
    bound = contract.recovery_bound_s
    elapsed = unsettled_for(history, bound, run)
    if history.lost is None or elapsed is None:
        return (f"{history.job} was still {state} at the end, but no worker was free to take it for as long as "
                f"the recovery bound of {bound}s (each was held at a gate, stopped or cut off, or killed by the "
                "suite): that proves nothing about the queue")
    fault, owner = history.lost
    cause = lost_since(history, run)[1]
    after = f"fault {fault} took its owner {owner}" if cause is None else cause.what
    later = "" if cause is None else f"; {cause.came_after()}"
    return (f"{history.job} was still {state} {elapsed:.3f}s after {after}, {bound - elapsed:.3f}s before its "
            f"recovery bound of {bound}s: the scenario ended too soon to tell whether it would have been "
            f"recovered{later}")


def _harness_error(run: RunHistory) -> str:
    """Why this run is no verdict on the queue: the harness or the scenario broke, or no worker ever
    reported (they died at once, or spoke to the sink wrongly). Empty when the run is judgeable."""
    if run.end and run.end.get("status") == "error":
        return f"harness error: {run.end.get('detail', '')}"
    refused = [f"{e.data.get('status')} {e.data.get('error')}" for e in run.refusals if not _from_stranger(e)]
    if refused:
        # A refused probe is missing from the ledger (a refused effect could hide a duplicate): the run
        # cannot pass, and the queue is not to blame for the worker's malformed report.
        return ("the sink refused probes, so the ledger is missing what they reported: " + "; ".join(refused)
                + ". Fix the target's workers (see the probe protocol in README)")
    stray = strays((e for h in run.jobs.values() for e in h.events), run.worker_leases)
    stray.sort(key=lambda s: s.probe.seq)
    if stray:
        # Matched to no execution, the probe would be pinned on a guess (the worker's latest claim, or
        # nothing): an abandon with a wrong token read as no abandon at all.
        more = f"; and {len(stray) - 3} more" if len(stray) > 3 else ""
        return ("the target's workers reported probes that match no execution: "
                + "; ".join(s.describe() for s in stray[:3]) + more + ". Each effect, heartbeat, ack and abandon "
                "must carry the token its execution's claim sent (docs/probe-protocol.md, the token field): "
                "fix the target's workers")
    enqueued = any(h.enqueued for h in run.jobs.values())
    reported = any(e.kind.startswith(events.PROBE_PREFIX) for h in run.jobs.values() for e in h.events)
    if not enqueued or reported:
        return ""
    if not run.starts:
        return "jobs were enqueued but the scenario started no worker: nothing here is a verdict on the queue"
    strangers = [f"{e.data.get('status')} {e.data.get('error')}" for e in run.refusals if _from_stranger(e)]
    tokens = (f"; the sink refused requests without a valid run token ({strangers[0]}): do the workers send "
              "the run's token?") if strangers else ""
    return ("no worker ever reported a probe, so nothing here is a verdict on the queue: the target's workers, "
            f"or their connection to the sink, are broken (their exits and logs are listed){tokens}")


def _from_stranger(refusal: Event) -> bool:
    """A request refused for carrying no valid run token: whoever sent it, it was not one of the run's
    workers (they are given the token), so it cannot have held back anything the ledger needs."""
    return refusal.data.get("status") == UNAUTHORIZED


def _refused(refusal: Event) -> dict[str, Any]:
    """A refused request as reports show it, saying whose it was."""
    return {"from": "stranger" if _from_stranger(refusal) else "worker", "status": refusal.data.get("status"),
            "error": refusal.data.get("error"), "path": refusal.data.get("path"), "seq": refusal.seq}


def _proved_nothing(run: RunHistory, faults: list[FaultReport]) -> list[str]:
    """Why the run proved nothing about the queue, even with no violation: no final snapshot, no job to
    judge, a fault the scenario declares (FAULTS) that it never injected, one that never landed, or one whose
    premise never held (it ended on its deadline, not its condition). Empty when it proved what it set out to."""
    if not run.snapshot_taken:
        return ["the run ended before the final snapshot: lost and stuck jobs cannot be judged"]
    reasons = []
    if not any(h.enqueued for h in run.jobs.values()):
        reasons.append("no job was enqueued, so no job was judged: the run proved nothing about the queue "
                       "(the scenario must enqueue jobs and let the workers run them)")
    declared = run.start.get("faults")
    injected = {fault.kind for fault in run.faults.values()}
    missing = [kind for kind in declared or () if kind not in injected and kind not in run.waived]
    if missing:
        reasons.append(f"the scenario declares the fault(s) {', '.join(missing)} (FAULTS = {tuple(declared or ())}) "
                       "but never injected them: the run proved nothing under them (inject each declared fault, "
                       "or say with ctx.waive(kind, why) why this target does not need it)")
    if any(not f.exercised for f in faults) or len(run.gate_matched) < len(run.gates_armed):
        reasons.append("fault not exercised: a gate never matched or a fault never took effect")
        reasons += [f"gate {gate} ({spec}) never matched" for gate, spec in run.gates_armed.items()
                    if gate not in run.gate_matched]
        reasons += [f"fault {f.id} ({f.kind} {f.target}) was not exercised: {f.why}" for f in faults if not f.exercised]
    return reasons + unmet_premises(run)


def _exit(exit: Event) -> dict[str, Any]:
    """An exit the suite did not cause, as reports show it."""
    return {"worker": exit.worker, "pid": exit.data.get("pid"), "role": exit.data.get("role"),
            "returncode": exit.data.get("returncode"), "signal": exit.data.get("signal"),
            "log": exit.data.get("log"), "log_tail": list(exit.data.get("log_tail") or [])}


def _verdict(run: RunHistory, violations: list[Violation], faults: list[FaultReport], outcomes: dict[str, str],
             contract: Contract) -> tuple[str, list[str]]:
    """fail on any violation; else pass only when the run proved something: snapshot taken, faults landed,
    every job settled. (A harness error, `_harness_error`, overrides all of it.)"""
    notes: list[str] = []
    verdict = "pass"
    if violations:
        verdict = "fail"
    elif reasons := _proved_nothing(run, faults):
        verdict = "inconclusive"
        notes += reasons
    if run.end and run.end.get("status") not in (None, "ok", "error"):  # an error is the verdict's own `error`
        notes.append(f"the harness reported: {run.end.get('status')}: {run.end.get('detail', '')}")
        if verdict == "pass":
            verdict = "inconclusive"
    unsettled = [_unsettled(run.jobs[job], contract, run) for job, outcome in outcomes.items()
                 if outcome == "unsettled"]
    if run.snapshot_taken:  # without a snapshot every job is unknown, and the run says so once
        unsettled += [unproven_note(run.jobs[job], run) for job, outcome in outcomes.items()
                      if outcome == "unknown"]
    notes += unsettled
    if unsettled and verdict == "pass":
        verdict = "inconclusive"
    strangers = [e for e in run.refusals if _from_stranger(e)]
    if strangers:
        first = strangers[0].data
        notes.append(f"the sink refused requests that carried no valid run token (first at {run.at(strangers[0])}: "
                     f"{first.get('status')} {first.get('error')}, path {first.get('path')}): not from the run's "
                     "workers, so nothing they said is in the ledger or the verdict")
    grace = run.start.get("shutdown_grace_s", "?")
    notes += [f"{e.worker} (pid {e.data.get('pid')}) did not stop within the shutdown grace of {grace}s after "
              "SIGTERM and was SIGKILLed: whatever it still had to report was lost (raise the target's "
              "shutdown_grace_s)" for e in run.forced_exits]
    return verdict, notes


def _counts(run: RunHistory, outcomes: dict[str, str]) -> dict[str, int]:
    counts = {"enqueued": sum(1 for h in run.jobs.values() if h.enqueued)}
    tally = Counter(outcomes.values())
    counts.update({name: tally[name] for name in OUTCOMES})
    counts["effects"] = sum(len(h.effects) for h in run.jobs.values())
    return counts
