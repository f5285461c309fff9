"""`chaos explore` end to end (issue 23): it finds a broken variant's known violation within a fixed
budget, shrinks it to a schedule no larger than the bundled scenario that catches it, writes a scenario
that `chaos run` replays to the same violation, starts a second exploration from what the first found,
runs shards at once that never run one schedule twice, and on a correct target finds nothing and says
which windows it reached."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chaos.explore.windows import WINDOWS
from chaos.leftovers import processes_mentioning
from tests.integration.runner import REPO, chaos

pytestmark = pytest.mark.full

# The bundled catcher of pg_lease reclaim=early's early_reclaim, kill_after_claim_before_effect:
# one kill, 8 jobs, 3 workers started in all.
BUNDLED_EARLY_RECLAIM = (1, 8, 3)


def explore(tmp_path: Path, *args: str, timeout: float = 900) -> tuple[int, dict[str, Any], str]:
    runs = tmp_path / "runs"
    result = chaos("explore", *args, "--runs-dir", str(runs), "--out", str(tmp_path / "found"), runs_dir=runs,
                   timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    (report,) = runs.glob("explore/*/report.json")
    return result.code, json.loads(report.read_text()), result.stdout


def test_a_broken_variant_is_found_shrunk_written_and_replayed(tmp_path: Path) -> None:
    code, report, stdout = explore(tmp_path, "--target", "pg_lease", "-p", "reclaim=early", "--budget", "40")
    assert code == 1, stdout
    assert report["used"]["runs"] <= 40
    finding = next(f for f in report["findings"] if f["violation"] == "early_reclaim")
    size = (finding["size"]["steps"], finding["size"]["jobs"], finding["size"]["workers"])
    assert all(mine <= bundled for mine, bundled in zip(size, BUNDLED_EARLY_RECLAIM, strict=True)), finding
    assert finding["classification"] == "deterministic" and finding["replayed"] == 3
    scenario = Path(finding["scenario"])
    assert scenario.parent == tmp_path / "found" and scenario.name.startswith("found_")
    assert "violates early_reclaim (deterministic, 3/3 replays)" in scenario.read_text()
    assert f"replay: chaos run --target pg_lease --scenario {scenario} -p reclaim=early" in stdout

    replay = chaos("run", "--target", "pg_lease", "-p", "reclaim=early", "--scenario", str(scenario),
                   "--runs-dir", str(tmp_path / "replay"))
    assert replay.code == 1, replay.stdout + replay.stderr
    assert "early_reclaim" in {v["kind"] for v in replay.verdict["violations"]}
    assert replay.verdict["faults"] and all(f["exercised"] for f in replay.verdict["faults"])

    # A second exploration of the variant starts from the example database: the failure comes back first.
    code, again, _ = explore(tmp_path, "--target", "pg_lease", "-p", "reclaim=early", "--budget", "3",
                             "--replays", "1")
    assert code == 1
    assert again["attempts"][0]["violations"] == ["early_reclaim"], again["attempts"][0]


def test_shards_search_at_once_and_merge(tmp_path: Path) -> None:
    code, report, stdout = explore(tmp_path, "--target", "redis_basic", "--budget", "40", "-j", "2",
                                   "--replays", "2")
    assert code == 1, stdout
    shards = sorted(p.name for p in (tmp_path / "runs" / "explore" / "redis_basic").glob("shard-*"))
    assert shards == ["shard-1-of-2", "shard-2-of-2"]
    assert report["used"]["runs"] <= 40
    assert "lost" in {f["violation"] for f in report["findings"]}, stdout
    # Both shards start from the simplest schedule; sharing their runs, no schedule ran twice.
    schedules = [json.dumps(attempt["schedule"], sort_keys=True) for attempt in report["attempts"]]
    assert len(schedules) == len(set(schedules))


def test_a_correct_target_shows_nothing_and_names_the_windows_it_reached(tmp_path: Path) -> None:
    code, report, stdout = explore(tmp_path, "--target", "pg_lease", "--budget", "20")
    assert code == 0, stdout
    assert report["findings"] == [] and report["verdicts"].get("fail", 0) == 0
    assert report["verdicts"].get("pass", 0) > 0
    assert set(report["windows"]) == set(WINDOWS)  # every window, with the runs that reached it
    reached = {name for name, runs in report["windows"].items() if runs}
    assert len(reached) >= 2, report["windows"]
    assert "found: no violation in any run" in stdout and "windows reached" in stdout
    never = sorted(set(WINDOWS) - reached)
    assert not never or f"never reached: {', '.join(n for n in WINDOWS if n in never)}" in stdout


def test_ctrl_c_stops_the_run_under_way_leaves_nothing_and_keeps_the_runs_made(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "chaos", "explore", "--target", "pg_lease", "--budget", "50",
                                "--runs-dir", str(runs), "--out", str(tmp_path / "found")], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:  # the second run has started once the first has ended
        if line.startswith("[1] "):
            break
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert "interrupted; the report holds the runs made so far" in stdout
    (report,) = runs.glob("explore/*/report.json")
    assert json.loads(report.read_text())["used"]["stopped_by"].startswith("an interrupt")
    assert processes_mentioning(str(runs)) == []
    assert not (tmp_path / "found").exists()
