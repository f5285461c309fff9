"""`chaos target check PATH`: one real run of a check scenario on a fresh server, then every seam that did
not hold named in a paragraph of its own. The run drives three paths of a job's life, one worker at a time:

- the happy path (an empty snapshot, one job enqueued and seen pending, a worker that claims it and is
  held at a gate while a snapshot must show the job claimed, then effects and acks it; the control's
  `completion()` must agree with the ack, and the final snapshot say done);
- a kill after the claim: the next job's claimer is SIGKILLed while a gate holds it right after its
  claim, and the snapshot taken then must still show the job (claimed, pending, or as the contract's
  on_owner_loss allows), never done;
- a handler failure: a poison job's claimer must give it up (an abandon, or an ack refused) with its
  claim's token, and the queue retry it (another claim), or dead-letter it where max_attempts = 1.

The held snapshot matters because the checker counts a job completed only on evidence of a completion:
a snapshot that leaves out claimed jobs would hide a stuck one, and a run could not tell it from a job
that finished. Every probe must carry its claim's token (`chaos.check.strays`): one that does not is a
wrong token, named with the probe. The kill and the failure are the target's wiring, not the queue's
correctness: what the queue then does with those jobs (a lost job, a slow recovery) is for the fault
scenarios to judge, so the check holds only the fault-free job to a pass.

A target that passes the check can be judged by the fault scenarios; one that fails it would only give
verdicts about its own wiring.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos import events
from chaos.authoring import fault_paths
from chaos.check.control_answers import source_of
from chaos.check.verdict import Verdict
from chaos.errors import HarnessError
from chaos.events import Event
from chaos.ledger import read_events
from chaos.queue_model import Control, KeepsNoCompletions
from chaos.runtime.completions import read_answer
from chaos.runtime.context import ScenarioContext
from chaos.runtime.run import RunOptions, run_scenario
from chaos.scenario import Context, Scenario
from chaos.target import Target

JOB, KILLED, FAILING = "job-0001", "job-0002", "job-0003"
WORKER, SECOND = "w1", "w2"
MARGIN_S = 10.0  # beyond the recovery bound, for a worker's start (a broker's client library takes seconds)
ANSWER_S = 5.0  # how long the control's completion() may take to see an ack (a result store written after it)
POLL_S = 0.1


@dataclass
class CheckReport:
    """What the check saw: each seam that held (`passed`) and each that did not (`problems`), and the run."""

    target: Target
    run_dir: Path
    passed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def check_target(target: Target, options: RunOptions) -> CheckReport:
    seen: dict[str, Any] = {}

    def check(ctx: Context) -> None:
        """Target check: the queue's seams, one job at a time: a happy path, a kill after the claim, a
        handler failure."""
        if not isinstance(ctx, ScenarioContext):
            raise HarnessError("the target check runs only in the suite's own runtime")
        deadline = ctx.recovery_deadline(margin_s=MARGIN_S)
        seen["empty"] = _states(ctx)
        ctx.enqueue(1)
        seen["enqueued"] = _states(ctx)
        gate = ctx.arm("after:claim", job=JOB)
        ctx.start_worker(WORKER)
        held = ctx.wait(gate, deadline)
        seen["claimed"] = _states(ctx)
        seen["shows_deliveries"] = ctx.shows_deliveries
        ctx.release(gate)
        seen["drained"] = ctx.wait_drained(deadline)
        seen["completion"] = _completion(ctx.control, str(held.token))
        seen["keeps_no_completions"] = isinstance(ctx.control, KeepsNoCompletions)
        killed = ctx.arm("after:claim", job=KILLED)  # before the enqueue: the idle w1 claims it at once
        ctx.enqueue(1)
        ctx.wait(killed, deadline)
        ctx.kill_held(killed)
        seen["after_kill"] = _states(ctx).get(KILLED, "absent")
        ctx.enqueue(1, fail=True)
        ctx.start_worker(SECOND)
        failed = seen["failed"] = ctx.ledger.wait_for(fault_paths.gave_up(FAILING), deadline)
        if failed is not None:
            seen["retried"] = (_dead_letter(ctx, deadline) if ctx.contract.max_attempts == 1 else
                               ctx.ledger.wait_for(fault_paths.claim_of(FAILING), deadline, after=failed.seq))

    scenario = Scenario("target_check", Path(__file__), check.__doc__ or "", check, ("kill",))
    result = run_scenario(target, scenario, options)
    report = CheckReport(target, result.dir)
    _judge(report, seen, result.verdict, read_events(result.dir / "ledger.sqlite"))
    return report


def _states(ctx: Context) -> dict[str, str]:
    """Each job's state in the control's snapshot, by job."""
    return {state.job: state.state for state in ctx.snapshot()}


def _completion(control: Control, token: str) -> tuple[str, str]:
    """The control's answer on the ack of JOB by its claim's token, read as the runtime reads it (an
    outcome and the source it came from): polled for a while where it is not definite at once (a library
    writes its result store after the ack is reported); a control that keeps no record of completions is
    asked once."""
    until = time.monotonic() + ANSWER_S
    while True:
        answer = read_answer(control.completion(JOB, token), f"completion({JOB!r}, {token!r})")
        if answer[0] != "unknown" or isinstance(control, KeepsNoCompletions) or time.monotonic() >= until:
            return answer
        time.sleep(POLL_S)


def _dead_letter(ctx: ScenarioContext, timeout: float) -> str | None:
    """Under max_attempts = 1 a failed job is not retried: the snapshot must come to show it dead."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if _states(ctx).get(FAILING) == "dead":
            return "dead"
        time.sleep(POLL_S)
    return None


