"""A Redis layout declared in target.toml: what the [observer] table accepts (and the one paragraph a malformed
one gets), and how the commands Redis replicates for a queue laid out that way read as the queue's record.
The commands below are what a replica receives for the scripts of tests/targets/active_list (a script's
writes inside MULTI/EXEC) and for a hash-per-job layout with per-worker lists."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from chaos.authoring.scaffold import new_target
from chaos.backends.redis.layout import LayoutError, RecordModel, RecordState, RedisLayout, parse_layout
from chaos.backends.redis.replication import Change
from chaos.errors import ConfigError
from chaos.target import load_target

ACTIVE_LIST = Path(__file__).resolve().parents[1] / "targets" / "active_list"
P = "chaos:r1:"


def layout(text: str) -> RedisLayout:
    return parse_layout(tomllib.loads(text)["observer"], "target.toml")


JSON_LAYOUT = """
[observer]
record = "job:{id}"
format = "json"
state = "status"
owner = "worker"
attempt = "attempt"
[observer.states]
queued = ["waiting"]
active = ["active"]
done = ["completed"]
dead = ["failed"]
[observer.lists]
queued = ["wait"]
active = ["active"]
dead = ["dead"]
"""


def record(job: str, status: str, worker: str | None, attempt: int) -> str:
    return json.dumps({"id": job, "payload": {}, "status": status, "worker": worker, "attempt": attempt,
                       "lock_until": 0})


def feed(model: RecordModel, *commands: list[str]) -> list[Change]:
    changes: list[Change] = []
    for command in commands:
        changes += model.apply([part.encode() for part in command])
    return changes


def script(*writes: list[str]) -> list[list[str]]:
    """A script's writes as Redis 7 replicates them: its effects, in one transaction."""
    return [["MULTI"], *writes, ["EXEC"]]


def json_model() -> RecordModel:
    model = RecordModel(layout(JSON_LAYOUT), P, 0)
    model.load(RecordState(), infer=False)
    feed(model, ["SELECT", "0"], *script(["SET", P + "job:j1", record("j1", "waiting", None, 0)],
                                         ["RPUSH", P + "wait", "j1"]))
    return model


def claim(worker: str, attempt: int) -> list[list[str]]:
    return script(["LMOVE", P + "wait", P + "active", "LEFT", "RIGHT"],
                  ["SET", P + "job:j1", record("j1", "active", worker, attempt)])


def test_the_bundled_test_queue_declares_its_layout_in_target_toml_alone() -> None:
    target = load_target(ACTIVE_LIST)
    assert target.observer is None and target.observed_by == "the [observer] layout"
    assert target.layout.covers == frozenset({"claim", "complete", "release", "fail"})
    assert target.layout.globs("chaos:[r]:") == ["chaos:\\[r\\]:job:*", "chaos:\\[r\\]:wait", "chaos:\\[r\\]:active",
                                                 "chaos:\\[r\\]:dead"]


def test_a_claim_a_stall_and_a_stale_completion_read_as_the_queues_record() -> None:
    m = json_model()
    assert feed(m, *claim("w1", 1)) == [Change("claim", "j1", "w1", "1")]
    renewal = ["SET", P + "job:j1", record("j1", "active", "w1", 1).replace('"lock_until": 0', '"lock_until": 9')]
    assert feed(m, renewal, ["PEXPIREAT", P + "job:j1", "99"]) == []  # the lock renewed: no change of ownership
    stalled = script(["LREM", P + "active", "1", "j1"], ["RPUSH", P + "wait", "j1"],
                     ["SET", P + "job:j1", record("j1", "waiting", "w1", 1)])
    assert feed(m, *stalled) == [Change("release", "j1", "w1", "1")]
    assert feed(m, *claim("w2", 2)) == [Change("claim", "j1", "w2", "2")]
    stale = script(["LREM", P + "active", "1", "j1"], ["SET", P + "job:j1", record("j1", "completed", "w1", 1)])
    assert feed(m, *stale) == [Change("complete", "j1", "w1", "1")]
    again = script(["SET", P + "job:j1", record("j1", "completed", "w2", 2)])
    assert feed(m, *again) == [Change("complete", "j1", "w2", "2")], "a completion over a completion is one too"
    assert not m.stale and m.state.lists == {P + "wait": [], P + "active": []}


