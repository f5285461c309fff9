"""Runs schedules as real runs of one target variant: each schedule written out as a scenario file and
run by the suite's runner as a `chaos run` process of its own, then read back (verdict and ledger)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.explore.scenario_file import write
from chaos.explore.schedule import Schedule
from chaos.explore.windows import Reading, read
from chaos.ledger import read_events
from chaos.suite.cell import Cell, Planned
from chaos.suite.runner import CellRun, SuiteRunner


@dataclass(frozen=True)
class Variant:
    """The target as explored: its name and the settings it runs with (as a suite cell has them)."""

    target: str
    params: tuple[str, ...] = ()
    contract: tuple[str, ...] = ()
    backend: str | None = None
    worker_image: str | None = None

    def cell(self, scenario: str) -> Cell:
        return Cell(self.target, scenario, params=self.params, contract=self.contract, backend=self.backend,
                    worker_image=self.worker_image)

    @property
    def name(self) -> str:
        return self.cell("-").variant

    def command(self, scenario: Path) -> str:
        """The `chaos run` command that runs `scenario` against this variant."""
        return " ".join(["chaos", "run", "--target", self.target, "--scenario", str(scenario),
                         *self.cell(str(scenario)).settings_argv()])


@dataclass(frozen=True)
class Attempt:
    """One schedule's run: its verdict, the violation kinds it showed, the windows it reached."""

    schedule: Schedule
    verdict: str
    violations: tuple[str, ...]
    reading: Reading
    run_dir: str | None
    seconds: float
    why: str = ""  # an inconclusive or error verdict's first reason

    @property
    def windows(self) -> frozenset[str]:
        return frozenset(self.reading.windows)

    def line(self, number: int) -> str:
        found = f" {', '.join(self.violations)}" if self.violations else ""
        why = f" ({self.why})" if self.why else ""
        return (f"[{number}] {self.verdict.upper():<12}{found} size {'/'.join(map(str, self.schedule.size))} "
                f"windows {len(self.windows)} ({self.seconds:.1f}s){why}")

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Attempt:
        """An attempt back from `to_dict` (a shard's log, a run another shard shared)."""
        reading = Reading(set(raw["windows"]), raw["overlap_s"], raw["exposure_s"])
        return cls(Schedule.from_dict(raw["schedule"]), raw["verdict"], tuple(raw["violations"]), reading,
                   raw["run_dir"], raw["seconds"], raw["why"])

    def to_dict(self) -> dict[str, Any]:
        return {"schedule": self.schedule.to_dict(), "size": list(self.schedule.size), "verdict": self.verdict,
                "violations": list(self.violations), "windows": sorted(self.windows),
                "exposure_s": round(self.reading.exposure_s, 3), "overlap_s": round(self.reading.overlap_s, 3),
                "run_dir": self.run_dir, "seconds": round(self.seconds, 2), "why": self.why}


class ScheduleRunner:
    def __init__(self, variant: Variant, home: Path, jobs: int = 1) -> None:
        self.variant = variant
        self.home = home
        self.jobs = jobs

    def _run(self, planned: list[Planned]) -> list[CellRun]:
        return SuiteRunner(self.home, self.jobs, False, lambda line: None, live=False).run(planned)

    def attempt(self, schedule: Schedule, number: int) -> Attempt:
        path = write(self.home / "schedules" / f"schedule_{schedule.digest()}.py", schedule,
                     f"Schedule {schedule.digest()} of chaos explore against {self.variant.name}.")
        (result,) = self._run([Planned(self.variant.cell(str(path)), seed=number)])
        return attempt_of(schedule, result, self.home)

    def replay(self, scenario: Path, schedule: Schedule, times: int) -> list[Attempt]:
        """Run a written scenario `times` times, at most `jobs` at once."""
        cell = self.variant.cell(str(scenario))
        results = self._run([Planned(cell, seed=1, repeat=i) for i in range(1, times + 1)])
        return [attempt_of(schedule, result, self.home) for result in results]


def attempt_of(schedule: Schedule, result: CellRun, home: Path) -> Attempt:
    verdict = result.verdict or {}
    kinds = tuple(sorted({str(v.get("kind")) for v in verdict.get("violations") or []}))
    reading = Reading()
    run_dir = home / result.run_dir if result.run_dir is not None else None
    if run_dir is not None and (run_dir / "ledger.sqlite").exists():
        lease_s = (verdict.get("contract") or {}).get("lease_s")
        reading = read(read_events(run_dir / "ledger.sqlite"), lease_s)
    status = str(verdict.get("verdict") or "error")
    why = "" if status in ("pass", "fail") else (verdict.get("error") or "; ".join(verdict.get("notes") or [])
                                                 or "; ".join(result.outcome.reasons))
    return Attempt(schedule, status, kinds if status == "fail" else (), reading, str(run_dir) if run_dir else None,
                   result.duration_s,
                   str(why)[:300])
