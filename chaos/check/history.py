"""The checker's model of a run, as the ledger tells it: per job its executions, effects, findings and
recoveries; per fault what it did and to whom; per worker its process events.

An *execution* is one `probe.claim` of a job by (worker, token). It ends at that token's ack (accepted or
not) or abandon, at the exit of its worker process, or when a kill or restart fault is applied to its
worker. A SIGSTOP does not end it: a stopped owner resumes and keeps working. A new claim of the job
*supersedes* the job's previous execution (ownership moved on), whether or not that execution had ended.
`chaos.check.scan` builds this model in one pass; `chaos.check.judgement` and `chaos.check.fault_reports`
read it. What a fault does to executions is its kind's business (`chaos.faults`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from chaos.check.labels import Labels
from chaos.check.verdict import Premise
from chaos.events import Event

GLOBAL = "*"  # context key of events naming no worker or target (such as the backend's own)


class Execution:
    """One claim of a job by (worker, token), until its ack, abandon, process exit or kill.
    Compared and hashed by identity."""

    __slots__ = ("job", "worker", "token", "pid", "claim", "at", "since", "end", "ended_by", "last_effect",
                 "superseded_by", "extended_at", "extended_by", "extended_seq", "gap_s", "gap", "lost_at",
                 "stale_extended", "late_beat", "covered", "died_by", "label")

    def __init__(self, job: str, worker: str, token: Any, pid: Any, claim: Event) -> None:
        self.job = job
        self.worker = worker
        self.token = token
        self.pid = pid
        self.claim = claim
        # When it claimed, as far as the ledger proves: its report's arrival, or earlier for a claim sent
        # before a fault froze or killed its worker (`chaos.check.in_flight`); `since` is the last seq before
        # that time, so a fault journaled after it counts as since the claim.
        self.at = claim.mono
        self.since = claim.seq
        self.end: Event | None = None
        self.ended_by: str | None = None
        self.last_effect: Event | None = None  # its latest accepted effect
        self.superseded_by: Execution | None = None  # the next claim of the job (ownership moved on)
        self.extended_at = claim.mono  # its last accepted claim or extension
        self.extended_by = claim  # that claim or extension
        self.extended_seq = claim.seq  # a fault after this seq explains a gap before the next extension
        self.gap_s = 0.0  # its longest gap between accepted extensions that no fault explains, and where
        self.gap: Gap | None = None
        self.lost_at: Event | None = None  # its failed extension, unless a later one succeeded
        self.stale_extended = False  # a stale extension of it was found (reported once)
        self.late_beat: Event | None = None  # its first heartbeat reported after it was superseded
        self.covered = False  # claimed while a fault suspended its worker: the claim may predate the fault
        # The kill or restart that ended it while it still held the job (no claim since): its owner died,
        # which the contract's on_owner_loss says what the queue then does about.
        self.died_by: FaultHistory | None = None
        # Its label (`chaos.check.labels`: w1#2, the worker's second claim of the run), set by the scan; the
        # token stays in details and the witness.
        self.label: str | None = None

    def who(self) -> str:
        """How a message names it: by its label, never its 32-hex token."""
        return self.label or self.worker


@dataclass(slots=True)
class Gap:
    """Two consecutive accepted extensions of one execution (or its claim and its first extension): the
    heartbeat gap rule compares their distance with the lease, which only the contract knows."""

    seconds: float
    since: Event  # the claim or extension before the gap
    until: Event  # the extension after it


class Proof(NamedTuple):
    """A violation's minimal proof (`chaos.check.proofs`): the premises, the conclusion, and the events the
    premises cite (for the witness to hold them)."""

    premises: tuple[Premise, ...]
    conclusion: str
    cited: tuple[Event, ...]


@dataclass(slots=True)
class Finding:
    """An anomaly proven by the events alone; the contract decides later whether it is a violation."""

    kind: str
    seq: int
    message: str
    exposure_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    # premature_reclaim: seconds from the owner's last accepted claim or extension to the reclaim, for the
    # contract to tell a lease that ran out from one still running
    renewed_s: float | None = None
    # The rule's minimal proof, from the events it relied on: built only when the finding is emitted as a
    # violation (`chaos.check.proofs`)
    proof: Callable[[], Proof] | None = None


@dataclass(slots=True)
class Reclaim:
    """A claim that took the job from an owner that had not released it (no ack or abandon): rule 3
    compares it with the owner's lease, which only the contract knows."""

    owner: Execution
    claimer: Execution
    excused: bool  # a fault suspended the owner, so its last extension's report may have come late