def test_a_write_outside_a_transaction_reads_as_soon_as_it_lands_and_the_state_field_decides() -> None:
    m = json_model()
    # A library that moves the id and then writes the status in two commands: the move alone claims nothing.
    assert feed(m, ["LMOVE", P + "wait", P + "active", "LEFT", "RIGHT"]) == []
    assert feed(m, ["SET", P + "job:j1", record("j1", "active", "w1", 1)]) == [Change("claim", "j1", "w1", "1")]
    failed = script(["LREM", P + "active", "1", "j1"], ["ZADD", P + "dead", "1700000000000", "j1"],
                    ["SET", P + "job:j1", record("j1", "failed", "w1", 3)])
    assert feed(m, *failed) == [Change("fail", "j1", "w1", "3")]


def test_other_keys_and_databases_record_nothing_and_an_unreplayable_write_asks_for_the_state() -> None:
    m = json_model()
    assert feed(m, ["SET", "chaos:other:job:j1", record("j1", "active", "w9", 1)],
                ["SELECT", "1"], ["SET", P + "job:j1", record("j1", "active", "w9", 1)], ["SELECT", "0"]) == []
    assert not m.stale
    feed(m, ["LSET", P + "wait", "0", "j2"])
    assert m.stale


HASH_LAYOUT = """
[observer]
record = "jobs:{id}"
format = "hash"
state = "state"
attempt = "tries"
[observer.states]
active = ["running"]
done = ["ok"]
[observer.lists]
queued = ["queue"]
active = ["running:{owner}"]
"""


def test_a_hash_record_and_per_worker_lists_name_the_owner_from_the_lists_key() -> None:
    m = RecordModel(layout(HASH_LAYOUT), P, 0)
    m.load(RecordState(), infer=False)
    assert m.layout.covers == frozenset({"claim", "complete", "release"})
    feed(m, ["SELECT", "0"], *script(["HSET", P + "jobs:j1", "state", "new", "tries", "0"],
                                     ["LPUSH", P + "queue", "j1"]))
    taken = script(["RPOPLPUSH", P + "queue", P + "running:w3"], ["HSET", P + "jobs:j1", "state", "running"],
                   ["HINCRBY", P + "jobs:j1", "tries", "1"])
    assert feed(m, *taken) == [Change("claim", "j1", "w3", "1")]
    back = script(["LREM", P + "running:w3", "0", "j1"], ["RPUSH", P + "queue", "j1"],
                  ["HSET", P + "jobs:j1", "state", "new"])
    assert feed(m, *back) == [Change("release", "j1", "w3", "1")]
    assert feed(m, ["RPOPLPUSH", P + "queue", P + "running:w4"]) == [Change("claim", "j1", "w4", "1")]
    assert feed(m, *script(["LREM", P + "running:w4", "1", "j1"], ["HSET", P + "jobs:j1", "state", "ok"])) == [
        Change("complete", "j1", "w4", "1")]


def test_a_state_read_after_a_gap_infers_what_the_stream_did_not_show() -> None:
    m = json_model()
    feed(m, *claim("w1", 1))
    after = RecordState(records={"j1": json.loads(record("j1", "active", "w2", 2))}, lists={P + "active": ["j1"]})
    assert m.load(after, infer=True) == [Change("claim", "j1", "w2", "2")]
    done = RecordState(records={"j1": json.loads(record("j1", "completed", "w2", 2))})
    assert m.load(done, infer=True) == [Change("complete", "j1", "w2", "2")]
    assert m.load(done, infer=True) == []


