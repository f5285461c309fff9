"""The known-answer matrix (targets/known_answers.toml) is a suite file: `chaos suite` runs every cell
through the real CLI against real servers, two at a time, and judges each against its known answer
(`chaos.suite.expect`: the verdict and exit code, the violation it must name with its witness, every
fault exercised, the exact job counts and recovery times where the cell states them, the anomalies),
sharing a RabbitMQ node per worker slot where a cell needs no control of the broker. This test drives
that suite, and checks beside it that nothing of any run was left running or stopped and that no job is
lost where the scenario promises it.

The rest checks the file itself against docs/known-answers.md and its own rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from chaos.backends.registry import provider
from chaos.discovery import find_scenario, find_target
from chaos.errors import ConfigError
from chaos.known_answers import bundled_scenarios, correct_targets, load, matrix_file
from chaos.leftovers import run_processes
from chaos.reports.schemas import schema
from chaos.runtime.run import check_faults
from tests.integration.runner import REPO, chaos

MATRIX = load()


def test_the_known_answer_suite(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    result = chaos("suite", str(matrix_file()), "-j", "2", "--out", str(out), runs_dir=tmp_path, timeout=3600)
    document = json.loads((out / "suite.json").read_text())
    wrong = [f"{c['variant']} x {c['scenario_variant']}: {c['status']}: {'; '.join(c['reasons'])} ({c['run_dir']})"
             for c in document["cells"] if c["status"] not in ("pass", "xfail")
             and not (c["status"] == "skipped" and c["expected"]["verdict"] == "skipped")]
    assert result.code == 0 and not wrong, "\n".join(wrong) + result.stderr
    assert len(document["cells"]) == len(MATRIX)
    jsonschema.validate(document, schema("suite"))
    for cell in document["cells"]:
        scenario, violation = cell["scenario"], cell["expected"]["violation"]
        verdict = json.loads((out / cell["run_dir"] / "verdict.json").read_text())
        jsonschema.validate(verdict, schema("verdict"))
        if ("restart" in scenario or scenario.startswith("kill")) and violation != "lost":
            assert verdict["counts"].get("lost", 0) == 0, f"{cell['key']}: every job survives a restart during recovery"
        assert not run_processes(out / cell["run_dir"]), cell["key"]


def test_the_known_answers_page_names_the_correct_targets_and_the_cells() -> None:
    # the listed cells' table is generated from the file (docs/reference/known-answers.md): only the prose is
    # written by hand, and this keeps its claims true
    section = (REPO / "docs" / "known-answers.md").read_text()
    named = re.search(r"against\s+every correct target\*\*\s+\(([^)]*)\)", section)
    assert named is not None and re.findall(r"`(\w+)`", named.group(1)) == correct_targets()
    assert f"every cell ({len(MATRIX)})" in section


def test_every_correct_target_has_a_cell_for_every_scenario_its_provider_takes() -> None:
    cells = {(cell.target, cell.scenario): cell for cell in MATRIX if cell.instead_of_default
             or not (cell.params or cell.contract or cell.scenario_params)}
    for target in correct_targets():
        for scenario in bundled_scenarios():
            cell = cells.get((target, scenario))
            if cell is None:  # only where a run refuses it: the local provider (or the target) lacks what it needs
                with pytest.raises(ConfigError, match="cannot run"):  # no capability, or no worker containers
                    check_faults(find_scenario(scenario), provider(find_target(target).backend, "local"),
                                 find_target(target))
                continue
            # skipped: the scenario's REQUIRES refuses the target's contract (a listed cell says so)
            assert cell.verdict == "pass" or (cell.listed and (cell.rule or cell.verdict == "skipped")), cell


def test_every_failing_cell_names_the_rule_it_breaks() -> None:
    assert all(cell.rule for cell in MATRIX if cell.verdict == "fail")
