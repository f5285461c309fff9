"""`chaos suite` and `chaos merge` through the CLI, against real servers: a suite's exit code is its worst
cell's, a mistake in any cell is exit 2 before anything runs, shards merged equal the unsharded run, a
merge takes nothing on a shard's word (a status, a shard's own exit code, that its runs are all there),
and an interrupted suite stops every run it started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.reports.schemas import schema
from tests.integration.runner import REPO, CliResult, chaos
from tests.suite_shards import edit, record

SUITE = """
seeds = [1]
[[cell]]
target = "pg_naive"
scenario = "kill_after_effect_before_ack"
verdict = "fail"
violation = "stuck"

[[cell]]
target = "redis_reliable"
scenarios = ["no_faults", "kill_after_effect_before_ack"]

[[cell]]
target = "redis_basic"
scenario = "kill_after_claim_before_effect"
"""  # redis_basic loses the killed job: its last cell must fail, so the suite fails


def suite_file(tmp_path: Path, text: str = SUITE) -> Path:
    path = tmp_path / "chaos.toml"
    path.write_text(text)
    return path


def report(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out / "suite.json").read_text())
    return loaded


def test_a_suite_runs_every_cell_and_exits_with_its_worst(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = chaos("suite", str(suite_file(tmp_path)), "-j", "2", "--out", str(out), runs_dir=tmp_path)
    assert result.code == 1, result.stdout + result.stderr
    document = report(out)
    statuses = {cell["key"]: cell["status"] for cell in document["cells"]}
    assert statuses == {"pg_naive-kill_after_effect_before_ack-seed1": "pass",
                        "redis_reliable-no_faults-seed1": "pass",
                        "redis_reliable-kill_after_effect_before_ack-seed1": "pass",
                        "redis_basic-kill_after_claim_before_effect-seed1": "fail"}
    (losing,) = [cell for cell in document["cells"] if cell["status"] == "fail"]
    assert losing["reasons"] == ["expected PASS, got FAIL (exit code 1) with lost"]
    assert losing["reproduce"] == "chaos run --target redis_basic --scenario kill_after_claim_before_effect --seed 1"
    assert "[4/4]" in result.stdout and "FAIL: 3 pass, 1 fail" in result.stdout
    summary = (out / "summary.md").read_text()
    assert "## queue-chaos suite: FAIL (exit 1)" in summary and "✅ stuck" in summary and "❌ lost" in summary
    jsonschema.validate(document, schema("suite"))
    for cell in document["cells"]:
        jsonschema.validate(json.loads((out / cell["run_dir"] / "verdict.json").read_text()), schema("verdict"))
        assert not run_processes(out / cell["run_dir"])


def test_chaos_schema_prints_the_schemas_the_reports_keep_to(tmp_path: Path) -> None:
    for name in ("verdict", "suite"):
        result = chaos("schema", name, runs_dir=tmp_path)
        assert result.code == 0 and json.loads(result.stdout) == schema(name)
    assert json.loads(chaos("schema", runs_dir=tmp_path).stdout)["$id"] == "queue-chaos/verdict/1"


def test_a_mistake_in_any_cell_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    bad = '\n[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\nparams = { colour = "red" }\n'
    path = suite_file(tmp_path, SUITE + bad)
    out = tmp_path / "out"
    result = chaos("suite", str(path), "--out", str(out), runs_dir=tmp_path)
    assert result.code == 2, result.stdout + result.stderr
    assert "Suite cell pg_lease colour=red x no_faults:" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists(), "nothing ran"


@pytest.mark.full  # slow: the full tier keeps the README's test command within minutes
def test_shards_merged_equal_the_unsharded_suite(tmp_path: Path) -> None:
    path = suite_file(tmp_path)
    whole = chaos("suite", str(path), "-j", "2", "--out", str(tmp_path / "whole"), runs_dir=tmp_path)
    shards = [chaos("suite", str(path), "-j", "2", "--shard", f"{k}/2", "--durations",
                    str(tmp_path / "whole" / "suite.json"), "--out", str(tmp_path / f"shard{k}"), runs_dir=tmp_path)
              for k in (1, 2)]
    assert {shard.code for shard in shards} <= {0, 1}
    merged = chaos("merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), "--out", str(tmp_path / "merged"),
                   runs_dir=tmp_path)
    assert merged.code == whole.code == 1, merged.stdout + merged.stderr

    def verdicts(out: Path) -> dict[str, tuple[str, str]]:
        return {cell["key"]: (cell["verdict"], cell["status"]) for cell in report(out)["cells"]}

    assert verdicts(tmp_path / "merged") == verdicts(tmp_path / "whole")
    # split by the whole run's durations: neither shard carries more than half the work and one run
    took = {cell["key"]: cell["duration_s"] for cell in report(tmp_path / "whole")["cells"]}
    loads = [sum(took[cell["key"]] for cell in report(tmp_path / f"shard{k}")["cells"]) for k in (1, 2)]
    assert max(loads) <= sum(loads) / 2 + max(took.values()) and min(loads) > 0
    assert "## queue-chaos suite: FAIL (exit 1)" in merged.stdout


def test_an_interrupted_suite_stops_every_run_it_started(tmp_path: Path) -> None:
    path = suite_file(tmp_path, '[[cell]]\ntarget = "pg_lease"\nscenario = "stop_past_deadline"\n'
                                '[[cell]]\ntarget = "redis_reliable"\nscenario = "stop_past_deadline"\n')
    out = tmp_path / "out"
    # A terminal's Ctrl-C goes to the whole foreground process group: the suite's session here.
    process = subprocess.Popen([sys.executable, "-m", "chaos", "suite", str(path), "-j", "2", "--out", str(out)],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(out.glob("cells/*/runs/*/ledger.sqlite"))) < 2:
        time.sleep(0.1)
    time.sleep(1.0)  # the runs are under way: workers and servers started
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    runs = list(out.glob("cells/*/runs/*"))
    assert len(runs) == 2
    for run in runs:
        assert not run_processes(run), run
        # stopped once, as interrupted, with its own cleanup: never the second signal's kill-everything
        assert read_events(run / "ledger.sqlite")[-1].data["status"] == "interrupted"
        assert "interrupted again" not in (run.parent.parent / "output.log").read_text()


# -- merges that take nothing on a shard's word ----------------------------------------------------------

SHARDED = """
[[cell]]
target = "redis_basic"
scenarios = ["no_faults", "kill_after_claim_before_effect"]

