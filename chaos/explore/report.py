"""The exploration's report: its budget and what it used, the verdicts of its runs, the windows they
reached (and those never reached), and each violation found with its smallest schedule, how reliably
that schedule replays it, and the scenario file that does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.explore.runs import Attempt
from chaos.explore.search import SearchLog
from chaos.explore.windows import WINDOWS


@dataclass(frozen=True)
class Finding:
    violation: str
    smallest: Attempt  # the smallest schedule that showed it
    first: tuple[int, float]  # (runs, seconds) into the search when it was first seen
    again: int  # of `replays` replays of the written scenario, how many showed it again
    replays: int
    scenario: Path | None  # the written scenario (None: no replay showed any of its violations, so none is kept)
    command: str

    @property
    def classification(self) -> str:
        if self.again == self.replays:
            return "deterministic"
        return f"flaky, {self.again / self.replays:.0%}" if self.again else "gone"

    @property
    def replayed(self) -> str:
        return f"{self.again}/{self.replays}"

    def to_dict(self) -> dict[str, Any]:
        schedule = self.smallest.schedule
        return {"violation": self.violation, "classification": self.classification.split(",")[0],
                "replayed": self.again, "replays": self.replays, "first_found_after_runs": self.first[0],
                "first_found_after_s": round(self.first[1], 1), "schedule": schedule.to_dict(),
                "size": {"steps": schedule.size[0], "jobs": schedule.size[1], "workers": schedule.size[2]},
                "described": schedule.describe(), "scenario": str(self.kept) if self.kept else None,
                "replay": self.command if self.kept else None, "run_dir": self.smallest.run_dir}

    @property
    def kept(self) -> Path | None:
        """The scenario that replays it: none when no replay showed it."""
        return self.scenario if self.again else None


@dataclass(frozen=True)
class Report:
    variant: str
    mode: str
    seed: int
    budget_runs: int
    budget_s: float | None
    faults: tuple[str, ...]
    log: SearchLog
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        """1 when a run violated the contract (each such run is a proof); 0 when runs passed and none
        failed; 3 when every run was a harness error; 4 when none passed or failed (nothing was shown)."""
        verdicts = self.log.verdicts()
        if verdicts["fail"]:
            return 1
        if verdicts["pass"]:
            return 0
        return 3 if verdicts["error"] and verdicts["error"] == len(self.log.attempts) else 4

    def to_dict(self) -> dict[str, Any]:
        windows = self.log.windows()
        return {"variant": self.variant, "mode": self.mode, "seed": self.seed,
                "budget": {"runs": self.budget_runs, "seconds": self.budget_s}, "faults": list(self.faults),
                "used": {"runs": len(self.log.attempts), "seconds": round(max(self.log.elapsed, default=0.0), 1),
                         "stopped_by": self.log.stopped_by},
                "verdicts": dict(self.log.verdicts()),
                "windows": {name: windows.get(name, 0) for name in WINDOWS},
                "findings": [f.to_dict() for f in self.findings], "exit_code": self.exit_code,
                "attempts": [a.to_dict() for a in self.log.attempts]}


def text(report: Report) -> str:
    log = report.log
    budget = f"{report.budget_runs} runs" + (f" or {report.budget_s:.0f} s" if report.budget_s else "")
    used = max(log.elapsed, default=0.0)
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(log.verdicts().items())) or "none"
    lines = [f"explored {report.variant} ({report.mode}, seed {report.seed}, faults "
             f"{', '.join(report.faults) or 'none'})",
             f"budget {budget}; used {len(log.attempts)} runs in {used:.0f} s (stopped by {log.stopped_by})",
             f"verdicts: {verdicts}", "windows reached (runs reaching each):"]
    windows = log.windows()
    for name, meaning in WINDOWS.items():
        lines.append(f"  {windows.get(name, 0):>4}  {name:<33} {meaning}")
    never = [name for name in WINDOWS if not windows.get(name)]
    if never:
        lines.append(f"  never reached: {', '.join(never)}")
    if not report.findings:
        seen = sorted(log.smallest)
        lines.append(f"violations seen (neither replayed nor written): {', '.join(seen)}" if seen
                     else "found: no violation in any run")
    for finding in report.findings:
        schedule = finding.smallest.schedule
        steps, jobs, workers = schedule.size
        lines.append(f"found {finding.violation}: first after {finding.first[0]} runs ({finding.first[1]:.0f} s); "
                     f"smallest schedule {steps} step(s), {jobs} job(s), {workers} worker(s):")
        lines += [f"    {line}" for line in schedule.describe()]
        lines.append(f"  replayed {finding.replayed}: {finding.classification}"
                     + (f"; written to {finding.kept}" if finding.kept else "; no scenario kept for it"))
        if finding.kept:
            lines.append(f"  replay: {finding.command}")
    return "\n".join(lines)