def _judge(report: CheckReport, seen: dict[str, Any], verdict: Verdict, ledger: list[Event]) -> None:
    ok, problem = report.passed.append, report.problems.append
    if "empty" not in seen:
        problem(f"The run ended before the control's first snapshot: {_cause(verdict)}. setup() and snapshot() of "
                f"the target's control (its class, or its [control] process: logs/control.log is its stderr) must "
                f"work on a fresh server; the run dir {report.run_dir} holds the rest.")
        return
    if seen["empty"]:
        problem(f"snapshot() on the fresh queue, before anything was enqueued, lists {sorted(seen['empty'])[:5]}: "
                "it must list only the jobs the suite enqueued (a table or key left over from elsewhere?).")
    else:
        ok("setup() made the queue, and snapshot() of the empty queue lists no job")
    if "enqueued" not in seen:
        problem(f"enqueue() or the snapshot after it failed: {_cause(verdict)}; the run dir {report.run_dir} holds "
                "the rest.")
        return
    state = seen["enqueued"].get(JOB)
    if state == "pending":
        ok(f"enqueue() put {JOB} in the queue, and snapshot() shows it pending")
    else:
        problem(f"Right after enqueue(), snapshot() shows {JOB} as {state or 'absent'}, not pending: snapshot() "
                "must list every enqueued job by the suite's id (carried in the queue's payload), and enqueue() must "
                "commit before it returns.")
    _judge_worker(report, ledger)
    if "claimed" in seen:
        _judge_claimed(report, seen["claimed"].get(JOB, "absent"), seen["shows_deliveries"])
    if report.target.observed_by is not None:
        _judge_observer(report, ledger)
    final = next((e.data.get("state") for e in ledger if e.kind == events.SNAPSHOT and e.job == JOB), "absent")
    if final in ("done", "absent"):  # a queue that deletes a completed job (a broker, beanstalkd) shows it absent
        ok(f"the final snapshot shows {JOB} {final}" + (" (deleted on completion)" if final == "absent" else ""))
    elif any(e.kind == events.SNAPSHOT_TAKEN for e in ledger):
        problem(f"The final snapshot shows {JOB} as {final} after its ack: snapshot() must report a completed job "
                "as done (or not list it, for a queue that deletes completed jobs), and the ack must complete it.")
    contract = report.target.contract
    if "completion" in seen:
        acks = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == JOB]
        # A control may answer only once no consumer holds the job (dramatiq_rabbitmq): the run asks
        # again before its final snapshot, and that last word counts too.
        final = [(str(e.data.get("outcome")), source_of(e)) for e in ledger
                 if e.kind == events.COMPLETION and e.job == JOB]
        answer = seen["completion"] if seen["completion"][0] != "unknown" or not final else final[-1]
        fault_paths.judge_completion(report.passed, report.problems, JOB, WORKER,
                                     acks[-1].data.get("ok") if acks else False, answer,
                                     seen["keeps_no_completions"])
    wrong_token = fault_paths.judge_tokens(report.passed, report.problems, ledger, contract.lease_scope == "worker")
    if "after_kill" in seen:
        fault_paths.judge_kill(report.passed, report.problems, KILLED, WORKER, seen["after_kill"],
                               seen["shows_deliveries"], contract)
    elif "completion" in seen:
        problem(f"The run ended before the kill after the claim of {KILLED}: {_cause(verdict)}; the run dir "
                f"{report.run_dir} holds the rest.")
    if "failed" in seen:
        fault_paths.judge_failure(report.passed, report.problems, FAILING, ledger, seen["failed"],
                                  seen.get("retried"), contract)
    _judge_verdict(report, verdict, wrong_token)


