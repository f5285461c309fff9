"""`chaos suite` and `chaos merge` through the CLI, against real servers: a suite's exit code is its worst
cell's, a mistake in any cell is exit 2 before anything runs, shards merged equal the unsharded run, and
an interrupted suite stops every run it started."""

from __future__ import annotations

import json
import os
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
from tests.integration.runner import REPO, chaos

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
