"""Judging from the queue's own record (a target observer's `queue.*` events), beside the workers' probes.

Where a run holds such a record, who completed a job is what the queue committed, not what a handler
said: a completion the queue accepted from a worker that no longer owned the job, by the queue's own
order of claims, releases and completions, is `stale_ack_accepted` whatever that worker reported. The
record is read in the queue's order (`order`), never the ledger's: the observer journals it a moment
after the fact. Where the two sources disagree on a completion, or a worker reported a claim the queue
never made, the report says so (`sources_disagree`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chaos import events
from chaos.check import proofs
from chaos.check.labels import Labels, of_ledger
from chaos.check.verdict import Violation
from chaos.contract import Contract
from chaos.events import Event

STALE = "stale_ack_accepted"
DISAGREE = "sources_disagree"


def covered(ledger: Sequence[Event]) -> frozenset[str]:
    """The record kinds the run's observer covers (none without one)."""
    start = next((e for e in ledger if e.kind == events.OBSERVER_START), None)
    return frozenset(start.data.get("covers", ())) if start is not None else frozenset()


def evidence(covers: frozenset[str]) -> dict[str, str]:
    """Which source judged claims and completions: the queue's record where its observer covers them."""
    return {"claims": "queue" if "claim" in covers else "probes",
            "completions": "queue" if {"claim", "complete"} <= covers else "probes"}


def committed(ledger: Sequence[Event], covers: frozenset[str]) -> dict[tuple[str, str, str], Event]:
    """The record's claims by (job, worker, token), where it covers claims and names the claim's token (a
    claim it does not name cannot be told from another of the same worker's), for the scan to place each
    reported claim in the queue's order (`chaos.check.scan`)."""
    if "claim" not in covers:
        return {}
    names = _suites_names(ledger)
    claims: dict[tuple[str, str, str], Event] = {}
    for event in ledger:
        token = event.data.get("token")
        if event.kind == events.QUEUE_CLAIM and event.job is not None and event.worker and token is not None:
            worker = names.get(event.worker) or event.worker
            claims.setdefault((event.job, worker, str(token)), event)  # the record's tokens are text
    return claims


def _suites_names(ledger: Sequence[Event]) -> dict[str, str | None]:
    """The library's worker ids the probes said they are, mapped to the suite's worker names."""
    return {str(e.data["library_id"]): e.worker for e in ledger
            if e.kind.startswith(events.PROBE_PREFIX) and e.data.get("library_id")}


def judge_record(ledger: Sequence[Event], contract: Contract,
                 covers: frozenset[str]) -> tuple[list[Violation], list[dict[str, Any]]]:
    """Stale completions the queue accepted (violations, or anomalies where stale_ack = accepted), where the
    record covers claims and completions, and the disagreements between the record and the probes on what
    it covers (anomalies)."""
    records: dict[str, list[Event]] = defaultdict(list)
    probes: dict[str, list[Event]] = defaultdict(list)
    origin = ledger[0].mono if ledger else 0.0
    names = _suites_names(ledger)
    labels = of_ledger(ledger)
    for event in ledger:
        if event.job is None:
            continue
        if event.kind.startswith(events.QUEUE_PREFIX):
            # the record names the library's worker id; a probe that said which it is maps it to the suite's
            records[event.job].append(event._replace(worker=names.get(event.worker or "", event.worker)))
        elif event.kind in (events.PROBE_CLAIM, events.PROBE_ACK):
            probes[event.job].append(event)
    violations: list[Violation] = []
    anomalies: list[dict[str, Any]] = []
    for job in sorted(records):
        history = sorted(records[job], key=lambda e: e.data.get("order", 0))
        witness = _witness(history, probes[job], origin, labels)
        for completion, took, stale in _stale_completions(history) if {"claim", "complete"} <= covers else ():
            owner = took.worker if took is not None and took.kind == events.QUEUE_CLAIM else None
            by = f"after {labels.of_record(took)} claimed it" if owner and took else "after the queue had taken it back"
            stale_one = labels.of_record(completion)
            message = (f"the queue's own record shows a completion of {job} by {stale_one} accepted {by}: "
                       f"two owners' word on one job, and the queue took the stale one's (judged from the queue's "
                       f"record, order {completion.data.get('order')})")
            detail = {"source": "queue", "worker": completion.worker, "owner": owner}
            if contract.stale_ack == "accepted":
                anomalies.append({"kind": STALE, "job": job, "exposure_s": 0.0, "source": "queue",
                                  "message": message + "; allowed: stale_ack = accepted"})
            else:
                proof = proofs.stale_completion(origin, took, stale, completion,
                                                {e.seq: labels.of_record(e) for e in (took, stale, completion)
                                                 if e is not None})
                violations.append(Violation(STALE, job, f"{message}; the contract says stale_ack = "
                                            f"{contract.stale_ack}", witness, detail, proof.premises,
                                            proof.conclusion))
        anomalies += _disagreements(job, history, probes[job], covers, labels)
    return violations, anomalies