def _judge_verdict(report: CheckReport, verdict: Verdict, wrong_token: bool) -> None:
    """The fault-free job is held to a pass: completed, no violation. The killed and the failing job are
    the target's wiring here, and what the queue did with them is for the fault scenarios to judge. A run
    the checker could not judge (an error) fails the check, unless a wrong token, named above, is why."""
    if verdict.verdict == "error":
        if not wrong_token:
            report.problems.append(f"The check run is an ERROR, no verdict on the queue: {_cause(verdict)}")
        return
    outcome = verdict.jobs.get(JOB, "unknown")
    against = [v.message for v in verdict.violations if v.job == JOB]
    if outcome == "completed" and not against:
        report.passed.append(f"the verdict on the fault-free {JOB}: completed, no violation (the run's verdict, "
                             f"{verdict.verdict}, also judges the killed and the failing job)")
        return
    why = "; ".join(against) or "; ".join(note for note in verdict.notes if JOB in note) or "; ".join(verdict.notes)
    report.problems.append(f"The fault-free {JOB} is {outcome} in the check run's verdict, not completed: {why}")


def _cause(verdict: Verdict) -> str:
    """Why a run ended, in one line: the error's first line and, under a traceback, the exception it ends with."""
    error = verdict.error or "no reason recorded"
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return f"{lines[0]} ({lines[-1]})" if "Traceback" in error else lines[0]


def _judge_worker(report: CheckReport, ledger: list[Event]) -> None:
    """The worker's side: it stayed up, its probes were accepted, and it claimed, effected and acked the job."""
    ok, problem = report.passed.append, report.problems.append
    for exit_ in (e for e in ledger if e.kind == events.PROCESS_EXIT and not e.data.get("expected")):
        tail = "\n    ".join(exit_.data.get("log_tail") or [])
        problem(f"{exit_.worker} exited by itself (exit code {exit_.data.get('returncode')}) during the check; its "
                f"log {exit_.data.get('log')} ends:\n    {tail}")
    for refusal in (e for e in ledger if e.kind == events.PROBE_REFUSED):
        problem(f"The sink refused a probe ({refusal.data.get('status')}): {refusal.data.get('error')}. "
                "docs/probe-protocol.md gives each point's fields.")
    probes = {point: [e for e in ledger if e.kind == f"probe.{point}" and e.job == JOB]
              for point in (events.CLAIM, events.EFFECT, events.ACK)}
    claims = probes[events.CLAIM]
    if not claims:
        problem(f"No claim probe for {JOB} arrived: the worker must call probe.claim(job, token) once it owns a "
                "job (after the queue committed the claim), naming the suite's job id.")
        return
    claim = claims[0]
    if claim.worker != WORKER:
        problem(f"The claim probe names the worker {claim.worker!r}, not {WORKER!r}: send CHAOS_WORKER_ID as it "
                "is (chaos.probe does).")
    else:
        note = "" if "attempt" in claim.data else (" (it sends no attempt: probe.claim(..., attempt=N) lets a "
                                                   "verdict count claims by the queue's own count)")
        ok(f"{WORKER} claimed {JOB} with token {claim.data.get('token')!r}{note}")
    if not probes[events.EFFECT]:
        problem(f"No effect probe for {JOB}: the worker must call probe.effect(job, token) where the handler's "
                "external side effect happens, before its ack.")
    else:
        ok(f"{WORKER} reported the job's effect")
    acks = probes[events.ACK]
    if not acks:
        problem(f"No ack probe for {JOB}: the worker must call probe.ack(job, token, ok) after asking the queue to "
                "complete the job, with ok saying whether the queue accepted it.")
    elif acks[-1].data.get("ok") is False:
        problem(f"The ack probe for {JOB} says ok={acks[-1].data.get('ok')!r}: in a fault-free run the queue should "
                "accept the ack; ok must be what the queue answered (True for a completion that took effect).")
    elif acks[-1].data.get("ok") is True:
        source = source_of(acks[-1])
        ok(f"{WORKER} acked {JOB} and the queue accepted it" + ("" if source == events.WORKER_REPORT else
                                                                f" (by the word of: {source})"))


