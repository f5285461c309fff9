"""The pytest plugin (entry point `pytest11`: loaded wherever queue-chaos is installed; `-p no:chaos`
turns it off). It adds nothing to a test run until asked:

- `pytest --chaos-target NAME [--chaos-scenario NAME]... [--chaos-seeds 1-5] [--chaos-param KEY=VALUE]...`
  collects each target x scenario x seed as a test item, `chaos[pg_lease-kill_after_effect_before_ack-seed3]`,
  which runs that cell through `chaos run` (a process of its own, as any run) and passes when the verdict
  is pass. A failure shows the run's summary: its violations with their witnesses, and the reproduce line.
  A known-bad cell is listed in the ini option `chaos_xfail`, or marked from a conftest.py's
  `pytest_collection_modifyitems` (by the item's `chaos_cell` id) `xfail(strict=True, raises=VerdictFailed)`:
  then its verdict must be fail, every time (a harness error or an inconclusive run still fails the item).
- the `chaos_run` fixture runs a cell from an ordinary test and returns its verdict (verdict.json's
  content, with the run dir under "run_dir").

Each run goes into a runs dir of its own, made afresh: the cell's id to read, a digest of everything that
makes the run what it is (the target's resolved folder, not its name; params, contract, scenario
settings, seed) and a random nonce. An item judges the very run it started, whose dir `chaos run` names
(--run-dir-file), never one found by listing or sorting: two targets whose folders share a name, two
variants of one target, two sessions or xdist workers writing to one `--chaos-runs-dir` never judge each
other's runs.

pytest's own `--junitxml`, `-n` (pytest-xdist) and `-k` then work on the cells as on any test.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from chaos.suite.cell import Cell

ITEM = "chaos"  # the plugin imports the rest of chaos only when asked for cells: any test run loads it
RUN_DIR_FILE = "run-dir"  # in a run's own runs dir: the path of the run dir `chaos run` made there


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos", "queue-chaos: run scenarios against targets as test items")
    group.addoption("--chaos-target", action="append", default=[], metavar="NAME",
                    help="collect this target's cells (a name `chaos list` shows, or a folder); repeatable")
    group.addoption("--chaos-scenario", action="append", default=[], metavar="NAME",
                    help="only these scenarios (default: every scenario found); repeatable")
    group.addoption("--chaos-seeds", default="1", metavar="SEEDS", help="the seeds of each cell: 3, 1,2,5 or 1-5")
    group.addoption("--chaos-param", action="append", default=[], metavar="KEY=VALUE",
                    help="a target setting for every cell, as chaos run's -p; repeatable")
    group.addoption("--chaos-runs-dir", default="runs", metavar="DIR",
                    help="where each cell's run dir goes, under a folder of its own named by its id "
                         "(default ./runs)")
    parser.addini("chaos_xfail", "cells (item ids, e.g. pg_naive-no_faults-seed1) that must fail: "
                                 "xfail(strict=True)", type="linelist", default=[])


def _seeds(config: pytest.Config) -> tuple[int, ...]:
    from chaos.errors import ConfigError
    from chaos.suite.spec import parse_seeds_text

    try:
        return parse_seeds_text(str(config.getoption("--chaos-seeds")), "--chaos-seeds")
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_report_header(config: pytest.Config) -> str | None:
    targets = config.getoption("--chaos-target")
    if not targets:
        return None
    return (f"queue-chaos: targets {', '.join(targets)}; scenarios "
            f"{', '.join(config.getoption('--chaos-scenario')) or 'all'}; seeds {list(_seeds(config))}")


@pytest.hookimpl(tryfirst=True)  # before a conftest's own hook, which may mark the cells it finds
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    targets = config.getoption("--chaos-target")
    if not targets:
        return
    from chaos.discovery import available_scenarios, find_target
    from chaos.errors import ConfigError
    from chaos.suite.spec import runnable

    named_scenarios = config.getoption("--chaos-scenario")
    # A known-bad cell's id, as the item shows it (chaos[...]) or bare.
    xfail = {entry.removeprefix(f"{ITEM}[").removesuffix("]") for entry in config.getini("chaos_xfail")}
    try:
        for target in targets:
            find_target(target)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    cells = ChaosCells.from_parent(session, name="queue-chaos", nodeid="queue-chaos")
    made: set[str] = set()
    for target in targets:
        # By default every scenario a run of the target can take here (not those needing containers it lacks).
        scenarios = named_scenarios or [name for name in sorted(available_scenarios()) if runnable(target, name)]
        for scenario in scenarios:
            for seed in _seeds(config):
                cell = _cell_name(target, scenario, seed)
                item = ChaosItem.from_parent(cells, name=f"{ITEM}[{cell}]", target=target, scenario=scenario,
                                             seed=seed, params=list(config.getoption("--chaos-param")), cell=cell)
                if cell in xfail:
                    item.add_marker(pytest.mark.xfail(strict=True, raises=VerdictFailed,
                                                      reason="a known-bad cell: its verdict must be fail"))
                made.add(cell)
                items.append(item)
    unknown = sorted(xfail - made)
    if unknown:  # a typo would otherwise leave a known-bad cell failing, or a bad one unmarked, silently
        raise pytest.UsageError(f"chaos_xfail lists {', '.join(unknown)}, which no collected cell is; the cells "
                                f"collected are {', '.join(sorted(made))} (ids as target-scenario-seedN).")


def _cell_name(target: str, scenario: str, seed: int) -> str:
    """The cell's id as its item shows it: target-scenario-seedN, by the target folder's and the scenario
    file's names."""
    named = Path(scenario).stem if scenario.endswith(".py") else scenario
    return f"{Path(target).name}-{named}-seed{seed}"


