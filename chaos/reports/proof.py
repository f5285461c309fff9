"""A violation's witness told as a proof in words: one sentence per witness entry, with the lease ends it
implies written in where they fall, so a reader follows why the job broke the contract without reading
the ledger."""

from __future__ import annotations

from typing import Any

from chaos import events
from chaos.check.control_answers import evidence_words
from chaos.events import Event
from chaos.faults import fault_kind
from chaos.reports.formatting import short

HEAD, TAIL = 12, 48  # a witness longer than both is shown as its head, a gap, its tail
GAP = -1  # the seq of the sentence that stands for the steps left out
SENTENCES = {  # kind -> its sentence: the entry's {what} (job), {worker} and {at}, any other field from its data
    events.PROCESS_START: "{worker} started (pid {pid}) at {at}.",
    events.ENQUEUE: "{what} was enqueued at {at}.",
    events.GATE_ARMED: "Gate {gate} was armed ({spec}) at {at}.",
    events.GATE_MATCHED: "{worker} was held at its {point} of {what} (gate {gate}) at {at}.",
    events.GATE_RELEASED: "Gate {gate} was released at {at}.",
    events.BACKEND_RESTART: "The server restarted ({mode}, down {down_s} s) at {at}.",
    events.BACKEND_START: "The server started at {at}.",
    events.BACKEND_EXIT: "The server exited ({reason}) at {at}.",
    events.PROBE_DROPPED: "A {point} probe of {worker} for {what} was dropped ({reason}) at {at}.",
    events.DRAINED: "Every job had settled (drained) at {at}.",
    events.DRAIN_TIMEOUT: "The run stopped waiting for jobs to settle at {at}.",
}


class _Fields(dict[str, Any]):
    """A sentence's fields: one its entry's data lacks reads None."""

    def __missing__(self, key: str) -> None:
        return None


def _at(t: float) -> str:
    return f"+{t:.3f} s"


def _fault_words(kind: str, target: str, data: dict[str, Any], healed: bool) -> str:
    """The kind's own words (FaultKind.applied_words, healed_words), else plain ones any kind fits."""
    who = "the server" if target == events.BACKEND else target
    found = fault_kind(kind)
    if healed:
        return (found.healed_words or "the {kind} fault on {who} was healed").format_map(
            _Fields({**data, "kind": kind, "who": who}))
    pids = f" (pids {', '.join(str(p) for p in data.get('pids') or [])})" if data.get("pids") else ""
    return (found.applied_words or "a {kind} fault took hold of {who}").format_map(
        _Fields({**data, "kind": kind, "who": who, "pids": pids}))


