"""The pytest plugin as a user runs it, in a project of their own: cells collected as test items through
the installed entry point, a failure showing the verdict's violations with their witness and the
reproduce line, a known-bad cell held to failing by xfail(strict=True), the `chaos_run` fixture, pytest's
own JUnit report, and `-p no:chaos` turning it all off; and each item judging the run it started, though
another item, session or variant of one name runs beside it into the same runs dir."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.discovery import bundled
from chaos.leftovers import run_processes


def pytest_started(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(session: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = session.communicate(timeout=600)
    return subprocess.CompletedProcess(session.args, session.returncode, out, err)


def pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return finished(pytest_started(project, *args))


def overlapping(project: Path, scenario: str) -> Path:
    """`scenario` behind a barrier: each of its runs waits (after its run dir is made) until two have
    begun, so that two runs surely overlap, whichever session or worker starts first."""
    path = project / f"overlapping_{scenario}.py"
    path.write_text(f'''"""{scenario}, once two runs of it have begun."""
import os
import time
from pathlib import Path

from chaos.discovery import find_scenario

INNER = find_scenario({scenario!r})
FAULTS = INNER.faults
BARRIER = Path({str(project / "barrier")!r})


def run(ctx):
    BARRIER.mkdir(exist_ok=True)
    (BARRIER / str(os.getpid())).touch()
    ends = time.monotonic() + 60
    while len(list(BARRIER.iterdir())) < 2 and time.monotonic() < ends:
        time.sleep(0.1)
    INNER.run(ctx)
''')
    return path


def pg_naive_named_pg_lease(project: Path) -> Path:
    """A copy of the broken pg_naive in a folder named as the correct pg_lease."""
    copy = project / "mine" / "pg_lease"
    shutil.copytree(bundled("targets") / "pg_naive", copy)
    return copy.resolve()


def test_cells_are_test_items_and_a_failure_names_its_violation(tmp_path: Path) -> None:
    done = pytest_in(tmp_path, "-v", "--chaos-target", "pg_naive", "--chaos-scenario", "kill_after_effect_before_ack",
                     "--chaos-scenario", "no_faults", "--junitxml", "junit.xml")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "queue-chaos: targets pg_naive; scenarios kill_after_effect_before_ack, no_faults; seeds [1]" in out
    assert "chaos[pg_naive-kill_after_effect_before_ack-seed1] FAILED" in out
    assert "chaos[pg_naive-no_faults-seed1] PASSED" in out
    assert "violation stuck" in out and "reproduce: chaos run --target pg_naive" in out
    junit = ET.parse(tmp_path / "junit.xml")
    cases = {case.get("name"): sorted(child.tag for child in case) for case in junit.iter("testcase")}
    assert {case.get("classname") for case in junit.iter("testcase")} == {"queue-chaos"}
    assert cases == {"chaos[pg_naive-kill_after_effect_before_ack-seed1]": ["failure", "properties"],
                     "chaos[pg_naive-no_faults-seed1]": ["properties"]}
    runs = [ledger.parent for ledger in (tmp_path / "runs").glob("*/*/ledger.sqlite")]
    assert len(runs) == 2, runs
    for run in runs:
        assert not run_processes(run), run


def test_a_known_bad_cell_marked_xfail_strict_must_fail(tmp_path: Path) -> None:
    # listed as the item shows it (the bare id, pg_naive-kill_after_effect_before_ack-seed1, works too)
    ini = "[pytest]\nchaos_xfail =\n    chaos[pg_naive-kill_after_effect_before_ack-seed1]\n"
    (tmp_path / "pytest.ini").write_text(ini)
    done = pytest_in(tmp_path, "--chaos-target", "pg_naive", "--chaos-scenario", "kill_after_effect_before_ack")
    assert done.returncode == 0 and "1 xfailed" in done.stdout, done.stdout + done.stderr
    # near miss: a cell that passes is an unexpected pass, which strict makes a failure
    (tmp_path / "pytest.ini").write_text("[pytest]\nchaos_xfail =\n    redis_reliable-no_faults-seed1\n")
    done = pytest_in(tmp_path, "--chaos-target", "redis_reliable", "--chaos-scenario", "no_faults")
    assert done.returncode == 1 and "1 failed" in done.stdout and "XPASS(strict)" in done.stdout, done.stdout
    # a known-bad cell listed under an id no collected cell has is a usage error, not silently ignored
    (tmp_path / "pytest.ini").write_text("[pytest]\nchaos_xfail =\n    redis_reliable-no_fault-seed1\n")
    done = pytest_in(tmp_path, "--chaos-target", "redis_reliable", "--chaos-scenario", "no_faults")
    assert done.returncode == 4 and "chaos_xfail lists redis_reliable-no_fault-seed1, which no" in done.stderr


def test_the_chaos_run_fixture_returns_a_cells_verdict(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(
        "def test_redis_reliable_survives_a_kill(chaos_run):\n"
        "    verdict = chaos_run('redis_reliable', 'kill_after_effect_before_ack', seed=3)\n"
        "    assert verdict['verdict'] == 'pass' and verdict['seed'] == 3\n"
        "    assert verdict['faults'][0]['exercised'] and verdict['run_dir']\n")
    done = pytest_in(tmp_path, "-q")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_plugin_is_off_with_p_no_chaos_and_silent_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    plain = pytest_in(tmp_path, "-q")
    assert plain.returncode == 0 and "1 passed" in plain.stdout and "queue-chaos" not in plain.stdout
    off = pytest_in(tmp_path, "-p", "no:chaos", "--chaos-target", "pg_lease")
    assert off.returncode == 4 and "unrecognized arguments: --chaos-target" in off.stderr
    unknown = pytest_in(tmp_path, "--chaos-target", "no_such_queue")
    assert unknown.returncode == 4 and "Unknown target 'no_such_queue'" in unknown.stderr


def test_a_conftest_marks_the_cells_and_a_harness_error_is_never_an_expected_failure(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from chaos.pytest_plugin import VerdictFailed\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if getattr(item, 'chaos_cell', '').startswith('pg_naive-'):\n"
        "            item.add_marker(pytest.mark.xfail(strict=True, raises=VerdictFailed))\n")
    (tmp_path / "broken.py").write_text('"""A scenario whose own code raises."""\nFAULTS = ()\n\n\n'
                                        "def run(ctx):\n    raise RuntimeError('boom')\n")
    done = pytest_in(tmp_path, "-rA", "--chaos-target", "pg_naive", "--chaos-scenario", "kill_after_effect_before_ack",
                     "--chaos-scenario", str(tmp_path / "broken.py"))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "XFAIL queue-chaos::chaos[pg_naive-kill_after_effect_before_ack-seed1]" in out, out
    assert "FAILED queue-chaos::chaos[pg_naive-broken-seed1]" in out and "RuntimeError: boom" in out, out


def test_two_targets_of_one_folder_name_in_one_xdist_session_judge_their_own_runs(tmp_path: Path) -> None:
    copy = pg_naive_named_pg_lease(tmp_path)
    scenario = overlapping(tmp_path, "kill_after_effect_before_ack")
    done = pytest_in(tmp_path, "-n", "2", "-rA", "--chaos-target", "pg_lease", "--chaos-target", str(copy),
                     "--chaos-scenario", str(scenario))
    out = done.stdout
    # the copy (its reproduce line names its folder) fails on its own run; the real pg_lease passes on its own
    assert done.returncode == 1 and "1 failed, 1 passed" in out, out + done.stderr
    assert f"reproduce: chaos run --target {copy} --scenario" in out and "violation stuck" in out, out
    assert "wrote no verdict" not in out, out
    named = sorted((tmp_path / "runs").glob("pg_lease-overlapping_kill_after_effect_before_ack-seed1-*/run-dir"))
    assert len(named) == 2 and len({path.read_text() for path in named}) == 2, named


def test_two_sessions_sharing_a_runs_dir_judge_their_own_runs(tmp_path: Path) -> None:
    copy = pg_naive_named_pg_lease(tmp_path)
    scenario = str(overlapping(tmp_path, "kill_after_effect_before_ack"))
    real = pytest_started(tmp_path, "--chaos-target", "pg_lease", "--chaos-scenario", scenario)
    mine = finished(pytest_started(tmp_path, "--chaos-target", str(copy), "--chaos-scenario", scenario))
    real_done = finished(real)
    assert real_done.returncode == 0 and "1 passed" in real_done.stdout, real_done.stdout + real_done.stderr
    assert mine.returncode == 1 and "violation stuck" in mine.stdout, mine.stdout + mine.stderr
    assert f"reproduce: chaos run --target {copy} --scenario" in mine.stdout, mine.stdout
    assert "wrote no verdict" not in mine.stdout, mine.stdout


def test_a_chaos_param_variant_judges_its_own_run_not_the_plain_targets(tmp_path: Path) -> None:
    scenario = str(overlapping(tmp_path, "lease_shorter_than_handler"))
    plain = pytest_started(tmp_path, "--chaos-target", "pg_lease", "--chaos-scenario", scenario)
    variant = finished(pytest_started(tmp_path, "--chaos-target", "pg_lease", "--chaos-scenario", scenario,
                                      "--chaos-param", "heartbeat=none"))
    plain_done = finished(plain)
    assert plain_done.returncode == 0 and "1 passed" in plain_done.stdout, plain_done.stdout + plain_done.stderr
    assert variant.returncode == 1 and "violation premature_reclaim" in variant.stdout, variant.stdout
    assert "-p heartbeat=none" in variant.stdout and "wrote no verdict" not in variant.stdout, variant.stdout
