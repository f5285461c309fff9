"""A target's control as a process of its own (issue 37, item 1): the Node 20 control of
tests/targets/node_control (RESP to Redis by hand, no npm package) passes `chaos target check` and carries
a kill scenario to its verdict; a control process that breaks the protocol mid-run makes the run a harness
error naming the target, the op and its stderr; and whatever the control process does at its end, nothing
of the run is left running."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest

from chaos import events
from chaos.backends.base import Endpoint
from chaos.ledger import Ledger, read_events
from chaos.leftovers import run_processes
from chaos.queue_model import Job, KeepsNoCompletions
from chaos.runtime.control_process import ControlProcessError, start_control
from chaos.target import load_target
from tests.integration.runner import chaos

NODE_TARGET = Path(__file__).parents[1] / "targets" / "node_control"
SCRIPT = Path(__file__).parents[1] / "controls" / "scripted_control.py"
PY312 = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3")))
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node (Node 20) on PATH")
needs_py312 = pytest.mark.skipif(not PY312, reason="needs Python 3.12 under ~/.pyenv/versions")


def _scripted_target(tmp_path: Path, mode: str, extra: str = "") -> Path:
    """node_control's queue with its control replaced by scripted_control.py in `mode`, under Python 3.12."""
    folder = tmp_path / f"scripted_{mode}"
    folder.mkdir()
    toml = (NODE_TARGET / "target.toml").read_text()
    toml = toml.replace('name = "node_control"', f'name = "scripted_{mode}"')
    toml = toml.replace("{target_dir}/../../../targets", str(NODE_TARGET.parents[2] / "targets"))
    toml = toml.replace('command = ["node", "{target_dir}/control.js"]',
                        f'command = ["{PY312[-1]}", "{SCRIPT}", "{mode}"]{extra}')
    (folder / "target.toml").write_text(toml)
    return folder


@needs_node
def test_target_check_passes_on_a_control_written_in_node(tmp_path: Path) -> None:
    result = chaos("target", "check", str(NODE_TARGET), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout
    assert "ok: the control's completion('job-0001', its claim's token) answered accepted" in result.stdout
    assert "snapshot() showed it claimed" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    control = [e for e in ledger if e.worker == "control" and e.kind in (events.PROCESS_START, events.PROCESS_EXIT)]
    assert [(e.kind, e.data["role"]) for e in control] == [(events.PROCESS_START, "control"),
                                                            (events.PROCESS_EXIT, "control")]
    assert control[1].data["returncode"] == 0 and control[1].data["expected"], "it ended on its stdin's end"
    assert run_processes(result.dir) == []


@needs_node
def test_a_kill_scenario_through_the_node_control_is_judged(tmp_path: Path) -> None:
    result = chaos("run", "--target", str(NODE_TARGET), "--scenario", "kill_after_effect_before_ack", "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == "pass", verdict
    assert verdict["counts"].get("redelivered", 0) >= 1, "the killed owner's job ran again"
    snapshots = [e for e in read_events(result.dir / "ledger.sqlite") if e.kind == events.SNAPSHOT]
    assert snapshots and all(e.data["state"] == "done" for e in snapshots), "the Node control's final snapshot"
    assert run_processes(result.dir) == []


@needs_py312
def test_a_control_that_crashes_mid_run_is_the_targets_harness_error(tmp_path: Path) -> None:
    result = chaos("run", "--target", str(_scripted_target(tmp_path, "crash")), "--scenario", "no_faults",
                   "--seed", "1", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 3, result.stdout + result.stderr
    error = result.verdict["error"]
    assert "Target scripted_crash's control process, op enqueue: its stdout closed with no answer: it exited " \
           "with code 3" in error, error
    assert "boom: the queue's client gave up" in error, "the last lines of its stderr"
    assert "boom: the queue's client gave up" in (result.dir / "logs" / "control.log").read_text()
    assert run_processes(result.dir) == []


class _Server:
    """What start_control reads of a backend: its kind, endpoint and namespace (the scripted control never
    connects to it)."""

    kind = "redis"
    namespace = "chaos:test:"
    endpoint = Endpoint("127.0.0.1", 1, "redis://127.0.0.1:1/0")


@needs_py312
@pytest.mark.parametrize("keeps_completions", [True, False])
def test_a_control_that_ignores_its_end_is_killed_and_leaves_nothing(tmp_path: Path, keeps_completions: bool) -> None:
    extra = "" if keeps_completions else "\nkeeps_completions = false"
    target = load_target(_scripted_target(tmp_path, "stubborn", extra + "\nshows_deliveries = false"))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    control = start_control(target, _Server(), ledger, tmp_path / "logs")  # type: ignore[arg-type]
    try:
        assert type(control).shows_deliveries is False
        assert isinstance(control, KeepsNoCompletions) is not keeps_completions
        control.setup()
        control.enqueue([Job("job-0001"), Job("job-0002", 0.5, True)])
        assert [(s.job, s.state) for s in control.snapshot()] == [("job-0001", "pending"), ("job-0002", "pending")]
        assert control.completion("job-0001", "t1") == (("unknown", "queue") if keeps_completions else "unknown")
        pid = control.process.pid
    finally:
        control.close()
    ledger.close()
    exits = [e for e in read_events(tmp_path / "ledger.sqlite") if e.kind == events.PROCESS_EXIT]
    assert [(e.data["pid"], e.data["forced"]) for e in exits] == [(pid, True)], "SIGKILLed after its grace"
    log = (tmp_path / "logs" / "control.log").read_text()
    assert "request 5: teardown" in log if keeps_completions else "request 4: teardown" in log
    assert run_processes(tmp_path) == []


@needs_py312
def test_a_snapshot_that_breaks_the_vocabulary_is_named(tmp_path: Path) -> None:
    target = load_target(_scripted_target(tmp_path, "bad_snapshot"))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    control = start_control(target, _Server(), ledger, tmp_path / "logs")  # type: ignore[arg-type]
    try:
        control.setup()
        with pytest.raises(ControlProcessError, match=r"op snapshot: it listed \{\"job\": \"job-0001\", \"state\": "
                                                      r"\"running\"\}; each job is an object"):
            control.snapshot()
    finally:
        control.close()
    ledger.close()
    assert run_processes(tmp_path) == []


@needs_py312
def test_error_answers_while_the_run_drains_are_polled_through_as_a_class_exception_is(tmp_path: Path) -> None:
    result = chaos("run", "--target", str(_scripted_target(tmp_path, "flaky")), "--scenario", "no_faults",
                   "--seed", "1", "--runs-dir", str(tmp_path / "runs"))
    # The queue "completed" each job as it was enqueued, so no worker ran one: the checker's own error says so.
    assert "control process" not in str(result.verdict["error"]), result.verdict["error"]
    ledger = read_events(result.dir / "ledger.sqlite")
    assert [e for e in ledger if e.kind == events.DRAINED], "the drain polled past two error answers"
    assert (result.dir / "logs" / "control.log").read_text().count(": snapshot") >= 3
    assert run_processes(result.dir) == []
