"""Every violation kind the checker can emit, with its rule, its usual fix and the contract keys that govern it:
the one list a `Violation` must name a kind of, which the docs' violations page and the reports' links to it
are made from. The judgement itself stays in `chaos.check.judgement`, `chaos.check.scan` and
`chaos.check.queue_record`; a kind added there without a line here fails at its first violation."""

from __future__ import annotations

from dataclasses import dataclass

DOCS_PAGE = "docs/reference/violations.md"  # in the repository; the built site has it as reference/violations/


@dataclass(frozen=True)
class ViolationKind:
    name: str
    rule: str  # when the checker calls it, in a sentence or two
    fix: str  # what usually mends the queue it catches
    keys: tuple[str, ...] = ()  # the contract keys that govern it, or let a target opt out of it


def doc_anchor(kind: str) -> str:
    """Where the docs explain `kind`: the page and the heading's anchor (the kind itself)."""
    return f"{DOCS_PAGE}#{kind}"


_KINDS = (
    ViolationKind(
        "lost",
        "A job was enqueued, never effected, and the queue no longer has it.",
        "Keep a claimed job in the queue's store until it is acknowledged (move it to a processing list or mark "
        "it claimed, never pop it), and make the store survive a restart (an append-only file, a durable queue).",
        ("on_owner_loss",)),
    ViolationKind(
        "stuck",
        "A job was still pending or claimed at the end of the run, past the recovery bound, while some worker "
        "was free to take it for longer than that bound.",
        "Give ownership a deadline the queue enforces (a lease, a visibility timeout, a reconciler of dead "
        "workers' jobs), shorter than the recovery bound.",
        ("recovery_bound_s",)),
    ViolationKind(
        "unexpected",
        "An effect was reported for a job that was never enqueued.",
        "Make the worker report the job's own id, as the queue handed it over, and run only jobs of this run's "
        "queue (a queue name or key prefix of its own)."),
    ViolationKind(
        "redelivered",
        "A job made more than one effect, one execution after another, under a contract that promises at most "
        "one (exactly-once-effect, at-most-once).",
        "Deduplicate the effect by the job's key or fence it by the claim's token, or promise at-least-once.",
        ("delivery",)),
    ViolationKind(
        "overlapped",
        "Two executions of one job that each made an accepted effect worked at once: one claimed the job "
        "before the other's last effect.",
        "Stop the stale owner before it acts (a watchdog on failed lease extensions), renew the lease while the "
        "handler runs, and fence the effect by the claim's token.",
        ("overlap", "delivery")),
    ViolationKind(
        "dead_lettered",
        "A job was dead-lettered after a number of attempts other than max_attempts, or it was not a poison job.",
        "Count every claim as an attempt, once, and dead-letter only a job whose handler failed max_attempts "
        "times.",
        ("max_attempts", "on_owner_loss", "owner_loss_counts_attempt")),
    ViolationKind(
        "redelivered_after_owner_loss",
        "A job was claimed again after a kill or restart ended the execution that held it, under a contract "
        "that promised to record it failed or forget it (on_owner_loss = fail or drop).",
        "Record a dead owner's job failed (or drop it) instead of redelivering it, or promise on_owner_loss = "
        "redeliver.",
        ("on_owner_loss",)),
    ViolationKind(
        "stale_ack_accepted",
        "The queue accepted an acknowledgement from an execution that had already lost the job to a later "
        "claim.",
        "Make the ack conditional on the claim's token (and the job's status): UPDATE ... WHERE token = $1, a "
        "compare-and-delete, a receipt the queue checks.",
        ("stale_ack",)),
    ViolationKind(
        "stale_extension_accepted",
        "The queue accepted a lease extension from an execution that had already lost the job to a later claim.",
        "Make the extension conditional on the claim's token, as the ack is.",
        ("stale_ack", "lease_scope")),
    ViolationKind(
        "premature_reclaim",
        "Another worker claimed the job while its owner was alive, unfaulted, still in its handler and within "
        "its lease.",
        "Renew the lease from a thread beside the handler (not inside it), measure the lease on one clock (the "
        "server's), and reclaim only jobs whose lease has ended.",
        ("lease_s", "heartbeat_s", "lease_tolerance_s")),
    ViolationKind(
        "early_reclaim",
        "The job was claimed from an owner that had not given it back sooner than that owner's lease allowed "
        "(its last accepted claim or extension plus lease_s, less the tolerance), even when the owner had just "
        "died: a lease outlives its owner.",
        "Reclaim a job only once its lease has ended on the server's clock, also on startup and after a restart "
        "of the server.",
        ("lease_s", "lease_tolerance_s", "lease_scope")),
    ViolationKind(
        "heartbeat_gap",
        "An owner's consecutive accepted extensions (or its claim and first extension) were further apart than "
        "its lease plus the tolerance, with no fault on its worker to explain it.",
        "Extend more often than the lease lasts (a period of a third of it is usual), and refuse an extension of "
        "a lease that has already ended.",
        ("lease_s", "reservation_s", "heartbeat_s", "lease_tolerance_s")),
    ViolationKind(
        "work_after_known_loss",
        "An execution made an effect after its own lease extension had failed, with no later one succeeding: "
        "it went on with work it knew it had lost.",
        "A watchdog: stop the handler (or skip its effect) when an extension fails.",
        ("watchdog",)),
    ViolationKind(
        "effect_after_lease_loss",
        "An execution made an effect after another had claimed the job.",
        "Stop a stale owner before its effect (renew the lease while it works, a watchdog), and fence the "
        "effect by the claim's token; or promise overlap = after-lease-loss with at-least-once.",
        ("overlap", "delivery")),
    ViolationKind(
        "recovery_bound_exceeded",
        "A job whose owner was killed, stopped, restarted or cut off (or whose server restarted) was reclaimed "
        "later than recovery_bound_s, counting only the time some worker was free to take it.",
        "Shorten what it takes to notice a lost owner (the lease, the heartbeat timeout, the reconciler's "
        "period), or promise a longer bound.",
        ("recovery_bound_s", "lease_s", "reservation_s")),
    ViolationKind(
        "claim_after_completion",
        "A job was claimed after the queue had accepted a completion of it.",
        "Delete or mark the job done in the same step that accepts the ack, and let a sweep retry only jobs "
        "that no completion ended.",
        ("rerun_after_completion",)),
)
VIOLATION_KINDS: dict[str, ViolationKind] = {kind.name: kind for kind in _KINDS}
