"""The target check's judges of the paths beside the happy one (`chaos.authoring.check`): a kill after the
claim, a handler failure, the control's word on a completion, and the tokens the probes carry. Each takes
what the check's run saw and adds a line to `passed` or a paragraph to `problems`."""

from __future__ import annotations

from collections.abc import Callable

from chaos import events
from chaos.check.control_answers import evidence_words
from chaos.check.strays import strays
from chaos.contract import Contract
from chaos.events import Event

Lines = list[str]


def gave_up(job: str) -> Callable[[Event], bool]:
    """A worker's giving up of `job`: an abandon, or an ack the queue refused."""
    return lambda e: e.job == job and (e.kind == events.PROBE_ABANDON
                                       or (e.kind == events.PROBE_ACK and e.data.get("ok") is False))


def claim_of(job: str) -> Callable[[Event], bool]:
    """A ledger predicate: a claim of `job`, by any worker."""
    return lambda e: e.kind == events.PROBE_CLAIM and e.job == job


def judge_kill(passed: Lines, problems: Lines, job: str, worker: str, state: str, shows_deliveries: bool,
               contract: Contract) -> None:
    """The snapshot right after the claimer was SIGKILLed holding the job (no other worker running): the
    queue still has the job, nobody acked it. Claimed or pending; absent only where the snapshot cannot show
    a job out for delivery or the contract says an owner loss drops it; dead where it says one fails it."""
    allowed = ["claimed", "pending"]
    if not shows_deliveries or contract.on_owner_loss == "drop":
        allowed.append("absent")
    if contract.on_owner_loss == "fail":
        allowed.append("dead")
    killed = f"{worker} was SIGKILLed holding {job} (a gate held it right after its claim, before its effect)"
    if state in allowed:
        passed.append(f"after {killed}, snapshot() showed it {state}")
        return
    problems.append(
        f"After {killed}, snapshot() showed it {state}, not {' or '.join(allowed)}: nobody acked the job, so the "
        "queue still has it (claimed by the dead worker until the queue notices, or pending again). A snapshot "
        "that drops a claimed job, or shows it done, when its owner dies makes a lost job look finished, and no "
        "fault scenario could catch it. snapshot() must keep listing such a job as the queue holds it; a queue "
        "that keeps no record of a job out for delivery says so with shows_deliveries = False on its control, "
        "and one that forgets or fails a dead owner's job says so with the contract's on_owner_loss.")


def judge_failure(passed: Lines, problems: Lines, job: str, ledger: list[Event], failed: Event | None,
                  retried: Event | str | None, contract: Contract) -> None:
    """A poison job (its handler fails every time): its claimer gives it up with a reason other than
    "lost", then the queue retries it (another claim), or dead-letters it where only one attempt is allowed."""
    if not any(claim_of(job)(e) for e in ledger):
        problems.append(f"No worker claimed {job}, a poison job enqueued after the kill: the handler-failure path "
                        "was not reached (the worker logs in the run dir say why).")
        return
    if failed is None:
        problems.append(
            f"No abandon (nor an ack with ok=false) for {job}, a poison job whose handler fails every time: when "
            "the handler fails, the worker must call probe.abandon(job, token, reason='handler failed') before "
            "the queue can hand the job out again (a nack, a retry, a requeue), or probe.ack(job, token, False) "
            "where the queue refuses the job's completion.")
        return
    how = "an abandon" if failed.kind == events.PROBE_ABANDON else "an ack refused (ok=false)"
    reason = failed.data.get("reason")
    if failed.kind == events.PROBE_ABANDON and reason == "lost":
        problems.append(
            f"{failed.worker} abandoned the failing {job} with reason 'lost' (chaos.probe's default): that says "
            "the job was taken from it, so the checker does not count it as a release, and the retry would be "
            "judged a premature reclaim. A handler failure must say so: "
            "probe.abandon(job, token, reason='handler failed').")
    else:
        passed.append(f"{failed.worker} gave up the failing {job} with {how}"
                      + (f" (reason {reason!r})" if reason else ""))
    if contract.max_attempts == 1:
        if retried is None:
            problems.append(f"The contract allows one attempt (max_attempts = 1), but snapshot() never showed the "
                            f"failed {job} dead: a job whose only attempt failed is dead-lettered, and snapshot() "
                            "must show it dead.")
        else:
            passed.append(f"the queue dead-lettered {job} after its one attempt (max_attempts = 1)")
        return
    if not isinstance(retried, Event):
        attempts = contract.max_attempts or "unbounded"
        problems.append(
            f"No worker claimed {job} again after {failed.worker} gave it up ({how}): the contract allows "
            f"{attempts} attempts, so the queue must retry a failed job (the check kept a worker idle for it). The "
            "worker's failure path must hand the job back to the queue (a nack, a retry, releasing its claim) "
            "after its abandon, or the contract must say max_attempts = 1.")
        return
    passed.append(f"{retried.worker} claimed {job} again (token {retried.data.get('token')!r}): the queue retried it")