def _sentence(entry: dict[str, Any], job: str | None, journal: dict[str, Event]) -> str:
    kind, worker, data = str(entry.get("kind")), entry.get("worker") or "?", entry.get("data") or {}
    what = entry.get("job") or job or "the job"
    at = _at(float(entry.get("t") or 0.0))
    sentence = SENTENCES.get(kind)
    if sentence is not None:
        return sentence.format_map(_Fields({**data, "what": what, "worker": worker, "at": at}))
    if kind == events.PROBE_CLAIM:
        token = f" (token {short(data['token'])})" if data.get("token") else ""
        return f"{worker} claimed {what} at {at}{token}."
    if kind == events.PROBE_HEARTBEAT:
        if data.get("ok"):
            return f"{worker} extended its lease on {what} at {at} (heartbeat accepted)."
        return f"{worker}'s heartbeat on {what} failed at {at}: the queue no longer granted it the job."
    if kind == events.PROBE_EFFECT:
        refused = " and the effect boundary refused it" if data.get("accepted") is False else ""
        return f"{worker} made its effect for {what} at {at}{refused}."
    if kind == events.PROBE_ACK:
        source = str(data.get("source") or events.WORKER_REPORT)
        ok = data.get("ok") if source in events.ACK_SOURCES else None  # a result store decides no ack
        outcome = ("the queue accepted it" if ok is True else "the queue rejected it" if ok is False
                   else "whether the queue took it is unknown")
        said = "" if source == events.WORKER_REPORT else f" (the evidence: {evidence_words(source)})"
        return f"{worker} acknowledged {what} at {at}, and {outcome}{said}."
    if kind == events.COMPLETION:
        source = str(data.get("source") or events.QUEUE_RECORD)
        return (f"The control answered that {worker}'s completion of {what} was {data.get('outcome')}, at {at} "
                f"(read from {evidence_words(source)}).")
    if kind == events.PROBE_ABANDON:
        reason = f" ({data['reason']})" if data.get("reason") else ""
        return f"{worker} abandoned {what} at {at}{reason}."
    if kind in (events.FAULT, events.FAULT_APPLIED, events.FAULT_HEALED):
        fid = str(data.get("id"))
        fault = journal.get(fid)
        fkind = str(data.get("kind") or (fault.data.get("kind") if fault else "fault"))
        target = str(data.get("target") or (fault.data.get("target") if fault else worker))
        if kind == events.FAULT:
            gate = f" at gate {data['gate']}" if data.get("gate") else ""
            return f"The nemesis set out to {fkind} {target} (fault {fid}{gate}) at {at}."
        return f"{_fault_words(fkind, target, data, kind == events.FAULT_HEALED)} at {at} (fault {fid})."
    if kind == events.PROCESS_EXIT:
        how = f"killed by {data['signal']}" if data.get("signal") else f"with code {data.get('returncode')}"
        why = "" if data.get("expected", True) else ", on its own"
        return f"{worker} exited ({how}{why}) at {at}."
    if kind == events.SNAPSHOT:
        owner = f", claimed by {data['owner']}" if data.get("owner") else ""
        attempts = f", after {data['attempts']} attempt(s)" if data.get("attempts") is not None else ""
        return f"The final snapshot found {what} {data.get('state')}{owner}{attempts} at {at}."
    if kind.startswith(events.QUEUE_PREFIX):
        verb = {events.QUEUE_CLAIM: f"a claim of {what} by {worker}",
                events.QUEUE_COMPLETE: f"a completion of {what} by {worker}",
                events.QUEUE_RELEASE: f"{what} taken back from {worker}",
                events.QUEUE_FAIL: f"{what} recorded failed ({worker})"}.get(kind, kind)
        order = f" (its order {data['order']})" if data.get("order") is not None else ""
        return f"The queue's own record shows {verb}{order}, read at {at}."
    who = f" ({worker})" if entry.get("worker") else ""
    return f"{kind}{who} at {at}."


def in_words(witness: list[dict[str, Any]], job: str | None, lease: float | None,
             journal: dict[str, Event]) -> list[tuple[int | None, str]]:
    """The witness as sentences (its seq, the sentence), with the lease ends it implies written in where
    they fall: an execution's lease ran out when its claim or last accepted heartbeat + lease_s passed
    before its next extension, ack or abandon (a killed worker's lease runs out all the same)."""
    out: list[tuple[int | None, str]] = []
    due: dict[tuple[str, str | None], float] = {}
    for entry in witness:
        t = float(entry.get("t") or 0.0)
        for key, when in sorted(due.items(), key=lambda item: item[1]):
            if when < t:
                out.append((None, f"{key[0]}'s lease on {job} ran out at {_at(when)} (its claim or last accepted "
                                  f"heartbeat + lease_s {lease} s)."))
                del due[key]
        out.append((entry.get("seq"), _sentence(entry, job, journal)))
        kind, worker, data = entry.get("kind"), str(entry.get("worker") or "?"), entry.get("data") or {}
        if lease is None or entry.get("job") not in (job, None):
            continue
        key = (worker, data.get("token"))
        if kind == events.PROBE_CLAIM or (kind == events.PROBE_HEARTBEAT and data.get("ok")):
            due[key] = t + lease
        elif kind in (events.PROBE_ACK, events.PROBE_ABANDON):
            due.pop(key, None)  # released: a worker's exit is no release, its lease runs on in the queue
    return out


def abridged(sentences: list[tuple[int | None, str]]) -> list[tuple[int | None, str]]:
    """A long proof as its head, a gap (seq GAP) and its tail: the page stays short, verdict.json has it all."""
    if len(sentences) <= HEAD + TAIL + 1:
        return sentences
    gap = len(sentences) - HEAD - TAIL
    return sentences[:HEAD] + [(GAP, f"… {gap} more steps (verdict.json has the whole witness) …")] + sentences[-TAIL:]
