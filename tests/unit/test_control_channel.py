"""The control protocol's wire (issue 37, item 1): requests and answers as JSON lines over a real control
process's stdio, run under another interpreter than the suite's (pyenv's Python 3.12), and every way such a
process can break the protocol (a crash, a line that is no answer, an answer to another request, an error
answer, no answer in time) a harness error naming the target, the op and the last lines of its stderr."""

from __future__ import annotations

import glob
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chaos.errors import HarnessError, TargetCodeError
from chaos.runtime.control_process import ControlAnswerError, ControlChannel, ControlProcessError

SCRIPT = Path(__file__).parents[1] / "controls" / "scripted_control.py"
Start = Callable[..., ControlChannel]  # (mode, timeout_s=5.0) -> the channel to a started process
PY312 = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3")))


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Starts scripted_control.py in a mode under Python 3.12; every process started is ended after the test."""
    if not PY312:
        pytest.skip("no Python 3.12 under ~/.pyenv/versions: the control must run under another interpreter")
    started: list[subprocess.Popen[bytes]] = []

    def run(mode: str, timeout_s: float = 5.0) -> ControlChannel:
        log = tmp_path / f"{mode}.log"
        with open(log, "ab") as err:
            popen = subprocess.Popen([PY312[-1], str(SCRIPT), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err)
        started.append(popen)
        assert popen.stdin is not None and popen.stdout is not None
        return ControlChannel("scripted", popen.stdin, popen.stdout, log, timeout_s, popen.poll)

    yield run
    for popen in started:
        popen.kill()
        popen.wait()
        for stream in (popen.stdin, popen.stdout):
            if stream is not None:
                stream.close()


def test_a_correct_control_answers_each_op_with_its_id_and_result(start: Start) -> None:
    channel = start("memory")
    assert channel.request("setup") == {}
    assert channel.request("enqueue", jobs=[{"id": "job-0002", "handler_s": 0.0, "fail": False},
                                            {"id": "job-0001", "handler_s": 0.5, "fail": True}]) == {}
    assert channel.request("snapshot") == {"jobs": [
        {"job": "job-0001", "state": "pending", "owner": None, "attempts": None, "detail": {}},
        {"job": "job-0002", "state": "pending", "owner": None, "attempts": None, "detail": {}}]}
    assert channel.request("completion", job="job-0001", token="t1") == {"outcome": "unknown"}
    assert channel.next_id == 5, "ids count up from 1, one per request"


def test_round_trips_are_cheap(start: Start) -> None:
    """What forwarding costs: a snapshot of an in-memory queue, asked 200 times in a row."""
    channel = start("memory")
    channel.request("setup")
    began = time.perf_counter()
    for _ in range(200):
        channel.request("snapshot")
    per_op_ms = (time.perf_counter() - began) / 200 * 1000
    assert per_op_ms < 20, f"{per_op_ms:.2f} ms per round trip"


def _fails(channel: ControlChannel, op: str, *expected: str) -> str:
    with pytest.raises(ControlProcessError) as caught:
        channel.request(op)
    message = str(caught.value)
    assert message.startswith(f"Target scripted's control process, op {op}: "), message
    for text in expected:
        assert text in message, message
    assert isinstance(caught.value, TargetCodeError) and isinstance(caught.value, HarnessError)
    return message


def test_a_crash_names_the_op_the_exit_code_and_the_stderr_it_left(start: Start) -> None:
    channel = start("crash")
    channel.request("setup")
    _fails(channel, "snapshot", "its stdout closed with no answer: it exited with code 3",
           "boom: the queue's client gave up", "request 2: snapshot")
    _fails(channel, "teardown", "it is no longer usable: snapshot failed before")


def test_a_line_that_is_no_answer_is_refused_and_breaks_the_channel(start: Start) -> None:
    channel = start("garbage")
    channel.request("setup")
    _fails(channel, "snapshot", "it wrote a line that is not a JSON object: 'connected to the queue, ready'",
           "write logs to stderr")
    _fails(channel, "snapshot", "no longer usable")


def test_a_control_that_never_answers_times_out(start: Start) -> None:
    channel = start("hang", timeout_s=0.5)
    channel.request("setup")
    began = time.monotonic()
    _fails(channel, "enqueue", "no answer within 0.5s (timeout_s in target.toml's [control])", "request 2: enqueue")
    assert 0.5 <= time.monotonic() - began < 2.0


def test_an_answer_to_another_request_is_refused(start: Start) -> None:
    channel = start("wrong_id")
    channel.request("setup")
    _fails(channel, "snapshot", "it answered the id 3, not the request's 2", "Answer each request once, with its id")


def test_an_error_answer_is_an_error_of_that_op_and_the_channel_stays_usable(start: Start) -> None:
    channel = start("error")
    channel.request("setup")
    with pytest.raises(ControlAnswerError, match="op enqueue: it answered an error: the queue is full"):
        channel.request("enqueue", jobs=[])
    with pytest.raises(ControlAnswerError, match="op snapshot: it answered an error"):
        channel.request("snapshot")


def test_an_answer_without_result_or_error_is_refused(start: Start) -> None:
    channel = start("no_result")
    channel.request("setup")
    _fails(channel, "snapshot", "its answer has neither result nor error: '{\"id\": 2}'")
