"""The pytest plugin as a user runs it, in a project of their own: cells collected as test items through
the installed entry point, a failure showing the verdict's violations with their witness and the
reproduce line, a known-bad cell held to failing by xfail(strict=True), the `chaos_run` fixture, pytest's
own JUnit report, and `-p no:chaos` turning it all off."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.leftovers import run_processes


def pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=project,
                          capture_output=True, text=True, timeout=600)


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
    for run in (tmp_path / "runs").glob("*/*"):
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
