"""Fuzzed target.toml files and `-p` values, suite files and `chaos explore` arguments through the real
CLI: every command ends with an exit code of 0 to 4, never a traceback, never a hang, never NaN or
Infinity in a report, and a usage error is one paragraph; and fuzzed shard outputs through `chaos merge`:
an exit code, never a traceback, never 0 for a suite with a failing run."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.discovery import bundled
from chaos.leftovers import run_processes
from chaos.suite.cell import Cell
from tests.fuzz_inputs import ONE_JOB, edited_file, explore_arguments, suite_files, target_tomls
from tests.integration.runner import CliResult, chaos
from tests.suite_shards import losing, write_shards

NOTHING = '"""Does nothing: the run is the backend, the sink and the snapshot."""\n\nFAULTS = ()\n\n\ndef run(ctx):\n' \
          "    ctx.enqueue(1)\n"


ONE_JOB_SCENARIO = '"""One job, one worker: a run as short as a run can be."""\n\nFAULTS = ()\n\n\ndef run(ctx):\n' \
                   "    ctx.enqueue(1)\n    ctx.start_worker()\n    ctx.wait_drained(30)\n"


def refuse_constant(name: str) -> None:
    raise AssertionError(f"a report holds {name}")


def assert_ended_cleanly(result: CliResult) -> None:
    """An exit code of 0 to 4, no traceback, and a usage error in one paragraph (ours, or argparse's usage
    and its one error line)."""
    assert result.code in (0, 1, 2, 3, 4), result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.code == 2 and not result.stderr.startswith("usage: "):
        assert result.stderr.startswith("chaos: ") and result.stderr.count("\n") == 1, result.stderr


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target_tomls(), st.lists(st.tuples(st.sampled_from(["heartbeat", "poll_s", "ack", "zz"]),
                                          st.text("abcinf0.-= ", max_size=6)), max_size=2))
def test_any_target_toml_and_p_value_ends_with_an_exit_code_not_a_traceback(toml: str,
                                                                           params: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        target = root / "fuzzed"
        shutil.copytree(bundled("targets") / "pg_lease", target, ignore=shutil.ignore_patterns("__pycache__"))
        (target / "target.toml").write_text(toml)
        (root / "nothing.py").write_text(NOTHING)
        argv = ["run", "--target", str(target), "--scenario", str(root / "nothing.py"), "--runs-dir",
                str(root / "runs"), "--deadline", "60"]
        for key, value in params:
            argv += ["-p", f"{key}={value}"]
        result = chaos(*argv, timeout=120)
        assert_ended_cleanly(result)
        if result.run_dir is not None and (result.run_dir / "verdict.json").exists():
            json.loads((result.run_dir / "verdict.json").read_text(), parse_constant=refuse_constant)
            assert not run_processes(result.run_dir)


LOSES = Cell("a", "s")  # its run loses a job where it must pass: no merge of its shards may exit 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_edit_of_a_shards_output_ends_merged_with_an_exit_code_not_a_traceback(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shards = write_shards(root, (LOSES, Cell("b", "s"), Cell("c", "s", "fail", "stuck")), 2, losing(LOSES))
        files = [shard / "suite.json" for shard in shards] + sorted(root.glob("shard*/cells/*/runs/*/verdict.json"))
        edited = data.draw(st.sampled_from(files))
        edited.write_bytes(data.draw(edited_file(json.loads(edited.read_text()))))
        result = chaos("merge", *map(str, shards), "--out", str(root / "merged"), runs_dir=root, timeout=60)
    assert result.code in (1, 2, 3, 4), result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.code == 2:
        assert result.stderr.startswith("chaos: chaos merge: ") and result.stderr.count("\n") == 1, result.stderr


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(suite_files())
def test_any_suite_file_ends_with_an_exit_code_not_a_traceback(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "one_job.py").write_text(ONE_JOB_SCENARIO)
        (root / "chaos.toml").write_bytes(text.replace(ONE_JOB.encode(), str(root / "one_job.py").encode()))
        out = root / "out"
        result = chaos("suite", str(root / "chaos.toml"), "-j", "1", "--out", str(out), runs_dir=root, timeout=300)
        assert_ended_cleanly(result)
        if result.code == 2:
            assert not out.exists(), "a usage error is found before anything runs"
        for log in out.glob("cells/*/output.log"):
            assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")
        for run_dir in out.glob("cells/*/runs/*"):
            assert not run_processes(run_dir)
        if (out / "suite.json").exists():
            json.loads((out / "suite.json").read_text(), parse_constant=refuse_constant)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(explore_arguments())
def test_any_explore_arguments_end_with_an_exit_code_not_a_traceback(args: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        result = chaos("explore", *args, "--runs-dir", str(root / "runs"), "--out", str(root / "found"),
                       runs_dir=root / "runs", timeout=300)
        assert_ended_cleanly(result)
        if result.code == 2:
            assert not (root / "found").exists(), "a usage error is found before anything runs"
        for run_dir in (root / "runs").glob("explore/**/ledger.sqlite"):
            assert not run_processes(run_dir.parent)