def _judge_claimed(report: CheckReport, state: str, shows_deliveries: bool) -> None:
    """The snapshot taken while the worker was held right after its claim: a job out for delivery must show
    claimed, unless the control says the queue keeps no record of one (then never done or dead)."""
    held = f"{WORKER} held {JOB} (a gate held it right after its claim, before its effect and ack)"
    if state == "claimed":
        report.passed.append(f"while {held}, snapshot() showed it claimed")
    elif not shows_deliveries and state in ("absent", "pending"):
        report.passed.append(f"while {held}, snapshot() showed it {state}: the control says the queue keeps no "
                             "record of a job out for delivery (shows_deliveries = False), so only an accepted ack "
                             "or its completion() answer completes a job")
    elif not shows_deliveries:
        report.problems.append(f"While {held}, snapshot() showed it {state}: a job nobody has acked yet is neither "
                               "done nor dead. snapshot() must show such a job claimed, pending or absent (not "
                               "listed).")
    else:
        report.problems.append(
            f"While {held}, snapshot() showed it {state}, not claimed: a snapshot that leaves out (or misreports) a "
            "claimed job would hide a stuck one, whose owner died holding it, and a run could not tell it from a "
            "completed one. snapshot() must show a job a worker holds as claimed (by that worker); a queue that "
            "keeps no record of a job out for delivery says so with shows_deliveries = False on its control.")


def _judge_observer(report: CheckReport, ledger: list[Event]) -> None:
    """The queue's own record, as the target's observer read it: the claim and the completion, by w1, as
    far as it covers them (a broker that shows no acks covers claims alone; on a server the observer may
    not look at, it covers nothing and says why)."""
    start = next((e for e in ledger if e.kind == events.OBSERVER_START), None)
    covers = set(start.data.get("covers", ())) if start is not None else set()
    if start is not None and not covers:
        why = start.data.get("note") or "it does not say why"
        report.passed.append(f"the observer covers nothing on this server: {why}")
        return
    for kind, what in ((events.QUEUE_CLAIM, "claim"), (events.QUEUE_COMPLETE, "completion")):
        if start is not None and kind.removeprefix("queue.") not in covers:
            report.passed.append(f"the observer does not cover {what}s (the queue does not show them): not expected")
            continue
        records = [e for e in ledger if e.kind == kind and e.job == JOB]
        if not records:
            report.problems.append(f"The observer ({report.target.observed_by}) recorded no {what} of {JOB}: its "
                                   f"read() must return the queue's {what} records (kind "
                                   f"{kind.removeprefix('queue.')!r}) once the queue has committed them.")
        elif records[0].worker != WORKER:
            report.problems.append(f"The observer's {what} record of {JOB} names {records[0].worker!r}, not "
                                   f"{WORKER!r}: the actor must be the suite's name of the worker (the library's "
                                   "worker id set to CHAOS_WORKER_ID, or a PostgreSQL session's application_name).")
        else:
            report.passed.append(f"the observer recorded the queue's {what} of {JOB} by {WORKER}")


def summary(report: CheckReport) -> str:
    lines = [f"target {report.target.name} ({report.target.path}): " +
             ("every seam held" if not report.problems else f"{len(report.problems)} problem(s)")]
    lines += [f"  ok: {line}" for line in report.passed]
    lines += [f"  problem: {line}" for line in report.problems]
    lines.append(f"run dir: {report.run_dir}")
    return "\n".join(lines)
