"""The known-answer matrix: targets and variants x scenarios, the verdict each cell must give, and the
violation it must name. The README's table is checked against this list, so the two cannot drift."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cell:
    target: str
    scenario: str
    verdict: str
    violation: str | None = None
    params: tuple[str, ...] = ()
    max_recovery_s: float | None = None

    @property
    def variant(self) -> str:
        return " ".join([self.target, *self.params])

    @property
    def id(self) -> str:
        return "-".join([self.target, *self.params, self.scenario])


CHECKLIST = ["kill_after_effect_before_ack", "stop_past_deadline", "restart_backend_during_recovery",
             "restart_worker_during_recovery", "lease_shorter_than_handler", "poison_job_dead_letters",
             "worker_clock_skew", "no_faults"]

MATRIX: list[Cell] = [
    *(Cell("pg_lease", scenario, "pass") for scenario in CHECKLIST),
    Cell("pg_lease", "stop_past_deadline", "fail", "stale_ack_accepted", ("ack=unconditional", "watchdog=off")),
    Cell("pg_lease", "lease_shorter_than_handler", "fail", "premature_reclaim", ("heartbeat=inline",)),
    Cell("pg_lease", "worker_clock_skew", "fail", "premature_reclaim", ("clock=worker",)),
    Cell("pg_naive", "kill_after_effect_before_ack", "fail", "stuck"),
    Cell("pg_naive", "restart_backend_during_recovery", "fail", "stuck"),
    Cell("pg_txlock", "kill_after_effect_before_ack", "pass", max_recovery_s=1.0),
    Cell("pg_advisory", "kill_after_effect_before_ack", "pass", max_recovery_s=1.0),
    Cell("pg_lifeline", "kill_after_effect_before_ack", "pass"),
    Cell("pg_lifeline", "lease_shorter_than_handler", "fail", "premature_reclaim"),
    Cell("pg_txlock", "restart_backend_during_recovery", "pass"),
    Cell("pg_advisory", "restart_backend_during_recovery", "pass"),
    Cell("pg_lifeline", "restart_backend_during_recovery", "pass"),
]
