"""A snapshot that leaves out in-flight jobs (issue 33): pg_naive whose snapshot query skips its `running`
rows once passed kill_after_effect_before_ack (the killed owner's job, acked by nobody, counted
completed), and `chaos target check` said every seam held. Through the CLI: the run is not a pass, and the
check names the snapshot that dropped the job it held claimed; the real pg_naive's snapshot passes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from chaos.discovery import bundled
from tests.integration.runner import chaos

SKIP_RUNNING = "    FROM jobs WHERE state <> 'running' ORDER BY id"


def hides_running(tmp_path: Path) -> Path:
    """A copy of pg_naive whose snapshot() leaves out every job a worker holds."""
    path = tmp_path / "pg_naive_hides_running"
    shutil.copytree(bundled("targets") / "pg_naive", path, ignore=shutil.ignore_patterns("__pycache__"))
    toml = path / "target.toml"
    toml.write_text(toml.read_text().replace('name = "pg_naive"', 'name = "pg_naive_hides_running"'))
    control = path / "control.py"
    text = control.read_text()
    assert "    FROM jobs ORDER BY id" in text
    control.write_text(text.replace("    FROM jobs ORDER BY id", SKIP_RUNNING))
    return path


def test_a_killed_owners_job_the_snapshot_hides_is_not_completed(tmp_path: Path) -> None:
    result = chaos("run", "--target", str(hides_running(tmp_path)), "--scenario", "kill_after_effect_before_ack",
                   "--seed", "1", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 4, result.stdout + result.stderr
    verdict = result.verdict
    (victim,) = [job for job, outcome in verdict["jobs"].items() if outcome != "completed"]
    assert verdict["jobs"][victim] == "unknown"
    assert verdict["counts"]["completed"] == 7 and verdict["counts"]["effects"] == 8
    assert any(note.startswith(f"{victim} made its effect, but no completion of it is proven")
               and "died holding it" in note for note in verdict["notes"]), verdict["notes"]


def test_check_names_a_snapshot_that_drops_a_claimed_job(tmp_path: Path) -> None:
    result = chaos("target", "check", str(hides_running(tmp_path)), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "snapshot() showed it absent, not claimed" in result.stderr, result.stderr
    assert "shows_deliveries = False" in result.stderr, "it says how to fix it"


def test_near_miss_pg_naives_own_snapshot_shows_the_held_job_claimed(tmp_path: Path) -> None:
    result = chaos("target", "check", "pg_naive", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert "snapshot() showed it claimed" in result.stdout
