"""Every cell of the known-answer matrix (targets/known_answers.toml), through the real CLI against real
servers (PostgreSQL, Redis, beanstalkd, RabbitMQ): the expected verdict and exit code, the violation it
must name (with its witness), every fault exercised, the exact job counts and recovery times where the
cell states them, nothing lost where the scenario promises it, and no process of the run left running or
stopped.

A RabbitMQ node takes seconds to boot, so the RabbitMQ cells that need no control of the broker (no
broker fault, no parameter of the node) share one node per test process, each run in its own vhost
through the external provider; the others start their own node, as a user's run does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaos.discovery import find_scenario, find_target
from chaos.faults import KINDS
from chaos.known_answers import Cell, bundled_scenarios, correct_targets, load
from chaos.leftovers import run_processes
from tests.integration.runner import REPO, CliResult, chaos

MATRIX = load()


def on_a_shared_broker(cell: Cell) -> bool:
    """A RabbitMQ cell whose run needs no node of its own: no broker fault, no node setting among its params."""
    faults = find_scenario(cell.scenario).faults
    return (find_target(cell.target).backend == "rabbitmq" and not cell.params
            and not any(KINDS[kind].needs for kind in faults))


SHARED = [cell for cell in MATRIX if on_a_shared_broker(cell)]
OWN = [cell for cell in MATRIX if not on_a_shared_broker(cell)]


def in_order(kinds: list[str], expected: tuple[str, ...]) -> bool:
    """Whether `expected` occurs in `kinds` as a subsequence."""
    remaining = iter(kinds)
    return all(kind in remaining for kind in expected)


@pytest.mark.parametrize("cell", OWN, ids=[cell.id for cell in OWN])
def test_cell(cell: Cell, tmp_path: Path) -> None:
    check(cell, chaos(*cell.argv(1, tmp_path)))


@pytest.mark.parametrize("cell", SHARED, ids=[cell.id for cell in SHARED])
def test_cell_on_a_shared_broker(cell: Cell, shared_rabbitmq: dict[str, str], tmp_path: Path) -> None:
    check(cell, chaos(*cell.argv(1, tmp_path), "--backend", "external", env=shared_rabbitmq))


def check(cell: Cell, result: CliResult) -> None:
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    assert result.stdout.startswith(cell.verdict.upper())
    kinds = {v["kind"] for v in verdict["violations"]}
    if cell.violation is None:
        assert not kinds, result.stdout
    else:
        assert cell.violation in kinds, result.stdout
        named = [v for v in verdict["violations"] if v["kind"] == cell.violation]
        assert all(v["witness"] for v in named) and f"violation {cell.violation}" in result.stdout
    for violation in verdict["violations"] if cell.witness_order else []:
        witness = [entry["kind"] for entry in violation["witness"]]
        assert in_order(witness, cell.witness_order), witness
    assert all(f["exercised"] for f in verdict["faults"]) or cell.verdict == "fail", verdict["faults"]
    if ("restart" in cell.scenario or cell.scenario.startswith("kill")) and cell.violation != "lost":
        assert verdict["counts"]["lost"] == 0, "every job survives a restart during recovery"
    assert {name: verdict["counts"][name] for name in cell.counts} == cell.counts
    if cell.max_recovery_s is not None:
        assert verdict["recovery"]["max_s"] < cell.max_recovery_s
    if cell.min_recovery_s is not None:
        if not verdict["recovery"].get("jobs") and cell.server_bug:
            pytest.xfail(f"no recovery at all: {cell.server_bug}")
        assert verdict["recovery"]["min_s"] > cell.min_recovery_s
    if cell.anomalies is not None:
        assert sorted({a["kind"] for a in verdict["anomalies"]}) == sorted(cell.anomalies), verdict["anomalies"]
        assert all(a["exposure_s"] > 0 for a in verdict["anomalies"])
    assert "--seed 1" in result.stdout
    assert not run_processes(result.dir)


def test_readme_matrix_matches_the_known_answers() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Known answers"):]
    rows = set(re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (\w+) \| `?([\w-]+)`? \|", section, re.MULTILINE))
    expected = {(cell.variant, cell.scenario_variant, cell.verdict, cell.violation or "none")
                for cell in MATRIX if cell.listed}
    assert rows == expected
    named = re.search(r"against\s+every correct target\*\*\s+\(([^)]*)\)", section)
    assert named is not None and re.findall(r"`(\w+)`", named.group(1)) == correct_targets()
    assert f"every cell ({len(MATRIX)})" in section


def test_every_correct_target_has_a_cell_for_every_scenario() -> None:
    cells = {(cell.target, cell.scenario): cell for cell in MATRIX if not cell.params and not cell.contract
             and not cell.scenario_params}
    for target in correct_targets():
        for scenario in bundled_scenarios():
            cell = cells[(target, scenario)]
            assert cell.verdict == "pass" or (cell.listed and cell.rule), cell


def test_every_failing_cell_names_the_rule_it_breaks() -> None:
    assert all(cell.rule for cell in MATRIX if cell.verdict == "fail")