def judge_completion(passed: Lines, problems: Lines, job: str, worker: str, ok: object,
                     answer: tuple[str, str] | None, keeps_no_completions: bool) -> None:
    """The control's completion(job, token) for the execution whose ack the worker reported, as (outcome,
    source): it must see the completion (accepted, or done), unless it declares it keeps no record of
    completions and the worker's own ok=True vouches for the ack. An answer from a source that decides no
    ack (a result store) proves the job completed, as done does: the ack is left to the worker's report."""
    if ok is False or answer is None:
        return  # a refused ack is its own problem; no answer: the run ended before the question
    outcome, source = answer
    asked = f"completion({job!r}, its claim's token), asked after the ack and again before the final snapshot,"
    if outcome == "accepted" and source not in events.ACK_SOURCES:
        # events.SOURCES less ACK_SOURCES is the result store alone: it records that the task ran, whoever acked.
        stored = f"the control says a result store holds its result: that proves {job} completed"
        passed.append(f"{worker} acked {job} with ok null, and {stored}, not that the queue took its ack"
                      if ok is None else f"{worker} acked {job} with ok={ok!r}, which decides the ack, and {stored}")
    elif ok is None and outcome == "accepted":
        passed.append(f"{worker} acked {job} with ok null, and the control says the queue took the completion")
    elif ok is None and outcome == "done":
        passed.append(f"{worker} acked {job} with ok null, and the control says the queue completed the job (not by "
                      "whose ack: a stale owner's accepted ack cannot be told from this one's)")
    elif outcome in ("accepted", "done"):
        passed.append(f"the control's completion({job!r}, its claim's token) answered {outcome}, as the ack says")
    elif outcome == "unknown" and keeps_no_completions and ok is True:
        passed.append(f"the control keeps no record of which execution completed a job (KeepsNoCompletions): "
                      f"the ack's ok=true decides {job}'s completion")
    else:
        problems.append(
            f"{worker} acked {job} (ok={ok!r}), but the control's {asked} answered {outcome!r} (from "
            f"{evidence_words(source)}): a completion the control cannot see. completion() must read the queue's "
            "record of who completed the job (a done hash, a result store, a row's completing token) and answer "
            "accepted or done for an ack the queue took (huey_redis reads huey's result store). A queue that "
            "keeps no record of it answers unknown through KeepsNoCompletions, and its workers must then learn "
            "from the queue whether each ack took (ok true or false, never null).")


def judge_tokens(passed: Lines, problems: Lines, ledger: list[Event], worker_leases: bool) -> bool:
    """Each effect, heartbeat, ack and abandon carries the token its execution's claim sent. True when one
    did not (the run's verdict is then the error that says so)."""
    found = strays(ledger, worker_leases)
    for stray in found:
        problems.append(
            f"A wrong token: the {stray.describe()}. Each effect, heartbeat, ack and abandon must carry the token "
            "its execution's claim sent: the checker matches probes to their execution by (worker, token), and "
            "a run with a probe of no execution is an error, not a verdict on the queue.")
    if not found:
        passed.append("every effect, heartbeat, ack and abandon carried its claim's token")
    return bool(found)
