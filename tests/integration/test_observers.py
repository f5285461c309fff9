"""The bundled observers of redis_reliable and rabbitmq_ack through the CLI, on the suite's own servers: the
ledger holds the queue's own record of what each worker did (every reported claim, and for Redis every
accepted ack with the token it wrote, named for the worker that did it), verdict.json says which source
judged what the observer covers, and a run without the observer judges the same. On a server of the
user's, the Redis observer covers nothing and says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.redis.local import LocalRedis
from chaos.ledger import read_events
from tests.integration.runner import CliResult, chaos

SCENARIO = "kill_after_effect_before_ack"
# Acks are decided by the workers' reports, and by the queue's record where the observer covers completions.
CASES = [  # target, what its observer covers, verdict.json's evidence
    ("redis_reliable", ["claim", "complete", "fail", "release"],
     {"claims": "queue", "completions": "queue", "acks": "queue, worker"}),
    ("rabbitmq_ack", ["claim", "fail"], {"claims": "queue", "completions": "probes", "acks": "worker"}),
]
PROBES_ALONE = {"claims": "probes", "completions": "probes", "acks": "worker"}


def run(tmp_path: Path, target: str, scenario: str, *args: str) -> CliResult:
    result = chaos("run", "--target", target, "--scenario", scenario, "--seed", "1", "--runs-dir", str(tmp_path),
                   *args, timeout=300)
    assert result.code in (0, 1), result.stdout + result.stderr
    return result


def assert_recorded_as_reported(result: CliResult, covers: list[str], every_claim: bool = True) -> None:
    """Each worker's reported claim (and, where completions are covered, each ack it reported accepted) is in
    the queue's record, named for that worker; the record names no one else. Without `every_claim` (a stream
    that broke), a claim made and given back inside the gap may be missing, but none is invented."""
    ledger = read_events(result.dir / "ledger.sqlite")
    start = next(e for e in ledger if e.kind == events.OBSERVER_START)
    assert start.data["covers"] == covers
    records = [e for e in ledger if e.kind.startswith(events.QUEUE_PREFIX)]
    claimed = {(e.job, e.worker) for e in records if e.kind == events.QUEUE_CLAIM}
    completed = {(e.job, e.worker, e.data["token"]) for e in records if e.kind == events.QUEUE_COMPLETE}
    reported = [e for e in ledger if e.kind == events.PROBE_CLAIM]
    if every_claim:
        assert reported and all((e.job, e.worker) in claimed for e in reported), (reported, claimed)
    else:
        assert claimed <= {(e.job, e.worker) for e in reported}, (reported, claimed)
    acks = {(e.job, e.worker, e.data["token"]) for e in ledger if e.kind == events.PROBE_ACK and e.data.get("ok")}
    if every_claim:
        assert completed == (acks if "complete" in covers else set())
    else:  # a completion read back from the keys after the gap names its token, not always its worker
        assert {(job, token) for job, _, token in completed} == {(job, token) for job, _, token in acks}
        assert {c for c in completed if c[1] is not None} <= acks
    workers = {e.worker for e in ledger if e.kind == events.PROCESS_START}
    named = {e.worker for e in records} - (set() if every_claim else {None})  # read back after a gap: unknown
    assert named <= workers, "every record names a worker of the run's"
    orders = [e.data["order"] for e in records]
    assert orders == sorted(orders) and len(set(orders)) == len(orders), "journaled in the queue's order, once"


@pytest.mark.parametrize(("target", "covers", "evidence"), CASES, ids=[case[0] for case in CASES])
def test_the_queues_record_names_each_worker_and_judges_as_the_probes_do(
        tmp_path: Path, target: str, covers: list[str], evidence: dict[str, str]) -> None:
    observed = run(tmp_path / "observed", target, SCENARIO)
    assert observed.code == 0 and observed.verdict["evidence"] == evidence, observed.stdout
    assert_recorded_as_reported(observed, covers)
    assert not [a for a in observed.verdict["anomalies"] if a["kind"] == "sources_disagree"], observed.stdout
    alone = run(tmp_path / "probes", target, SCENARIO, "--no-observer")
    assert alone.verdict["evidence"] == PROBES_ALONE
    assert not [e for e in read_events(alone.dir / "ledger.sqlite") if e.kind.startswith(events.QUEUE_PREFIX)]
    for key in ("verdict", "counts", "jobs"):
        assert alone.verdict[key] == observed.verdict[key], key
    assert [v["kind"] for v in alone.verdict["violations"]] == [v["kind"] for v in observed.verdict["violations"]]


def test_the_redis_record_survives_a_server_restart(tmp_path: Path) -> None:
    """The stream breaks with the restart; what happened before the observer followed it again is read
    back from the keys, so every accepted ack still has its completion, by its worker (a claim made and
    given back within the gap leaves no trace in the keys: a loaded CI run saw one)."""
    result = run(tmp_path, "redis_reliable", "restart_backend_during_recovery", "-p", "persistence=aof-always")
    assert result.code == 0, result.stdout
    assert_recorded_as_reported(result, ["claim", "complete", "fail", "release"], every_claim=False)


def test_on_a_redis_server_of_yours_the_observer_covers_nothing_and_says_why(tmp_path: Path) -> None:
    with LocalRedis.open(BackendSettings(tmp_path / "server", "theirs")) as server:
        result = run(tmp_path / "runs", "redis_reliable", "no_faults", "--backend-url", server.endpoint.url)
    assert result.code == 0, result.stdout + result.stderr
    ledger = read_events(result.dir / "ledger.sqlite")
    start = next(e for e in ledger if e.kind == events.OBSERVER_START)
    assert start.data["covers"] == [] and "replica" in start.data["note"]
    assert not [e for e in ledger if e.kind.startswith(events.QUEUE_PREFIX)]
    assert result.verdict["evidence"] == PROBES_ALONE
