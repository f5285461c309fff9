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


def collected(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The session's items as `--collect-only -q` lists them: nothing runs."""
    return pytest_in(project, "--collect-only", "-q", *args)


def item_ids(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.removeprefix("queue-chaos::") for line in done.stdout.splitlines() if line.startswith("queue-chaos::")]


def idle_scenario(path: Path) -> Path:
    """A scenario file to collect (never run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('"""Does nothing."""\nFAULTS = ()\n\n\ndef run(ctx):\n    pass\n')
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
    named = sorted((tmp_path / "runs").glob("*_pg_lease-overlapping_kill_after_effect_before_ack-seed1-*/run-dir"))
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


def test_ids_tell_apart_targets_and_scenario_files_of_one_name_and_stay_the_same(tmp_path: Path) -> None:
    copy = pg_naive_named_pg_lease(tmp_path)
    idle_scenario(tmp_path / "a" / "idle.py")
    idle_scenario(tmp_path / "b" / "idle.py")
    args = ("--chaos-target", str(copy), "--chaos-target", "pg_lease", "--chaos-scenario", "no_faults",
            "--chaos-scenario", "a/idle.py", "--chaos-scenario", "b/idle.py")
    done = collected(tmp_path, *args)
    # the shared names carry the parent folder that tells them apart; a name no other shares stays bare
    assert item_ids(done) == [f"chaos[{target}-{scenario}-seed1]" for target in ("mine/pg_lease", "targets/pg_lease")
                              for scenario in ("no_faults", "a/idle", "b/idle")], done.stdout + done.stderr
    assert item_ids(collected(tmp_path, *args)) == item_ids(done), "the ids change between runs"
    picked = collected(tmp_path, *args, "-k", "mine/pg_lease and a/idle")
    assert item_ids(picked) == ["chaos[mine/pg_lease-a/idle-seed1]"], picked.stdout + picked.stderr


def test_ids_that_no_folder_tells_apart_are_a_usage_error_naming_both(tmp_path: Path) -> None:
    bundled_pg_lease = bundled("targets") / "pg_lease"
    twice = collected(tmp_path, "--chaos-target", "pg_lease", "--chaos-target", str(bundled_pg_lease))
    assert twice.returncode == 4, twice.stdout + twice.stderr
    assert (f"--chaos-target pg_lease and --chaos-target {bundled_pg_lease} are one target" in twice.stderr
            and "give it once" in twice.stderr), twice.stderr
    # a folder's and a file's names which, joined by '-', read two ways: pg_lease + x-idle, pg_lease-x + idle
    shutil.copytree(bundled_pg_lease, tmp_path / "pg_lease-x")
    dashes = collected(tmp_path, "--chaos-target", "pg_lease", "--chaos-target", "pg_lease-x",
                       "--chaos-scenario", str(idle_scenario(tmp_path / "idle.py")),
                       "--chaos-scenario", str(idle_scenario(tmp_path / "x-idle.py")))
    assert dashes.returncode == 4, dashes.stdout + dashes.stderr
    assert (f"Two cells of this session would have the id pg_lease-x-idle-seed1: target pg_lease on scenario "
            f"{tmp_path / 'x-idle.py'}, and target pg_lease-x on scenario {tmp_path / 'idle.py'}") in dashes.stderr, \
        dashes.stderr


def test_a_chaos_xfail_entry_marks_one_of_two_targets_of_one_folder_name(tmp_path: Path) -> None:
    copy = pg_naive_named_pg_lease(tmp_path)
    args = ("--chaos-target", str(copy), "--chaos-target", "pg_lease", "--chaos-scenario",
            "kill_after_effect_before_ack")
    # the id both had before names neither now: a usage error saying why, not a mark on both
    (tmp_path / "pytest.ini").write_text("[pytest]\nchaos_xfail =\n    pg_lease-kill_after_effect_before_ack-seed1\n")
    both = collected(tmp_path, *args)
    assert both.returncode == 4 and "share a name in this session" in both.stderr, both.stdout + both.stderr
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nchaos_xfail =\n    mine/pg_lease-kill_after_effect_before_ack-seed1\n")
    done = pytest_in(tmp_path, "-rA", *args, "--junitxml", "junit.xml")
    out = done.stdout
    assert done.returncode == 0 and "1 passed, 1 xfailed" in out, out + done.stderr
    assert "XFAIL queue-chaos::chaos[mine/pg_lease-kill_after_effect_before_ack-seed1]" in out, out
    assert "PASSED queue-chaos::chaos[targets/pg_lease-kill_after_effect_before_ack-seed1]" in out, out
    names = sorted(str(case.get("name")) for case in ET.parse(tmp_path / "junit.xml").iter("testcase"))
    assert names == ["chaos[mine/pg_lease-kill_after_effect_before_ack-seed1]",
                     "chaos[targets/pg_lease-kill_after_effect_before_ack-seed1]"], names


def test_a_chaos_param_shows_in_the_id_and_the_plain_cells_xfail_never_marks_it(tmp_path: Path) -> None:
    args = ("--chaos-target", "pg_lease", "--chaos-scenario", "lease_shorter_than_handler",
            "--chaos-param", "heartbeat=none")
    (tmp_path / "pytest.ini").write_text("[pytest]\nchaos_xfail =\n    pg_lease-lease_shorter_than_handler-seed1\n")
    plain = collected(tmp_path, *args)
    assert plain.returncode == 4, plain.stdout + plain.stderr
    assert ("chaos_xfail lists pg_lease-lease_shorter_than_handler-seed1, which no collected cell is; the cells "
            "collected are pg_lease-heartbeat=none-lease_shorter_than_handler-seed1") in plain.stderr, plain.stderr
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nchaos_xfail =\n    pg_lease-heartbeat=none-lease_shorter_than_handler-seed1\n")
    done = pytest_in(tmp_path, "-rA", *args)
    assert done.returncode == 0 and "1 xfailed" in done.stdout, done.stdout + done.stderr
    assert "XFAIL queue-chaos::chaos[pg_lease-heartbeat=none-lease_shorter_than_handler-seed1]" in done.stdout
