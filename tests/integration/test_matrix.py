"""Every cell of the known-answer matrix, through the real CLI against real PostgreSQL: the expected
verdict and exit code, the violation it must name, every fault exercised, nothing lost where the
scenario promises it, and no process of the run left running or stopped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.matrix import MATRIX, Cell
from tests.integration.runner import REPO, chaos, run_processes

EXIT = {"pass": 0, "fail": 1}


@pytest.mark.parametrize("cell", MATRIX, ids=[cell.id for cell in MATRIX])
def test_cell(cell: Cell, tmp_path: Path) -> None:
    args = ["run", "--target", cell.target, "--scenario", cell.scenario, "--seed", "1", "--runs-dir", str(tmp_path)]
    for param in cell.params:
        args += ["-p", param]
    result = chaos(*args)
    assert result.code == EXIT[cell.verdict], result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    assert result.stdout.startswith(cell.verdict.upper())
    kinds = {v["kind"] for v in verdict["violations"]}
    if cell.violation is None:
        assert not kinds, result.stdout
    else:
        assert cell.violation in kinds, result.stdout
    assert all(f["exercised"] for f in verdict["faults"]) or cell.verdict == "fail", verdict["faults"]
    if "restart" in cell.scenario or cell.scenario.startswith("kill"):
        assert verdict["counts"]["lost"] == 0, "every job survives a restart during recovery"
    if cell.max_recovery_s is not None:
        assert verdict["recovery"]["max_s"] < cell.max_recovery_s
    assert not run_processes(result.run_dir)


def test_readme_matrix_matches_the_tested_matrix() -> None:
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Known answers"):]
    rows = set(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (\w+) \| `?([\w-]+)`? \|", table, re.MULTILINE))
    expected = {(cell.variant, cell.scenario, cell.verdict, cell.violation or "none") for cell in MATRIX}
    assert rows == expected
