"""`chaos explore` refuses bad input before its first run: one paragraph, exit 2, no traceback, no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.runner import chaos


@pytest.mark.parametrize(("args", "phrases"), [
    (["--target", "no_such_queue"], ["Unknown target 'no_such_queue'", "chaos list"]),
    (["--target", "pg_lease", "-p", "reclaim=sometimes"], ["reclaim"]),
    (["--target", "pg_lease", "-p", "reclaim"], ["expected KEY=VALUE"]),
    (["--target", "pg_lease", "--faults", "nuke"], ["--faults nuke", "the schedule language has the faults"]),
    (["--target", "pg_lease", "--faults", "kill,pause"], ["--faults pause", "container"]),
    (["--target", "pg_lease", "--faults", ","], ["--faults names no fault kind", "kill"]),
    (["--target", "pg_lease", "--backend", "external"], ["needs the URL of an existing server"]),
    (["--target", "pg_lease", "--shard", "3/2"], ["--shard '3/2'", "K/N"]),
])
def test_bad_input_is_refused_before_any_run(tmp_path: Path, args: list[str], phrases: list[str]) -> None:
    result = chaos("explore", *args, "--budget", "2", "--runs-dir", str(tmp_path / "runs"),
                   "--out", str(tmp_path / "found"), runs_dir=tmp_path / "runs")
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "found").exists()