@dataclass(slots=True)
class Recovery:
    """A job reclaimed after a fault took its owner: how long that took, and who was involved."""

    seconds: float
    fault: str
    owner: str
    by: str
    claim_seq: int  # the claim that recovered the job


@dataclass(slots=True)
class Return:
    """An owner a fault took (it stopped renewing: stopped, paused, cut off) that came back and completed
    the job with nobody having claimed it meanwhile: under a lease, the lease rule judges how long the job
    sat unclaimed after the fault took its owner, as the recovery rule does a reclaim (`chaos.check.judgement`)."""

    fault: str
    owner: Execution
    lost_at: float  # when the fault took the owner (its applied time): the wait is counted from here
    lease_from: float  # the owner's last accepted claim or extension before the fault: its lease ran from here
    back: Event  # the owner's first accepted extension (or its accepted ack) after the fault


class JobHistory:
    """What the ledger says about one job, gathered in a single pass (a plain slotted class: one is
    built per job, on the hot path)."""

    __slots__ = ("job", "enqueued", "poison", "events", "effects", "executions", "by_key", "latest",
                 "lost_owner_at", "lost", "recoveries", "reclaims", "findings", "snapshot", "snapshot_at",
                 "completion_proven", "completions", "lease_from", "returned", "returns")

    def __init__(self, job: str) -> None:
        self.job = job
        self.enqueued = False
        self.poison: bool | None = None  # enqueue data `fail`; None when the ledger does not say
        self.events: list[Event] = []
        self.effects: list[Event] = []
        self.executions: list[Execution] = []  # in claim order
        self.by_key: dict[tuple[str, Any], Execution] = {}  # (worker, token) -> its latest execution
        self.latest: Execution | None = None  # the job's current owner (its latest claim)
        self.lost_owner_at: float | None = None
        self.lost: tuple[str, str] | None = None  # (fault id, owner) of the pending loss
        self.recoveries: list[Recovery] = []
        self.reclaims: list[Reclaim] = []
        self.findings: list[Finding] = []
        self.snapshot: dict[str, Any] | None = None
        self.snapshot_at: float | None = None  # when the final snapshot saw it
        # Some completion of it was proven: an ack the queue accepted (by the worker's word or the control's
        # answer), the control's answer that the queue completed it, or a completion in the queue's own
        # record. A snapshot's silence proves none.
        self.completion_proven = False
        # The accepted acks (by the worker's word or the control's answer) of the job's current owner, in
        # ledger order: a claim after one is a re-run of a job the queue had completed
        # (`claim_after_completion`). A superseded owner's accepted ack is `stale_ack_accepted`'s to judge.
        self.completions: list[Event] = []
        # While a fault that takes owners holds the job's owner: when that owner's lease started (its last
        # accepted claim or extension), and its first accepted extension since; for `returns`.
        self.lease_from: float | None = None
        self.returned: Event | None = None
        self.returns: list[Return] = []

    def workers(self) -> set[str]:
        return {e.worker for e in self.events if e.worker is not None}


@dataclass(slots=True)
class FaultHistory:
    """One fault from its journal entry on: whether it was applied and healed, and whose executions it hit."""

    id: str
    kind: str
    target: str | None
    gate: str | None
    seq: int
    data: dict[str, Any] = field(default_factory=dict)
    journal: Event | None = None  # the `fault` entry: the fault is under way from here on
    applied: Event | None = None
    healed: Event | None = None
    victims: list[Execution] = field(default_factory=list)
    observed: dict[str, Any] = field(default_factory=dict)  # what its kind's watch_probe saw


