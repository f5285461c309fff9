"""Verdicts: the checker's output, frozen, serialisable to the verdict.json CI gates on."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from chaos.check.violation_kinds import VIOLATION_KINDS

# skipped: the scenario needs what the contract does not promise (its REQUIRES), so nothing ran: not 0,
# which means a proven pass.
EXIT_CODES = {"pass": 0, "fail": 1, "error": 3, "inconclusive": 4, "skipped": 5}
PREMISE_NOT_HELD = "premise not held"  # how a note on a fault that ended on its deadline, not its condition, begins
OUTCOMES = ("completed", "redelivered", "overlapped", "lost", "dropped", "stuck", "dead_lettered", "unexpected",
            "unsettled", "unknown")


@dataclass(frozen=True)
class Premise:
    """One step of a violation's minimal proof: a fact the rule that fired relied on, in a sentence, and the
    ledger event that shows it (seq None, t set: a fact derived from events, such as a lease's end)."""

    says: str
    seq: int | None = None
    t: float | None = None  # seconds since the run's first event


@dataclass(frozen=True)
class Violation:
    """One broken promise, with the witness: that job's events in order, with the faults around them."""

    kind: str
    job: str | None
    message: str
    witness: list[dict[str, Any]] = field(default_factory=list)
    # Machine-readable facts behind the message (exposure_s, recovery_s, bound_s, workers, tokens, fault...).
    detail: dict[str, Any] = field(default_factory=dict)
    # The minimal proof, computed by the rule that fired: the 2-4 premises that establish it, and what
    # follows from them (the witness keeps the whole history).
    proof: tuple[Premise, ...] = ()
    conclusion: str = ""

    def __post_init__(self) -> None:
        # One list of kinds (chaos.check.violation_kinds): the docs explain each, and reports link to it.
        if self.kind not in VIOLATION_KINDS:
            raise ValueError(f"violation kind {self.kind!r} is not in chaos.check.violation_kinds")


@dataclass(frozen=True)
class FaultReport:
    id: str
    kind: str
    target: str | None
    exercised: bool
    why: str
    gate: str | None = None


@dataclass(frozen=True)
class Verdict:
    verdict: str
    target: str
    scenario: str
    seed: int | None
    contract: dict[str, Any]
    counts: dict[str, int]
    jobs: dict[str, str]
    faults: list[FaultReport]
    violations: list[Violation]
    recovery: dict[str, Any]
    reproduce: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    # What the contract allows but a report should still show: each {kind, job, exposure_s, message}
    # (an effect after lease loss, a stale ack the contract accepts).
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    # Processes that exited without the suite's doing: {worker, pid, role, returncode, signal, log, log_tail}.
    exits: list[dict[str, Any]] = field(default_factory=list)
    # The Toxiproxy behind the workers' proxies, when the scenario had network faults: {kind, url}.
    network: dict[str, Any] | None = None
    # Requests the sink refused (the first of each kind): {from: worker | stranger, status, error, path, seq}.
    # A worker's refused probe makes the run an error; a stranger's (no valid run token) is only reported.
    refused: list[dict[str, Any]] = field(default_factory=list)
    # Which source judged claims and completions: "queue" (a target observer's record of the queue's own
    # commits), "probes" (the workers' reports alone), or for completions "probes and control" (acks the
    # workers reported with ok null judged by the target's control's answer, `Control.completion`); "acks":
    # the sources that decided whether acks were accepted (`events.ACK_SOURCES`, comma-separated), or none.
    evidence: dict[str, str] = field(default_factory=lambda: {"claims": "probes", "completions": "probes"})
    # Where the run came from (chaos.check.provenance): suite_version, target, target_commit, server, python,
    # date, duration_s; each only as far as the ledger records it.
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
