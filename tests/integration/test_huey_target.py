"""huey_redis runs huey 3.5 itself (RedisHuey and its own huey_consumer) with probes sent from huey's signals
(docs/writing-a-target.md follows its making). Through the CLI: `chaos target check` finds every seam
holding (the control vouching for huey's own completions), and the kill cell of the known-answer matrix
gives its verdict naming the killed job: `dropped` under huey's own contract (at-most-once,
on_owner_loss = "drop"), `lost` when held to a redelivery huey does not promise. The claim came from the
consumer process the supervisor started, and the run leaves no key of huey's behind on an external
server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chaos import events
from chaos.known_answers import Cell, load
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import chaos

TARGET = "huey_redis"
SCENARIO = "kill_after_claim_before_effect"
pytest.importorskip("huey", reason="the huey extra is not installed: pip install -e .[huey]")


def kill_cells() -> list[Cell]:
    cells = [cell for cell in load() if cell.target == TARGET and cell.scenario == SCENARIO]
    assert {cell.verdict for cell in cells} == {"pass", "fail"}, cells  # its own contract, and held to more
    return cells


def test_target_check_finds_every_seam_holding(tmp_path: Path) -> None:
    result = chaos("target", "check", TARGET, "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "every seam held" in result.stdout and "problem" not in result.stdout
    assert "w1 claimed job-0001 with token" in result.stdout
    assert "the final snapshot shows job-0001 done" in result.stdout
    log = (result.dir / "logs" / "w1.log").read_text()
    assert "Huey consumer started with 1 thread" in log and "+ tasks.chaos_job" in log, log
    # huey, not the task, completed the job: the worker's ack could not vouch for it, and the control
    # answered from huey's result store that the completion took effect.
    assert "acked job-0001 with ok null, and the control says the queue took the completion" in result.stdout
    ledger = read_events(result.dir / "ledger.sqlite")
    (ack,) = [e for e in ledger if e.kind == events.PROBE_ACK and e.job == "job-0001"]  # the fault-free job
    (answer,) = [e for e in ledger if e.kind == events.COMPLETION and e.job == "job-0001"]
    assert ack.data["ok"] is None and answer.seq > ack.seq
    assert (answer.job, answer.worker, answer.data) == (ack.job, ack.worker, {"token": ack.data["token"],
                                                                            "outcome": "accepted", "source": "queue"})
    assert result.verdict["evidence"]["completions"] == "probes and control"


@pytest.mark.parametrize("cell", kill_cells(), ids=lambda cell: cell.id)
def test_the_kill_cell_names_the_killed_job(cell: Cell, tmp_path: Path) -> None:
    result = chaos(*cell.argv(2, tmp_path))  # seed 2: the matrix runs seed 1
    assert result.code == cell.exit_code, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["verdict"] == cell.verdict
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"] and fault["target"] == held.worker
    # The held claim was sent by the consumer the supervisor started (huey's own entry point), from huey's
    # SIGNAL_EXECUTING handler: its token is huey's task id and the attempt.
    claim = next(e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job)
    started = {e.worker: e.data for e in ledger if e.kind == events.PROCESS_START}
    assert claim.worker == held.worker and started[held.worker]["pid"] == claim.data["pid"]
    assert "huey.bin.huey_consumer" in started[held.worker]["argv"], started[held.worker]
    assert claim.data["attempt"] == 1 and str(claim.data["token"]).endswith(":1")
    # Nobody ran the killed job again: huey popped it, and nothing remembers a popped task.
    assert [e.worker for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job] == [held.worker]
    others = {job: outcome for job, outcome in verdict["jobs"].items() if job != held.job}
    assert set(others.values()) == {"completed"} and len(others) == 7
    if cell.verdict == "pass":  # huey's own promise: a task whose consumer died is gone
        assert verdict["jobs"][held.job] == "dropped" and not verdict["violations"]
        assert verdict["counts"]["dropped"] == 1 and verdict["counts"]["lost"] == 0
    else:
        assert verdict["jobs"][held.job] == "lost"
        assert [(v["kind"], v["job"]) for v in verdict["violations"]] == [("lost", held.job)]
        assert f"violation lost {held.job}" in result.stdout
    assert not run_processes(result.dir)


@pytest.fixture
def external_redis(tmp_path: Path) -> Iterator[str]:
    """A Redis server of the test's own, as a user's: its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                               "no", "--dir", str(tmp_path), "--logfile", ""], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def test_an_external_run_leaves_no_key_of_hueys(external_redis: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(external_redis)
    client.set("users:own", "kept")
    result = chaos("run", "--target", TARGET, "--scenario", SCENARIO, "--seed", "1", "--backend-url", external_redis,
                   "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    (started,) = [e for e in read_events(result.dir / "ledger.sqlite") if e.kind == events.BACKEND_START]
    assert started.data["provider"] == "external" and started.data["namespace"].startswith("chaos:")
    assert client.keys("*") == [b"users:own"]
