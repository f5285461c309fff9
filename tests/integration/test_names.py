"""Names the user chooses (target, scenario, worker) are checked once and never reach a path or a server's
pattern syntax raw: a name that climbs out of the run dir is a usage error, and a name with glob
characters (`rr[v2]`) neither hides a stuck job from the final snapshot nor leaves keys on a server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import redis

from chaos.backends.base import BackendSettings
from chaos.backends.redis.control import RedisQueueControl
from chaos.backends.redis.external import ExternalRedis
from chaos.backends.redis.local import LocalRedis
from chaos.contract import Contract
from chaos.discovery import bundled
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.worker.redis import Keys, entry
from tests.integration.runner import CliResult
from tests.integration.test_every_run_ends import run, scenario, target

GLOB_RUN_ID = "20260101-000000-000000-rr[v2]-x*?"  # what a run id held before ids were reduced


def assert_name_refused(result: CliResult, *phrases: str) -> None:
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, "one paragraph"
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


@pytest.mark.parametrize(("name", "phrase"), [
    ('"../../../outside"', "contains a path separator"),
    ('"a/b"', "contains a path separator"),
    ('".."', "contains '..'"),
    ('"a\\u0000b"', "contains a NUL or control character"),
    ('"tab\\there"', "contains a NUL or control character"),
    ("{a = 1}", "is a dict, not a string"),
    ('""', "is empty"),
])
def test_a_target_name_that_is_no_plain_name_is_a_usage_error(tmp_path: Path, name: str, phrase: str) -> None:
    runs = tmp_path / "deep" / "er" / "runs"
    result = run(tmp_path / "deep" / "er", target(tmp_path, name=name), "no_faults")
    assert_name_refused(result, "The target name in", phrase, "target.toml")
    assert not runs.exists(), "nothing was created for a run that never started"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mytarget"], "nothing was written beside the runs dir"


def test_a_worker_name_that_climbs_out_of_the_run_dir_is_a_usage_error(tmp_path: Path) -> None:
    result = run(tmp_path, "pg_lease", scenario(tmp_path, "ctx.start_worker('../../x y')"))
    assert_name_refused(result, "The worker name '../../x y' contains a path separator")
    assert not [p for p in tmp_path.rglob("x y*")], "no log was written for it, in the run dir or outside"
    assert not run_processes(result.dir)
    assert read_events(result.dir / "ledger.sqlite")[-1].data["status"] == "error"


def test_a_scenario_file_whose_name_holds_a_control_character_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad\x01name.py"
    path.write_text('"""x"""\nFAULTS = ()\n\n\ndef run(ctx):\n    pass\n')
    result = run(tmp_path, "pg_lease", path)
    assert_name_refused(result, "The scenario name", "contains a NUL or control character")


def glob_named_copy(tmp_path: Path, reconciler: bool) -> Path:
    """redis_reliable as `rr[v2]`, with or without its reconciler (without: a killed worker's job stays
    in its processing list for good, as a stuck job)."""
    path = tmp_path / "rr[v2]"
    shutil.copytree(bundled("targets") / "redis_reliable", path, ignore=shutil.ignore_patterns("__pycache__"))
    toml = path / "target.toml"
    lines = [line for line in toml.read_text().splitlines()
             if not line.startswith("name =") and (reconciler or not line.startswith("reconciler ="))]
    toml.write_text("\n".join(lines) + "\n")
    return path


def test_a_stuck_job_of_a_target_named_with_glob_characters_fails_the_run(tmp_path: Path) -> None:
    result = run(tmp_path, glob_named_copy(tmp_path, reconciler=False), "kill_after_effect_before_ack")
    assert result.code == 1, result.stdout + result.stderr
    assert "rr_v2_" in result.dir.name and "[" not in result.dir.name, "the run id keeps to a safe alphabet"
    ledger = read_events(result.dir / "ledger.sqlite")
    killed = next(e for e in ledger if e.kind == "fault" and e.data["kind"] == "kill")
    snapshot = {e.job: e.data for e in ledger if e.kind == "snapshot"}
    stuck = [job for job, state in snapshot.items() if state["state"] == "claimed"]
    assert len(stuck) == 1 and snapshot[stuck[0]]["owner"].startswith(killed.data["target"]), snapshot
    assert json.loads((result.dir / "verdict.json").read_text())["verdict"] == "fail"


def test_a_target_named_with_glob_characters_recovers_as_its_original_does(tmp_path: Path) -> None:
    result = run(tmp_path, glob_named_copy(tmp_path, reconciler=True), "kill_after_effect_before_ack")
    assert result.code == 0, result.stdout + result.stderr
    recovered = [e for e in read_events(result.dir / "ledger.sqlite") if e.kind == "snapshot"]
    assert len(recovered) == 8 and all(e.data["state"] == "done" for e in recovered)


def test_an_external_run_of_a_target_named_with_glob_characters_leaves_no_key(tmp_path: Path) -> None:
    with LocalRedis.open(BackendSettings(tmp_path / "server", "run-1")) as server:
        client = redis.Redis.from_url(server.endpoint.url, decode_responses=True)
        client.set("users-key", "kept")
        result = run(tmp_path, glob_named_copy(tmp_path, reconciler=True), "kill_after_effect_before_ack",
                     "--backend-url", server.endpoint.url)
        assert result.code == 0, result.stdout + result.stderr
        assert client.keys("*") == ["users-key"], "every key of the run was found and deleted, nothing else"
        client.close()


def test_a_run_prefix_with_glob_characters_is_matched_literally_on_a_real_redis(tmp_path: Path) -> None:
    """The escaping itself: a prefix holding `[v2]`, `*` and `?` finds its own keys (the snapshot's
    processing lists, an external run's keys to delete) and no one else's."""
    with LocalRedis.open(BackendSettings(tmp_path, "run-1")) as server:
        client = redis.Redis.from_url(server.endpoint.url, decode_responses=True)
        external = ExternalRedis.open(BackendSettings(Path("/nonexistent"), GLOB_RUN_ID, server.endpoint.url))
        keys, decoy = Keys(external.namespace), Keys(external.namespace.replace("[v2]", "v").replace("*?", "zz"))
        for own in (keys, decoy):
            client.rpush(own.processing("w1:abcd"), entry("job-0001", {}))
            client.set(own.heartbeat("w1:abcd"), "1")
        unescaped = keys.processing("*")
        assert client.keys(unescaped) == [decoy.processing("w1:abcd")], "unescaped, the pattern finds another run's"
        control = RedisQueueControl(external, {}, Contract.from_dict({"recovery_bound_s": 1}, "test"))
        try:
            assert [(s.job, s.state, s.owner) for s in control.snapshot()] == [("job-0001", "claimed", "w1")]
        finally:
            control.close()
        external.close()
        assert sorted(client.keys("*")) == sorted([decoy.processing("w1:abcd"), decoy.heartbeat("w1:abcd")])
        client.close()