[[cell]]
target = "redis_reliable"
scenario = "no_faults"
"""  # redis_basic loses the killed job: that cell fails
OLDER = '[[cell]]\ntarget = "redis_reliable"\nscenario = "no_faults"\n'  # the same file before two cells came
LOSING, BASIC, RELIABLE = ("redis_basic-kill_after_claim_before_effect-seed1", "redis_basic-no_faults-seed1",
                           "redis_reliable-no_faults-seed1")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real shards of SHARDED, each the --out of `chaos suite --shard K/2`: dealt round-robin, the sorted keys
    go 1/2: LOSING, RELIABLE and 2/2: BASIC; by the stored durations below (a CI cache hit), 1/2: RELIABLE and
    2/2: LOSING, BASIC. `older-2` is shard 2/2 of OLDER at the same path, which ran nothing."""
    root = tmp_path_factory.mktemp("shards")
    path = suite_file(root, OLDER)
    older = chaos("suite", str(path), "--shard", "2/2", "--out", str(root / "older-2"), runs_dir=root)
    assert older.code == 0 and report(root / "older-2")["cells"] == [], older.stdout + older.stderr
    path.write_text(SHARDED)
    durations = root / "durations.json"
    durations.write_text(json.dumps({"cells": [{"key": RELIABLE, "duration_s": 10.0},
                                               {"key": LOSING, "duration_s": 1.0}]}))
    hit = ["--durations", str(durations)]
    for name, shard, extra in (("hit-1", "1/2", hit), ("hit-2", "2/2", hit), ("miss-2", "2/2", [])):
        result = chaos("suite", str(path), "-j", "2", "--shard", shard, *extra, "--out", str(root / name),
                       runs_dir=root)
        assert result.code in (0, 1), result.stdout + result.stderr
    ran = {name: [cell["key"] for cell in report(root / name)["cells"]] for name in ("hit-1", "hit-2", "miss-2")}
    assert ran == {"hit-1": [RELIABLE], "hit-2": [BASIC, LOSING], "miss-2": [BASIC]}
    return {name: root / name for name in ("older-2", "hit-1", "hit-2", "miss-2")}


def merge_of(tmp_path: Path, *dirs: Path) -> CliResult:
    return chaos("merge", *map(str, dirs), "--out", str(tmp_path / "merged"), runs_dir=tmp_path)


