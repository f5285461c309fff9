"""The pytest plugin (entry point `pytest11`: loaded wherever queue-chaos is installed; `-p no:chaos`
turns it off). It adds nothing to a test run until asked:

- `pytest --chaos-target NAME [--chaos-scenario NAME]... [--chaos-seeds 1-5] [--chaos-param KEY=VALUE]...`
  collects each target x scenario x seed as a test item, `chaos[pg_lease-kill_after_effect_before_ack-seed3]`,
  which runs that cell through `chaos run` (a process of its own, as any run) and passes when the verdict
  is pass. A failure shows the run's summary: its violations with their witnesses, and the reproduce line.
  A run skipped because the scenario needs what the target's contract does not promise (its REQUIRES) is
  a skipped item, with the reason.
  A known-bad cell is listed in the ini option `chaos_xfail`, or marked from a conftest.py's
  `pytest_collection_modifyitems` (by the item's `chaos_cell` id) `xfail(strict=True, raises=VerdictFailed)`:
  then its verdict must be fail, every time (a harness error or an inconclusive run still fails the item).
- the `chaos_run` fixture runs a cell from an ordinary test and returns its verdict (verdict.json's
  content, with the run dir under "run_dir").

An item's id is what `chaos_xfail`, `-k` and JUnit know it by, so it names one cell, and the same one run
after run with the same arguments: the suite's key of the cell, target-param...-scenario-seedN, each
`--chaos-param` after the target (a variant is another cell: the plain cell's xfail never marks it), by
the target folder's and the scenario file's names. Where two targets' folders (or two scenario files)
share a name in the session, each carries as many parent folders as tell them apart
(`mine/pg_lease-...`, `targets/pg_lease-...`); one folder given twice, or ids that still read alike, are
a usage error naming both.

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
    parser.addini("chaos_xfail", "cells (item ids, e.g. pg_naive-no_faults-seed1, "
                                 "pg_lease-heartbeat=none-lease_shorter_than_handler-seed1) that must fail: "
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
    from chaos.errors import ConfigError

    params = list(config.getoption("--chaos-param"))
    try:
        planned = _session_cells(targets, config.getoption("--chaos-scenario"), _seeds(config), params)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    # A known-bad cell's id, as the item shows it (chaos[...]) or bare.
    xfail = {entry.removeprefix(f"{ITEM}[").removesuffix("]") for entry in config.getini("chaos_xfail")}
    cells = ChaosCells.from_parent(session, name="queue-chaos", nodeid="queue-chaos")
    for cell, target, scenario, seed in planned:
        item = ChaosItem.from_parent(cells, name=f"{ITEM}[{cell}]", target=target, scenario=scenario, seed=seed,
                                     params=params, cell=cell)
        if cell in xfail:
            item.add_marker(pytest.mark.xfail(strict=True, raises=VerdictFailed,
                                              reason="a known-bad cell: its verdict must be fail"))
        items.append(item)
    made = [cell for cell, *_ in planned]
    unknown = sorted(xfail - set(made))
    if unknown:  # a typo would otherwise leave a known-bad cell failing, or a bad one unmarked, silently
        qualified = any("/" in cell for cell in made)
        shared = ("; where two targets' folders or two scenarios' files share a name in this session, as here, "
                  "their ids carry the parent folders that tell them apart") if qualified else ""
        raise pytest.UsageError(f"chaos_xfail lists {', '.join(unknown)}, which no collected cell is; the cells "
                                f"collected are {', '.join(sorted(made))} (ids as target-scenario-seedN, each "
                                f"--chaos-param after the target{shared}).")


def _session_cells(targets: list[str], named_scenarios: list[str], seeds: tuple[int, ...],
                   params: list[str]) -> list[tuple[str, str, str, int]]:
    """Each cell of the session as (id, target, scenario, seed). An id is the suite's key of the cell
    (target-param...-scenario-seedN) by the target folder's and the scenario file's names: the same for the
    same arguments, run after run, and its own in the session (a ConfigError where two would share one)."""
    from chaos.discovery import available_scenarios, find_scenario, find_target
    from chaos.errors import ConfigError
    from chaos.suite.cell import Cell, Planned
    from chaos.suite.spec import runnable

    target_labels = _labels([(target, find_target(target).path) for target in targets], "target")
    scenarios = named_scenarios or sorted(available_scenarios())
    scenario_labels = _labels([(name, find_scenario(name).path) for name in scenarios], "scenario", ".py")
    planned: list[tuple[str, str, str, int]] = []
    found: dict[str, tuple[str, str]] = {}
    for target in targets:
        # By default every scenario a run of the target can take here (not those needing containers it lacks).
        for scenario in named_scenarios or [name for name in scenarios if runnable(target, name)]:
            for seed in seeds:
                cell = Planned(Cell(target_labels[target], scenario_labels[scenario], params=tuple(params)), seed).key
                if cell in found:
                    raise ConfigError(f"Two cells of this session would have the id {cell}: target {found[cell][0]} "
                                      f"on scenario {found[cell][1]}, and target {target} on scenario {scenario}; "
                                      "rename a target's folder or a scenario's file so that their names, joined "
                                      "by '-', read one way.")
                found[cell] = (target, scenario)
                planned.append((cell, target, scenario, seed))
    return planned


def _labels(named: list[tuple[str, Path]], what: str, suffix: str = "") -> dict[str, str]:
    """Each argument's name in the ids: its folder's (file's) name, or where another's has that name too,
    with as many parent folders as tell them all apart (a ConfigError for one folder given twice)."""
    from chaos.errors import ConfigError

    given: dict[Path, str] = {}
    sharing: dict[str, list[Path]] = {}
    for argument, path in named:
        if path in given:
            raise ConfigError(f"--chaos-{what} {given[path]} and --chaos-{what} {argument} are one {what} ({path}), "
                              f"which would be collected twice under one id: give it once.")
        given[path] = argument
        sharing.setdefault(path.name, []).append(path)
    labels: dict[str, str] = {}
    for paths in sharing.values():
        depth = 1
        while len({path.parts[-depth:] for path in paths}) < len(paths):  # distinct paths differ at full length
            depth += 1
        for path in paths:
            labels[given[path]] = Path(*path.parts[-depth:]).as_posix().removesuffix(suffix)
    return labels


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
        verdict, summary = run_cell(runs, self.target, self.scenario, self.seed, self.params, name=self.chaos_cell)
        self.user_properties.append(("verdict", verdict.get("verdict")))
        if verdict.get("verdict") == "fail":
            raise VerdictFailed(summary)
        if verdict.get("verdict") == "skipped":  # the scenario needs what the contract does not promise
            pytest.skip("; ".join(verdict.get("notes") or []) or "skipped")
        if verdict.get("verdict") != "pass":
            raise RunBroken(summary)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ChaosFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.target), 0, f"chaos run --target {self.target} --scenario {self.scenario} --seed {self.seed}"


def run_cell(runs_dir: Path, target: str, scenario: str, seed: int = 1, params: list[str] | tuple[str, ...] = (),
             contract: list[str] | tuple[str, ...] = (), scenario_params: list[str] | tuple[str, ...] = (), *,
             name: str | None = None) -> tuple[dict[str, Any], str]:
    """One `chaos run` of the cell, in a runs dir of its own under `runs_dir` whose name begins with `name`
    (an item's id; else the cell's key): its verdict.json (with "run_dir") and what it printed. The verdict
    is of the run this call started, as `chaos run` names it."""
    from chaos.suite.cell import Cell, Planned

    cell = Cell(target, scenario, params=tuple(params), contract=tuple(contract),
                scenario_params=tuple(scenario_params))
    own = _own_runs_dir(runs_dir, cell, seed, name or Planned(cell, seed).key)
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


def _own_runs_dir(runs_dir: Path, cell: Cell, seed: int, name: str) -> Path:
    """A new folder for one run of the cell, which no other run shares: its name, a digest of the
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
    own = runs_dir / f"{id_part(name)[:100]}-{digest}-{secrets.token_hex(4)}"
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