def _stale_completions(history: list[Event]) -> list[tuple[Event, Event | None, Event | None]]:
    """Each accepted completion by an actor other than the job's owner at that point of the queue's order
    (the actor of its latest claim, none once the queue released or failed it), with the record that took
    the job from that actor (the owner's claim, or the release or failure) and the actor's own last claim."""
    owner: str | None = None
    took: Event | None = None
    completed_by: str | None = None
    claims: dict[str | None, Event] = {}
    stale: list[tuple[Event, Event | None, Event | None]] = []
    for record in history:
        if record.kind == events.QUEUE_CLAIM:
            owner, completed_by, took = record.worker, None, record
            claims[record.worker] = record
        elif record.kind in (events.QUEUE_RELEASE, events.QUEUE_FAIL):
            owner, took = None, record
        elif record.kind == events.QUEUE_COMPLETE and record.worker is not None:
            if record.worker != owner and record.worker != completed_by:
                stale.append((record, took, claims.get(record.worker)))
            elif record.worker == owner:
                completed_by = owner
    return stale


def _disagreements(job: str, history: list[Event], probes: list[Event], covers: frozenset[str],
                   labels: Labels) -> list[dict[str, Any]]:
    """A worker's accepted ack the queue never recorded, a completion the queue accepted that its worker
    reported refused or never reported, a claim a worker reported that the queue never made."""
    found: list[str] = []
    claimed = {r.worker for r in history if r.kind == events.QUEUE_CLAIM}
    completed = {r.worker for r in history if r.kind == events.QUEUE_COMPLETE}
    reported = {p.worker for p in probes if p.kind == events.PROBE_ACK and p.data.get("ok") is not False}
    for probe in probes:
        if probe.kind == events.PROBE_CLAIM and "claim" in covers and probe.worker not in claimed:
            found.append(f"{labels.of_event(probe) or probe.worker} reported a claim of {job} that the "
                         "queue's record does not show")
        elif (probe.kind == events.PROBE_ACK and "complete" in covers and probe.data.get("ok") is True
              and probe.worker not in completed):
            found.append(f"{probe.worker} reported its ack of {job} accepted, but the queue's record shows no "
                         f"completion by {probe.worker}")
    for worker in sorted(w for w in completed - reported if w is not None):
        found.append(f"the queue's record shows a completion of {job} by {worker}, which {worker} never reported "
                     "as accepted")
    return [{"kind": DISAGREE, "job": job, "exposure_s": 0.0, "source": "queue", "message": line} for line in found]


def _witness(history: list[Event], probes: list[Event], origin: float, labels: Labels) -> list[dict[str, Any]]:
    """The queue's record in its own order, then the workers' claims and acks of the job, each that belongs
    to an execution with its label."""
    entries = []
    for e in [*history, *probes]:
        entry = {"seq": e.seq, "t": round(e.mono - origin, 4), "kind": e.kind, "job": e.job, "worker": e.worker,
                 "data": e.data}
        named = e.data.get("token") is not None or e.kind.startswith(events.PROBE_PREFIX)
        label = labels.of_event(e) if named else None
        if label is not None:
            entry["label"] = label
        entries.append(entry)
    return entries