@dataclass
class RunHistory:
    """Everything the single pass gathers: the model, plus the working state the pass itself needs."""

    jobs: dict[str, JobHistory] = field(default_factory=dict)
    open: dict[str, set[Execution]] = field(default_factory=dict)  # worker -> its unended executions
    faults: dict[str, FaultHistory] = field(default_factory=dict)
    gate_matched: dict[str, int] = field(default_factory=dict)
    gates_armed: dict[str, str] = field(default_factory=dict)
    gate_holders: dict[str, tuple[str, float]] = field(default_factory=dict)  # gate -> (the worker it holds, since)
    gate_holds: list[tuple[str, float, float]] = field(default_factory=list)  # (worker, from, until) of each hold
    # "busy" / "held" -> the intervals some worker was free in (`chaos.check.capacity`), swept once on demand
    free_time: dict[str, tuple[list[float], list[float], list[float]]] = field(default_factory=dict)
    exits: dict[str, list[Event]] = field(default_factory=dict)
    starts: dict[str, list[Event]] = field(default_factory=dict)
    backend_restarts: list[Event] = field(default_factory=list)
    unexpected_exits: list[Event] = field(default_factory=list)  # processes that exited without the suite's doing
    refusals: list[Event] = field(default_factory=list)  # the first probe the sink refused, of each kind
    waived: dict[str, str] = field(default_factory=dict)  # declared fault kind -> why the scenario did not inject it
    reaped: dict[tuple[str, Any], Event] = field(default_factory=dict)  # (worker, pid) -> its process.exit
    # worker -> the faults that froze or ended its process (stop, kill, restart), in journal order
    freezes: dict[str, list[FaultHistory]] = field(default_factory=dict)
    last_probe: dict[str | None, float] = field(default_factory=dict)  # worker -> its last probe's time
    # Faults that may explain a heartbeat gap: worker -> seq of the last fault event (journal, applied or
    # healed) that reached it; the same for faults reaching every worker (a backend restart).
    touched: dict[str, int] = field(default_factory=dict)
    gap_floor: float = 0.0  # heartbeat gaps up to this long are not kept (see `scan`)
    worker_leases: bool = False  # lease_scope = worker: a heartbeat extends every job its worker holds
    everyone_touched: int = -1
    everyone_underway: int = 0  # faults on every worker journaled and not yet applied (a restart under way)
    forced_exits: list[Event] = field(default_factory=list)  # SIGKILLed past the shutdown grace
    # Excuses for a reclaim: worker -> seq of the last fault that reached it after a claim; the seq of the
    # last fault that reached every worker (or of a backend restart); workers faulted from the start.
    owner_faulted: dict[str, int] = field(default_factory=dict)
    everyone_faulted: int = -1
    always_excused: set[str] = field(default_factory=set)
    suspended: dict[str, int] = field(default_factory=dict)  # worker -> faults suspending it now
    suspended_since: dict[str, int] = field(default_factory=dict)  # worker -> seq of its last suspending fault
    watched: dict[str, list[FaultHistory]] = field(default_factory=dict)  # worker -> faults watching its probes
    context: dict[str, list[Event]] = field(default_factory=dict)  # faults and process events, by worker
    start: dict[str, Any] = field(default_factory=dict)  # the run.start event's data
    end: dict[str, Any] | None = None  # the run.end event's data
    snapshot_taken: Event | None = None  # the final snapshot's snapshot.taken entry, once it was taken
    origin: float | None = None
    network: dict[str, Any] | None = None  # the network.start event's data: which Toxiproxy
    # (job, worker, token) -> the queue's own record of that claim (`chaos.check.queue_record.committed`):
    # its order is the queue's order of commits, its journal time an upper bound of the commit's
    committed: dict[tuple[str, str, str], Event] = field(default_factory=dict)
    # (job, worker, token) -> the control's answer on an ack its worker reported with ok null
    # (`chaos.check.control_answers`), from a source that decides acks: (True where the queue took that
    # completion, the source)
    answered: dict[tuple[str, str | None, str], tuple[bool, str]] = field(default_factory=dict)
    # the acks about which the control answered that their job completed, the ack undecided (the queue does
    # not record by whose ack, or only a result store answered)
    done: set[tuple[str, str | None, str]] = field(default_factory=set)
    # Each execution's label, handed out at its probe.claim in ledger order, as `chaos.check.labels.of_ledger`
    # does, so the reports that compute labels from the ledger name every execution alike
    labels: Labels = field(default_factory=Labels)

    def job(self, job: str) -> JobHistory:
        history = self.jobs.get(job)
        if history is None:
            history = self.jobs[job] = JobHistory(job)
        return history

    def at(self, event: Event) -> str:
        """The event's time since the first event, as messages show it."""
        return f"+{event.mono - (self.origin or 0.0):.3f}s"
