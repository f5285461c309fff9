"""An observer from configuration alone: tests/targets/active_list declares its Redis layout (one active list
shared by every worker, a JSON status per job) in target.toml's [observer] table and has no observer code.
On a real server its scripts' writes reach the observer through the replication stream as the queue's
record, through a restart too; through the CLI its runs are judged from that record, which alone catches
the stale completion `-p ack=unchecked` lets the queue take (its workers report their acks as unknown)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import redis

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.redis.local import LocalRedis
from chaos.ledger import read_events
from chaos.queue_model import Job, Observer
from chaos.target import load_target
from chaos.usercode import load_module
from tests.integration.runner import CliResult, chaos

ACTIVE_LIST = Path(__file__).resolve().parents[1] / "targets" / "active_list"
SCENARIO = "stop_after_effect_before_ack"
EVERY_KIND = ["claim", "complete", "fail", "release"]


def records(observer: Observer) -> list[tuple[str, str, str | None, str | None]]:
    return [(r.kind, r.job, r.actor, r.token) for r in observer.read()]


def test_the_queues_scripts_read_as_its_record_from_a_real_servers_stream(tmp_path: Path) -> None:
    worker: Any = load_module(ACTIVE_LIST / "worker.py", "active_list_worker", "active_list worker")
    target = load_target(ACTIVE_LIST)
    settings = BackendSettings(tmp_path, "layout", options={"persistence": "aof-always"})
    with LocalRedis.open(settings) as server:
        control = target.load_control(server)
        observer = target.load_observer(server)
        assert observer is not None and observer.covers == frozenset(EVERY_KIND)
        client = redis.Redis.from_url(server.endpoint.url, decode_responses=True)
        try:
            observer.install()
            p = server.namespace
            wait, active, dead = p + "wait", p + "active", p + "dead"
            claim, stalled = client.register_script(worker.CLAIM), client.register_script(worker.STALLED)
            complete, fail = client.register_script(worker.COMPLETE), client.register_script(worker.FAIL)
            control.enqueue([Job("j1")])
            claim(keys=[wait, active], args=[p, "w1", -1000])  # its lock already expired: the next check takes it back
            stalled(keys=[active, wait, dead], args=[p, 3])
            claim(keys=[wait, active], args=[p, "w2", 60000])
            assert complete(keys=[active], args=[p, "j1", "w1", "1", "unchecked"]) == 1  # the stale one's
            assert complete(keys=[active], args=[p, "j1", "w2", "2", "checked"]) == 0  # no longer active: refused
            assert records(observer) == [("claim", "j1", "w1", "1"), ("release", "j1", "w1", "1"),
                                         ("claim", "j1", "w2", "2"), ("complete", "j1", "w1", "1")]
            control.enqueue([Job("j2")])
            claim(keys=[wait, active], args=[p, "w1", 60000])
            assert records(observer) == [("claim", "j2", "w1", "1")]
            server.restart()  # the stream breaks: what the server did next is replayed, or read back after the gap
            assert fail(keys=[active, wait, dead], args=[p, "j2", "w1", "1", 1]) == 1
            assert records(observer) == [("fail", "j2", "w1", "1")]
            assert [(s.job, s.state) for s in control.snapshot()] == [("j1", "done"), ("j2", "dead")]
        finally:
            client.close()
            observer.close()
            control.close()


def run(tmp_path: Path, *args: str) -> CliResult:
    result = chaos("run", "--target", str(ACTIVE_LIST), "--scenario", SCENARIO, "--seed", "1", "--runs-dir",
                   str(tmp_path), *args, timeout=300)
    assert result.code in (0, 1), result.stdout + result.stderr
    return result


def test_a_run_is_judged_from_the_declared_record_and_a_stale_completion_is_caught_through_it(tmp_path: Path) -> None:
    correct = run(tmp_path / "checked")
    assert correct.code == 0, correct.stdout
    assert correct.verdict["evidence"] == {"claims": "queue", "completions": "queue", "acks": "queue"}
    ledger = read_events(correct.dir / "ledger.sqlite")
    start = next(e for e in ledger if e.kind == events.OBSERVER_START)
    assert start.data["covers"] == EVERY_KIND
    claimed = {(e.job, e.worker, e.data["token"]) for e in ledger if e.kind == events.QUEUE_CLAIM}
    reported = {(e.job, e.worker, e.data["token"]) for e in ledger if e.kind == events.PROBE_CLAIM}
    assert reported and claimed == reported, "every claim a worker reported is the queue's, and no other"
    completed = [e for e in ledger if e.kind == events.QUEUE_COMPLETE]
    enqueued = {e.job for e in ledger if e.kind == events.ENQUEUE}
    assert len(completed) == len(enqueued) and {e.job for e in completed} == enqueued, "each job completed once"
    assert any(e.kind == events.QUEUE_RELEASE for e in ledger), "the stopped owner's job was taken back"

    broken = run(tmp_path / "unchecked", "-p", "ack=unchecked")
    assert broken.code == 1, broken.stdout
    (violation,) = broken.verdict["violations"]
    assert violation["kind"] == "stale_ack_accepted" and "judged from the queue's record" in violation["message"]
    assert violation["detail"]["source"] == "queue"

    blind = run(tmp_path / "blind", "-p", "ack=unchecked", "--no-observer")
    assert blind.code == 0 and blind.verdict["evidence"]["completions"] != "queue", "the probes alone cannot see it"


def test_target_check_expects_the_declared_records_claim_and_completion(tmp_path: Path) -> None:
    result = chaos("target", "check", str(ACTIVE_LIST), "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert "ok: the observer recorded the queue's claim of job-0001 by w1" in result.stdout
    assert "ok: the observer recorded the queue's completion of job-0001 by w1" in result.stdout


def test_a_malformed_layout_is_exit_2_before_anything_starts(tmp_path: Path) -> None:
    folder = tmp_path / "active_list"
    shutil.copytree(ACTIVE_LIST, folder)
    toml = folder / "target.toml"
    toml.write_text(toml.read_text().replace('record = "job:{id}"', 'record = "job"'))
    result = chaos("run", "--target", str(folder), "--scenario", SCENARIO, "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 2 and result.run_dir is None, result.stdout + result.stderr
    assert "[observer] record = 'job' does not say where the job's id is" in result.stderr
    assert 'Expected a Redis layout' in result.stderr