class ChaosCells(pytest.Collector):
    """The parent of the cells' items: their node ids read queue-chaos::chaos[...], and JUnit's classname
    queue-chaos. (pytest's "collected N items" line counts what it collected from files, before the cells
    are added.)"""

    def collect(self) -> list[pytest.Item]:
        return []


class ChaosFailure(Exception):
    """A cell's run did not pass: its summary says why."""


class VerdictFailed(ChaosFailure):
    """The verdict is fail: the queue broke its contract (what a known-bad cell's xfail expects)."""


class RunBroken(ChaosFailure):
    """No verdict on the queue: a harness error, an inconclusive run, or no verdict at all. Never what a
    known-bad cell's xfail expects: it fails the item either way."""


class ChaosItem(pytest.Item):
    def __init__(self, *, target: str, scenario: str, seed: int, params: list[str], cell: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.scenario, self.seed, self.params, self.chaos_cell = target, scenario, seed, params, cell

    def runtest(self) -> None:
        runs = Path(self.config.getoption("--chaos-runs-dir"))
        verdict, summary = run_cell(runs, self.target, self.scenario, self.seed, self.params)
        self.user_properties.append(("verdict", verdict.get("verdict")))
        if verdict.get("verdict") == "fail":
            raise VerdictFailed(summary)
        if verdict.get("verdict") != "pass":
            raise RunBroken(summary)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ChaosFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.target), 0, f"chaos run --target {self.target} --scenario {self.scenario} --seed {self.seed}"


def run_cell(runs_dir: Path, target: str, scenario: str, seed: int = 1, params: list[str] | tuple[str, ...] = (),
             contract: list[str] | tuple[str, ...] = (),
             scenario_params: list[str] | tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """One `chaos run` of the cell, in a runs dir of its own under `runs_dir`: its verdict.json (with
    "run_dir") and what it printed. The verdict is of the run this call started, as `chaos run` names it."""
    from chaos.suite.cell import Cell

    cell = Cell(target, scenario, params=tuple(params), contract=tuple(contract),
                scenario_params=tuple(scenario_params))
    own = _own_runs_dir(runs_dir, cell, seed)
    named = own / RUN_DIR_FILE
    argv = [sys.executable, "-m", "chaos", *cell.argv(seed, own), "--run-dir-file", str(named)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    printed = (done.stdout + done.stderr).strip()
    if done.returncode == 2:
        raise pytest.UsageError(printed)
    run_dir = Path(named.read_text().strip()) if named.is_file() else None
    if run_dir is None or not (run_dir / "verdict.json").is_file():
        raise RunBroken(f"the run wrote no verdict (exit code {done.returncode}; its run dir: "
                        f"{run_dir or 'never made'}):\n{printed}")
    verdict: dict[str, Any] = json.loads((run_dir / "verdict.json").read_text())
    verdict["run_dir"] = str(run_dir)
    return verdict, printed


def _own_runs_dir(runs_dir: Path, cell: Cell, seed: int) -> Path:
    """A new folder for one run of the cell, which no other run shares: the cell's id, a digest of the
    run's whole identity (where two target folders of one name, or two variants, differ) and a nonce
    (where two sessions, or two runs of one variant, differ)."""
    from chaos.discovery import find_target
    from chaos.errors import ConfigError
    from chaos.names import id_part

    try:
        folder = str(find_target(cell.target).path)  # resolved
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    scenario = str(Path(cell.scenario).resolve()) if cell.scenario.endswith(".py") else cell.scenario
    identity = json.dumps([folder, scenario, cell.params, cell.contract, cell.scenario_params, seed])
    digest = hashlib.sha1(identity.encode()).hexdigest()[:10]
    own = runs_dir / f"{id_part(_cell_name(cell.target, cell.scenario, seed))[:100]}-{digest}-{secrets.token_hex(4)}"
    own.mkdir(parents=True)  # never one that exists: it would be another run's
    return own


@pytest.fixture
def chaos_run(tmp_path: Path) -> Iterator[Callable[..., dict[str, Any]]]:
    """`chaos_run(target, scenario, seed=1, params=(), contract=(), scenario_params=())`: run one cell and
    return its verdict (verdict.json's content, with "run_dir"), each run in a runs dir of its own under
    the test's tmp_path."""

    def run(target: str, scenario: str, seed: int = 1, params: tuple[str, ...] = (), contract: tuple[str, ...] = (),
            scenario_params: tuple[str, ...] = ()) -> dict[str, Any]:
        return run_cell(tmp_path, target, scenario, seed, params, contract, scenario_params)[0]

    yield run
