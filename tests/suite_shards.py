"""Shard outputs as `chaos suite --shard K/N --out DIR` writes them, for runs whose verdicts a test chooses:
the suite's own plan, dealing, judging and report code, and a run dir per run holding its verdict.json,
without starting anything. Merges are then tested on them, as written and as someone edited them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.check.verdict import EXIT_CODES
from chaos.suite.cell import Cell, Planned
from chaos.suite.expect import judge_run
from chaos.suite.plan import Plan
from chaos.suite.report import cell_record, suite_document, write_suite_reports
from chaos.suite.runner import CellRun
from chaos.suite.spec import Suite


def verdict(kind: str = "pass", *violations: str, seed: int = 1, **extra: Any) -> dict[str, Any]:
    """A verdict.json's content as the suite judges it: the verdict, each violation with its witness."""
    return {"verdict": kind, "seed": seed, "violations": [
        {"kind": v, "job": "job-1", "message": "m", "witness": [{"kind": "x"}]} for v in violations],
            "faults": [], "counts": {}, "recovery": {}, "anomalies": [], "notes": [], "reproduce": None, **extra}


def write_shards(root: Path, cells: tuple[Cell, ...], count: int,
                 verdicts: Callable[[Planned], dict[str, Any]] = lambda run: verdict(seed=run.seed),
                 seeds: tuple[int, ...] = (1,), repeat: int = 1,
                 durations: dict[str, float] | None = None) -> list[Path]:
    """`count` shard dirs under `root` (shard1, ...) of the suite of `cells`, each run giving `verdicts(run)`
    (its exit code the verdict's); one dir named whole when `count` is 0 (an unsharded suite's output)."""
    suite = Suite(Path("chaos.toml"), cells, seeds, repeat)
    plan = Plan.of(suite, max(count, 1), durations)
    order = {(run.key, run.repeat): place for place, run in enumerate(plan.runs())}
    outs = []
    for index in range(1, max(count, 1) + 1):
        out = root / (f"shard{index}" if count else "whole")
        out.mkdir(parents=True)
        runs = []
        for run in plan.runs():
            if plan.dealt[run.key] != index:
                continue
            given = verdicts(run)
            run_dir = out / "cells" / run.run_key / "runs" / "run"
            run_dir.mkdir(parents=True)
            (run_dir / "verdict.json").write_text(json.dumps(given))
            (run_dir.parent.parent / "output.log").write_text("the run's output\n")
            code = EXIT_CODES[given["verdict"]]
            runs.append(CellRun(run, judge_run(run.cell, given, code), code, 1.5, str(run_dir.relative_to(out)),
                                given, False))
        write_suite_reports(out, suite_document([cell_record(run, order[(run.planned.key, run.planned.repeat)])
                                                 for run in runs], suite="chaos.toml",
                                                shards=[f"{index}/{count}"] if count else [], duration_s=3.0,
                                                plan=plan.to_json()))
        outs.append(out)
    return outs


def edit(out: Path, change: Callable[[dict[str, Any]], object]) -> None:
    """Change a shard's suite.json in place, as a hand or a tool might."""
    document = json.loads((out / "suite.json").read_text())
    change(document)
    (out / "suite.json").write_text(json.dumps(document))


def record(document: dict[str, Any], key: str) -> dict[str, Any]:
    """The run of `key` in a suite.json's document."""
    found: list[dict[str, Any]] = [cell for cell in document["cells"] if cell["key"] == key]
    (only,) = found
    return only


def holder(outs: list[Path], key: str) -> Path:
    """The shard dir whose runs include `key`."""
    (found,) = [out for out in outs if any(cell["key"] == key
                                           for cell in json.loads((out / "suite.json").read_text())["cells"])]
    return found


def losing(cell: Cell) -> Callable[[Planned], dict[str, Any]]:
    """Verdicts under which every run passes but those of `cell`, which lose a job (a wrong answer where
    the cell must pass): a suite whose merge must never exit 0."""
    return lambda run: verdict("fail", "lost", seed=run.seed) if run.cell == cell else verdict(seed=run.seed)