MALFORMED: list[tuple[str, str]] = [
    ('[observer]\nrecord = "job"\n[observer.lists]\nactive = ["a"]', "needs {id}"),
    ('[observer]\nrecord = "job:{id}:{id}"\n[observer.lists]\nactive = ["a"]', "uses {id}"),
    ('[observer]\nrecord = "job:{id}"\nformat = "xml"\n[observer.lists]\nactive = ["a"]', "format = 'xml'"),
    ('[observer]\nrecord = "job:{id}"\nstate = "status"\n[observer.lists]\nactive = ["a"]', "together"),
    ('[observer]\nrecord = "job:{id}"\nstate = "s"\n[observer.states]\nrunning = ["r"]', "phase 'running'"),
    ('[observer]\nrecord = "job:{id}"\nstate = "s"\n[observer.states]\nactive = ["r"]\ndone = ["r"]', "two phases"),
    ('[observer]\nrecord = "job:{id}"\n[observer.lists]\nqueued = ["q"]', "how a claimed job shows"),
    ('[observer]\nrecord = "job:{id}"\nkey = "x"\n[observer.lists]\nactive = ["a"]', "sets key"),
    ('[observer]\nstate = "s"\n[observer.states]\nactive = ["r"]', "no record key"),
    ('[observer]\n[observer.lists]\nactive = ["running:{id}"]', "uses {id}"),
    ('[observer]\n[observer.lists]\nactive = "a"\ndone = [1]', "lists.done = [1]"),
]


@pytest.mark.parametrize(("text", "says"), MALFORMED, ids=[says for _, says in MALFORMED])
def test_a_malformed_layout_is_refused_in_one_paragraph_with_the_expected_form(text: str, says: str) -> None:
    with pytest.raises(LayoutError) as caught:
        layout(text)
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError) and caught.value.exit_code == 2
    assert message.startswith("target.toml: [observer] ") and says in message, message
    assert 'record = "job:{id}"' in message and "\n\n" not in message


def load_with(tmp_path: Path, backend: str, observer: str) -> Any:
    folder = tmp_path / "t"
    folder.mkdir(exist_ok=True)
    (folder / "target.toml").write_text(f'backend = "{backend}"\nworker = ["{{python}}", "w.py"]\n{observer}\n'
                                        '[contract]\nrecovery_bound_s = 1.0\n')
    return load_target(folder)


def test_only_a_kind_that_reads_layouts_takes_an_observer_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the postgres kind reads no observer from configuration"):
        load_with(tmp_path, "postgres", '[observer]\nrecord = "job:{id}"')
    with pytest.raises(ConfigError, match="expected 'module:Class'"):
        load_with(tmp_path, "redis", "observer = 3")


def test_a_library_scaffold_has_no_reference_observer_and_its_layout_needs_only_filling_in(tmp_path: Path) -> None:
    folder = new_target("my_lib", "redis", tmp_path, library=True)
    assert sorted(p.name for p in folder.iterdir()) == ["control.py", "target.toml", "worker.py"]
    target = load_target(folder)
    assert target.observed_by is None and target.reconciler is None, "it judges from the probes until filled in"
    toml = folder / "target.toml"
    filled = re.sub(r"^# (\[observer|record|format|state|owner|attempt|queued|active|done|dead)", r"\1",
                    toml.read_text(), flags=re.MULTILINE)
    toml.write_text(filled)
    target = load_target(folder)
    assert target.observed_by == "the [observer] layout" and target.layout.covers == frozenset(
        {"claim", "complete", "release", "fail"})


def test_a_library_scaffold_of_a_kind_that_reads_no_layout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--library scaffolds an observer declared as a key layout, which the "
                                          "postgres kind does not read"):
        new_target("my_lib", "postgres", tmp_path, library=True)
    assert not (tmp_path / "my_lib").exists()