def refused(result: CliResult, *phrases: str) -> None:
    """Exit 2 with one paragraph holding each phrase, no traceback, no report."""
    assert result.code == 2, result.stdout + result.stderr
    assert result.stderr.startswith("chaos: chaos merge: ") and result.stderr.count("\n") == 1, result.stderr
    assert all(phrase in result.stderr for phrase in phrases), result.stderr


def copy(shard: Path, tmp_path: Path) -> Path:
    """A shard's whole --out, to edit."""
    return Path(shutil.copytree(shard, tmp_path / shard.name))


def test_shards_of_one_dealing_merge_to_the_whole_suite(tmp_path: Path, shards: dict[str, Path]) -> None:
    result = merge_of(tmp_path, shards["hit-1"], shards["hit-2"])
    assert result.code == 1, result.stdout + result.stderr
    statuses = {cell["key"]: cell["status"] for cell in report(tmp_path / "merged")["cells"]}
    assert statuses == {LOSING: "fail", BASIC: "pass", RELIABLE: "pass"}
    jsonschema.validate(report(tmp_path / "merged"), schema("suite"))


def test_shards_dealt_by_other_durations_are_refused_naming_the_runs_none_ran(tmp_path: Path,
                                                                             shards: dict[str, Path]) -> None:
    # 1/2 had the durations (a cache hit), 2/2 not (a miss): the failing run fell in neither slice
    refused(merge_of(tmp_path, shards["hit-1"], shards["miss-2"]), "dealt the suite's runs differently",
            "1/2 (", ") by the --durations of digest sha256:", "2/2 (", ") round-robin, without --durations",
            f"run keys no shard ran: {LOSING}; run twice: none", "Give every shard the same --durations file")


def test_an_older_suite_files_shard_that_ran_nothing_is_refused(tmp_path: Path, shards: dict[str, Path]) -> None:
    refused(merge_of(tmp_path, shards["hit-1"], shards["older-2"]), "planned from different suites",
            "(3 cells, 3 run keys)", "(1 cells, 1 run keys)", "the suite file changed between them")


def test_a_shard_emptied_of_its_runs_is_refused_naming_them(tmp_path: Path, shards: dict[str, Path]) -> None:
    emptied = copy(shards["hit-2"], tmp_path)
    edit(emptied, lambda document: document.update(cells=[]))
    refused(merge_of(tmp_path, shards["hit-1"], emptied), "2 of the plan's 3 runs ran in no shard given",
            f"{BASIC} (dealt to 2/2)", f"{LOSING} (dealt to 2/2)")


@pytest.mark.parametrize("forged", ["pass", "xfail"])
def test_a_status_its_run_does_not_give_is_refused_naming_it(tmp_path: Path, shards: dict[str, Path],
                                                             forged: str) -> None:
    shard = copy(shards["hit-2"], tmp_path)
    edit(shard, lambda document: record(document, LOSING).update(status=forged))
    why = f"{LOSING} says {forged}, judged again fail (expected PASS, got FAIL (exit code 1) with lost)"
    refused(merge_of(tmp_path, shards["hit-1"], shard), why)
    # its verdict and violations edited too: the run dir's own verdict.json is what is judged
    edit(shard, lambda document: record(document, LOSING).update(verdict="pass", violations=[], exit_code=0))
    refused(merge_of(tmp_path, shards["hit-1"], shard), f"{LOSING} says {forged}, judged again fail")


def test_a_shards_own_status_and_exit_code_are_never_believed(tmp_path: Path, shards: dict[str, Path]) -> None:
    shard = copy(shards["hit-2"], tmp_path)
    edit(shard, lambda document: document.update(status="pass", exit_code=0))
    refused(merge_of(tmp_path, shards["hit-1"], shard), "says its status is 'pass' (exit code 0), but its runs, "
            "judged again, make fail (exit code 1)")


@pytest.mark.parametrize("status", [None, "green"])
def test_a_run_with_no_or_an_unknown_status_is_refused(tmp_path: Path, shards: dict[str, Path],
                                                       status: str | None) -> None:
    shard = copy(shards["hit-1"], tmp_path)
    if status is None:
        edit(shard, lambda document: record(document, RELIABLE).pop("status"))
    else:
        edit(shard, lambda document: record(document, RELIABLE).update(status=status))
    found = "no status" if status is None else f"status = {status!r}"
    refused(merge_of(tmp_path, shard, shards["hit-2"]), f"the run {RELIABLE} has {found}; expected one of pass, "
            "xfail, skipped, inconclusive, fail, error")
