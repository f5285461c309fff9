"""A target's contract: what its queue promises under failure, which the checker judges against."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from chaos.errors import ConfigError

MAX_SECONDS = 1_000_000.0  # eleven days: longer than any run, short enough for every timer the suite sets
SECONDS = f"a finite, positive number of seconds (at most {MAX_SECONDS:.0f})"
DELIVERY = ("at-least-once", "at-most-once", "exactly-once-effect")
STALE_ACK = ("rejected", "accepted")
OVERLAP = ("never", "after-lease-loss")
ON_OWNER_LOSS = ("redeliver", "fail", "drop")
LEASE_SCOPE = ("job", "worker")
RERUN_AFTER_COMPLETION = ("forbidden", "allowed")
# What each enumerated key decides, for its error: a user who mistyped a value learns what the choice means.
MEANING = {
    "on_owner_loss": "what the queue does with a job whose owner died, its execution ended by a kill or restart: "
                     "run it again, record it failed (dead) and never run it again, or forget it",
    "lease_scope": "what one heartbeat extends: the lease of the job it names, or of every job its worker holds",
    "rerun_after_completion": "whether the queue may deliver a job again after it accepted a completion of it (an "
                              "accepted ack, the control's answer, its own record): never, under every delivery "
                              "contract, unless the queue says it re-runs completed jobs",
}


def is_seconds(value: object) -> bool:
    """A duration the suite can wait for: a number (not a boolean), finite, positive, at most MAX_SECONDS."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and 0 < value <= MAX_SECONDS)


@dataclass(frozen=True)
class Contract:
    recovery_bound_s: float
    delivery: str = "at-least-once"
    lease_s: float | None = None
    # A reservation that lasts this long without a renewal but also ends the moment its owner's connection
    # closes (beanstalkd's TTR): the heartbeat gap rule's bound where there is no lease_s (which would also
    # make a reclaim from a just-killed owner early).
    reservation_s: float | None = None
    heartbeat_s: float | None = None
    stale_ack: str = "rejected"
    overlap: str = "never"
    max_attempts: int | None = None
    # The queue stops work it lost: an effect after the execution's own extension failed is a violation
    # (else an anomaly reported with its exposure time).
    watchdog: bool = False
    # How much sooner than its owner's lease allows a reclaim may be reported before it is `early_reclaim`:
    # a probe reaches the ledger a little after the database committed what it reports. Default: 25% of lease_s.
    lease_tolerance_s: float | None = None
    # What the queue promises for a job whose owner died (a kill or restart fault ended its execution while
    # it held the job). "redeliver": another execution takes it (at-least-once recovery). "fail": the queue
    # records it dead and never runs it again (RQ without retries); "drop": it is gone, never run again
    # (Celery's default early ack): under either, a claim after the owner's death is
    # `redelivered_after_owner_loss`, a job that ends dead after it is no `dead_lettered` alarm ("fail"),
    # one gone without an effect is `dropped`, not `lost` ("drop"). A job gone without its owner dying is
    # `lost` under every setting, and one still pending or claimed past the recovery bound is `stuck`.
    on_owner_loss: str = "redeliver"
    # What a heartbeat extends. "job": the named job's lease (one extension per execution). "worker": every
    # job its worker holds (procrastinate's worker heartbeat), whatever job and token the probe names: the
    # heartbeat gap, the owner's lease end for `early_reclaim` and a known loss for `work_after_known_loss`
    # then follow the worker's latest heartbeat (successful, or failed). `stale_extension_accepted` is not
    # judged: a worker's accepted heartbeat proves its own lease renewed, not that the queue still granted it
    # a job taken from it. Reclaim and ack rules do not read heartbeats and are unchanged.
    lease_scope: str = "job"
    # A claim of a job after the queue accepted a completion of it (an accepted ack, by the worker's word or
    # the control's answer, or a completion in the queue's own record) is `claim_after_completion`: a
    # violation under every delivery contract ("forbidden"; at-least-once allows a redelivery when the ack
    # was lost or refused, not after it was accepted), an anomaly only under "allowed".
    rerun_after_completion: str = "forbidden"
    # An owner loss spends an attempt: the queue counts an execution it took back from its owner (dead,
    # frozen, cut off or slow past its lease) toward max_attempts, and dead-letters the job when that was the
    # last one (Oban's Lifeline, pg_lifeline's rescuer). A healthy job dead after exactly max_attempts
    # claims that each lost it is then the promise kept; one dead sooner is still `dead_lettered`.
    owner_loss_counts_attempt: bool = False

    @classmethod
    def from_dict(cls, raw: dict[str, Any], where: str) -> Contract:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown contract key(s) {', '.join(unknown)}; expected keys among "
                              f"{', '.join(sorted(known))}.")
        if "recovery_bound_s" not in raw:
            raise ConfigError(f"{where}: the [contract] table needs recovery_bound_s (seconds a job may stay "
                              "unavailable after its owner dies), e.g. recovery_bound_s = 3.0.")
        for key, allowed in (("delivery", DELIVERY), ("stale_ack", STALE_ACK), ("overlap", OVERLAP),
                             ("on_owner_loss", ON_OWNER_LOSS), ("lease_scope", LEASE_SCOPE),
                             ("rerun_after_completion", RERUN_AFTER_COMPLETION)):
            if key in raw and raw[key] not in allowed:
                meaning = f" ({MEANING[key]})" if key in MEANING else ""
                raise ConfigError(f"{where}: contract {key} = {raw[key]!r}; expected one of {', '.join(allowed)}"
                                  f"{meaning}.")
        for key in ("recovery_bound_s", "lease_s", "reservation_s", "heartbeat_s", "lease_tolerance_s"):
            value = raw.get(key)
            if value is not None and not is_seconds(value):
                raise ConfigError(f"{where}: contract {key} = {value!r}; expected {SECONDS}.")
        attempts = raw.get("max_attempts")
        if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1):
            raise ConfigError(f"{where}: contract max_attempts = {attempts!r}; expected a positive integer.")
        if "watchdog" in raw and not isinstance(raw["watchdog"], bool):
            raise ConfigError(f"{where}: contract watchdog = {raw['watchdog']!r}; expected true or false.")
        counts = raw.get("owner_loss_counts_attempt", False)
        if not isinstance(counts, bool) or (counts and attempts is None):
            raise ConfigError(f"{where}: contract owner_loss_counts_attempt = {counts!r}; expected true or false, "
                              "and true only with max_attempts (the attempts an owner loss counts toward).")
        return cls(**raw)

    @property
    def reclaim_tolerance_s(self) -> float:
        """How much sooner than a lease's end a reclaim may be reported (see `lease_tolerance_s`)."""
        if self.lease_tolerance_s is not None:
            return self.lease_tolerance_s
        return 0.25 * (self.lease_s or 0.0)

    @property
    def renewal_bound_s(self) -> float | None:
        """How long an owner may hold a job between accepted extensions: its lease, or its reservation."""
        return self.lease_s if self.lease_s is not None else self.reservation_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
