"""A snapshot that leaves out in-flight jobs (issue 33): pg_naive whose snapshot query skips its `running`
rows once passed kill_after_effect_before_ack (the killed owner's job, acked by nobody, counted
completed), and `chaos target check` said every seam held. Through the CLI: the run is not a pass, and the
check names the snapshot that dropped the job it held claimed; the real pg_naive's snapshot passes it.
A job with several effects is held to the same rule: pg_lease whose snapshot skips its claimed rows once
passed a run whose job was redelivered and whose second owner was then killed holding it (`redelivered`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from chaos.discovery import bundled
from tests.integration.runner import CliResult, chaos

SKIP_RUNNING = "    FROM jobs WHERE state <> 'running' ORDER BY id"


SKIP_CLAIMED = "    FROM jobs WHERE status <> 'claimed' ORDER BY id"
# Both owners of the one job are killed right after their effects: the first by the gate on its effect, the
# second (pg_lease's reclaim after the lease ran out) by the gate on the job's second effect. With `third`,
# a third worker starts then, reclaims the job from the dead second owner and completes it.
TWICE_KILLED = '''"""Redeliver a job, then kill its second owner too."""
FAULTS = ("kill",)


def run(ctx):
    (victim,) = ctx.enqueue(1)
    first = ctx.arm("after:effect", job=victim)
    second = ctx.arm("after:effect", job=victim, nth=2)
    ctx.start_worker()
    ctx.start_worker()
    ctx.kill_held(first)
    ctx.kill_held(second)
    if {third}:  # the snapshot shows the held job absent, which a drain takes for finished: wait for the ack
        third = ctx.start_worker()
        ctx.wait_for(ctx.probe_of("ack", victim, worker=third), 2 * ctx.recovery_deadline(), "the third ack")
    ctx.wait_drained(ctx.recovery_deadline())
'''


def hiding_copy(tmp_path: Path, target: str, query: str, hiding: str) -> Path:
    """A copy of a bundled target whose snapshot() query is `hiding` instead of `query`: it leaves out every
    job a worker holds."""
    name = f"{target}_hides_held"
    path = tmp_path / name
    shutil.copytree(bundled("targets") / target, path, ignore=shutil.ignore_patterns("__pycache__"))
    toml = path / "target.toml"
    toml.write_text(toml.read_text().replace(f'name = "{target}"', f'name = "{name}"'))
    control = path / "control.py"
    text = control.read_text()
    assert query in text
    control.write_text(text.replace(query, hiding))
    return path


def hides_running(tmp_path: Path) -> Path:
    """A copy of pg_naive whose snapshot() leaves out every job a worker holds."""
    return hiding_copy(tmp_path, "pg_naive", "    FROM jobs ORDER BY id", SKIP_RUNNING)


def twice_killed(tmp_path: Path, third: bool) -> CliResult:
    """TWICE_KILLED on a copy of pg_lease whose snapshot() leaves out every claimed job."""
    target = hiding_copy(tmp_path, "pg_lease", "    FROM jobs ORDER BY id", SKIP_CLAIMED)
    scenario = tmp_path / "twice_killed.py"
    scenario.write_text(TWICE_KILLED.format(third=third))
    return chaos("run", "--target", str(target), "--scenario", str(scenario), "--seed", "1",
                 "--runs-dir", str(tmp_path / "runs"))


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


def test_a_redelivered_job_whose_second_owner_died_hidden_by_the_snapshot_is_not_redelivered(tmp_path: Path) -> None:
    result = twice_killed(tmp_path, third=False)
    assert result.code == 4, result.stdout + result.stderr
    verdict = result.verdict
    (job,) = verdict["jobs"]
    assert verdict["jobs"][job] == "unknown" and verdict["counts"]["effects"] == 2
    assert verdict["counts"]["redelivered"] == 0
    assert any(note.startswith(f"{job} made 2 effects, but no completion of it is proven")
               and "died holding it (fault f2, kill w" in note for note in verdict["notes"]), verdict["notes"]


def test_near_miss_the_same_job_completed_by_a_third_worker_is_redelivered(tmp_path: Path) -> None:
    result = twice_killed(tmp_path, third=True)
    assert result.code == 0, result.stdout + result.stderr
    verdict = result.verdict
    assert list(verdict["jobs"].values()) == ["redelivered"] and verdict["counts"]["effects"] == 3
