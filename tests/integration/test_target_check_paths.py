"""`chaos target check` drives more than the happy path (issue 34, item 8): a kill after the claim, a handler
failure, the control's word on a completion, and every probe's token. Each seam has a deliberately broken
little target (a copy of a bundled one with one line changed) whose check fails naming it (exit 2, a
paragraph of its own, no traceback); the bundled targets themselves pass (test_target_authoring, the
library adapters' tests and test_snapshot_hides_claims' near miss on pg_naive)."""

from __future__ import annotations

import shutil
from pathlib import Path

from chaos.discovery import bundled
from tests.integration.runner import CliResult, chaos


def broken_copy(tmp_path: Path, target: str, file: str, old: str, new: str) -> Path:
    """A copy of a bundled target with `old` replaced by `new` in one of its files."""
    path = tmp_path / f"{target}_broken"
    shutil.copytree(bundled("targets") / target, path, ignore=shutil.ignore_patterns("__pycache__"))
    toml = path / "target.toml"
    toml.write_text(toml.read_text().replace(f'name = "{target}"', f'name = "{target}_broken"'))
    text = (path / file).read_text()
    assert old in text, f"{old!r} not in {target}/{file}"
    (path / file).write_text(text.replace(old, new, 1))
    return path


def check(tmp_path: Path, target: str | Path, *args: str) -> CliResult:
    result = chaos("target", "check", str(target), *args, "--runs-dir", str(tmp_path / "runs"))
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_wrong_token_on_the_ack_is_named_with_the_probe(tmp_path: Path) -> None:
    result = check(tmp_path, "pg_lease", "-p", "report_token=wrong")
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: A wrong token: the ack of job-0001 by w1" in result.stderr, result.stderr
    assert "which no claim opened (w1's claims of job-0001 opened the token(s)" in result.stderr
    assert "chaos: A wrong token: the abandon of job-0003 by w2" in result.stderr, "the failure's abandon too"
    assert "ok: w1 claimed job-0001" in result.stdout, "what held is said too"


def test_a_snapshot_that_drops_a_dead_owners_job_is_named(tmp_path: Path) -> None:
    hides = "    FROM jobs WHERE NOT (id = 'job-0002' AND state = 'running') ORDER BY id"
    target = broken_copy(tmp_path, "pg_naive", "control.py", "    FROM jobs ORDER BY id", hides)
    result = check(tmp_path, target)
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: After w1 was SIGKILLed holding job-0002" in result.stderr, result.stderr
    assert "snapshot() showed it absent, not claimed or pending" in result.stderr
    assert "while w1 held job-0001" in result.stdout and "showed it claimed" in result.stdout


def test_a_completion_the_control_cannot_see_is_named(tmp_path: Path) -> None:
    """redis_reliable whose control's completion() never reads the done hash its acks write."""
    target = broken_copy(tmp_path, "redis_reliable", "control.py", "class Control(RedisQueueControl):",
                         "class Control(RedisQueueControl):\n    def completion(self, job: str, token: str) -> str:\n"
                         '        return "unknown"\n')
    result = check(tmp_path, target)
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: w1 acked job-0001 (ok=True), but the control's completion('job-0001'" in result.stderr, result.stderr
    assert "answered 'unknown' (from " in result.stderr and "a completion the control cannot see" in result.stderr


def test_a_failed_job_the_queue_never_retries_is_named(tmp_path: Path) -> None:
    target = broken_copy(tmp_path, "pg_naive", "worker.py",
                         "RETRY = \"UPDATE jobs SET state = 'pending', claimed_by = NULL WHERE id = %(job)s\"",
                         "RETRY = \"UPDATE jobs SET state = 'dead' WHERE id = %(job)s\"")
    result = check(tmp_path, target)
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: No worker claimed job-0003 again after w2 gave it up (an abandon)" in result.stderr, result.stderr
    assert "ok: w2 gave up the failing job-0003 with an abandon (reason 'handler failed')" in result.stdout


def test_a_handler_failure_abandoned_as_lost_is_named(tmp_path: Path) -> None:
    target = broken_copy(tmp_path, "pg_naive", "worker.py", 'probe.abandon(job, token, reason="handler failed")',
                         "probe.abandon(job, token)")
    result = check(tmp_path, target)
    assert result.code == 2, result.stdout + result.stderr
    assert "chaos: w2 abandoned the failing job-0003 with reason 'lost'" in result.stderr, result.stderr
