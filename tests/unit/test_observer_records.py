"""What the bundled Redis and RabbitMQ observers read from their server's own record, taken apart without a
server: Redis's replication stream (its snapshot skipped, its commands split anywhere by the network, the
processing-list layout replayed into claims, completions, releases and failures) and RabbitMQ's firehose
messages, with the headers RabbitMQ 3.10.8 sends."""

from __future__ import annotations

import json

import pytest

from chaos.backends.rabbitmq.observer import connection_named, trace_of
from chaos.backends.redis.replication import Change, ListModel, ReplicationRefused, State, StreamParser, parse_state
from chaos.worker.redis import Keys, entry

KEYS = Keys("chaos:run-1:")
QUEUE, DONE, DEAD = KEYS.queue, KEYS.done, KEYS.dead
W1, W2 = KEYS.processing("w1:aaaa1111"), KEYS.processing("w2:bbbb2222")
E1, E2 = entry("job-1", {"handler_s": 0}), entry("job-2", {"handler_s": 0})


def resp(*parts: str) -> bytes:
    encoded = [part.encode() for part in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded)


def every_split(data: bytes, parser_of: type[StreamParser] = StreamParser) -> list[list[list[bytes]]]:
    """What a parser makes of `data` cut in two at each point (the network may cut it anywhere)."""
    results = []
    for cut in range(len(data) + 1):
        parser = parser_of()
        results.append(parser.feed(data[:cut]) + parser.feed(data[cut:]))
    return results


def test_a_disk_snapshot_is_skipped_and_the_commands_after_it_parse_wherever_the_stream_is_cut() -> None:
    snapshot = b"REDIS0010\xfa\tredis-ver\x067.0.15\r\n*\xff"  # binary, and holding what looks like RESP
    stream = resp("SELECT", "0") + resp("RPUSH", QUEUE, E1)
    data = b"\n\n$%d\r\n" % len(snapshot) + snapshot + stream
    expected = [[b"SELECT", b"0"], [b"RPUSH", QUEUE.encode(), E1.encode()]]
    assert all(result == expected for result in every_split(data))
    parser = StreamParser()
    parser.feed(data)
    assert parser.offset == len(stream), "the replica acknowledges the command stream's bytes"


def test_a_diskless_snapshot_ends_at_its_mark_even_when_the_mark_is_split() -> None:
    mark = b"e033bc658967247a26c2f347c437be6325a1a40c"
    data = b"$EOF:" + mark + b"\r\nREDIS0010\x00\x01binary\xff" + mark + resp("PUBLISH", "chaos:x", "1")
    assert all(result == [[b"PUBLISH", b"chaos:x", b"1"]] for result in every_split(data))


def test_an_error_instead_of_the_snapshot_is_a_refusal() -> None:
    with pytest.raises(ReplicationRefused, match="LOADING"):
        StreamParser().feed(b"-LOADING Redis is loading the dataset in memory\r\n")


def replay(*commands: tuple[str, ...], model: ListModel | None = None) -> list[Change]:
    model = model or ListModel(KEYS, 0)
    return [change for command in commands for change in model.apply([part.encode() for part in command])]


def test_a_move_into_a_processing_list_is_a_claim_by_its_worker_and_the_ack_a_completion() -> None:
    changes = replay(("SELECT", "0"), ("RPUSH", QUEUE, E1, E2),
                     ("LMOVE", QUEUE, W1, "left", "right"),  # a blocked BLMOVE, served: replicated as LMOVE
                     ("MULTI",), ("LREM", W1, "1", E1), ("HSET", DONE, "job-1", "tok-1"), ("EXEC",),
                     ("LMOVE", QUEUE, W2, "LEFT", "RIGHT"))
    assert changes == [Change("claim", "job-1", "w1", "w1:aaaa1111"), Change("complete", "job-1", "w1", "tok-1"),
                       Change("claim", "job-2", "w2", "w2:bbbb2222")]


def test_the_reconciler_and_a_failed_handler_give_a_job_back_and_the_dead_set_fails_it() -> None:
    model = ListModel(KEYS, 0)
    replay(("SELECT", "0"), ("RPUSH", QUEUE, E1, E2), ("LMOVE", QUEUE, W1, "LEFT", "RIGHT"),
           ("LMOVE", QUEUE, W2, "LEFT", "RIGHT"), model=model)
    recovered = replay(("MULTI",), ("LMOVE", W1, QUEUE, "RIGHT", "LEFT"), ("DEL", KEYS.orphan("w1:aaaa1111")),
                       ("EXEC",), model=model)
    retried = replay(("MULTI",), ("LREM", W2, "1", E2), ("HINCRBY", KEYS.attempts, "job-2", "1"),
                     ("RPUSH", QUEUE, E2), ("EXEC",), model=model)
    dead = replay(("LMOVE", QUEUE, W1, "LEFT", "RIGHT"), ("MULTI",), ("LREM", W1, "1", E1),
                  ("HINCRBY", KEYS.attempts, "job-1", "1"), ("SADD", DEAD, "job-1"), ("EXEC",), model=model)
    assert recovered == [Change("release", "job-1", "w1")]
    assert retried == [Change("release", "job-2", "w2")]
    assert dead == [Change("claim", "job-1", "w1", "w1:aaaa1111"), Change("fail", "job-1", "w1")]
    assert model.state.lists[QUEUE] == [E2] and not model.stale


def test_a_completion_outside_any_processing_list_names_no_one() -> None:
    assert replay(("SELECT", "0"), ("HSET", DONE, "job-1", "tok")) == [Change("complete", "job-1", None, "tok")]


def test_another_database_and_other_keys_are_not_the_queues() -> None:
    model = ListModel(KEYS, 0)
    assert replay(("SELECT", "3"), ("RPUSH", QUEUE, E1), ("LMOVE", QUEUE, W1, "LEFT", "RIGHT"), model=model) == []
    assert replay(("SELECT", "0"), ("RPUSH", "someone-else:queue", E1), ("SET", KEYS.heartbeat("w1:a"), "1"),
                  model=model) == []
    assert not model.stale and model.state.lists.get(QUEUE, []) == []


@pytest.mark.parametrize("command", [("LMOVE", QUEUE, W1, "LEFT", "RIGHT"), ("LSET", QUEUE, "0", E1),
                                     ("RENAME", W1, W2), ("LREM", W1, "1", E1)])
def test_a_write_the_model_cannot_replay_marks_it_stale(command: tuple[str, ...]) -> None:
    model = ListModel(KEYS, 0)
    replay(("SELECT", "0"), command, model=model)
    assert model.stale, "the observer then reads the state again"


def test_after_a_gap_the_state_read_again_gives_the_changes_the_stream_did_not_show() -> None:
    model = ListModel(KEYS, 0)
    assert model.load(State(lists={QUEUE: [E1, E2]}), infer=False) == []
    replay(("SELECT", "0"), ("LMOVE", QUEUE, W1, "LEFT", "RIGHT"), model=model)
    later = State(lists={QUEUE: [], W2: [E2]}, done={"job-1": "tok-1"})
    assert model.load(later, infer=True) == [Change("complete", "job-1", "w1", "tok-1"),
                                             Change("claim", "job-2", "w2", "w2:bbbb2222")]
    assert model.load(State(lists={QUEUE: [E2]}, done={"job-1": "tok-1"}), infer=True) == [
        Change("release", "job-2", "w2")]


def test_the_state_scripts_reply_is_the_queue_the_done_hash_the_dead_set_and_every_processing_list() -> None:
    state = parse_state([[E1], ["job-2", "tok-2"], ["job-3"], [W1, [E2]]], KEYS)
    assert state == State(lists={QUEUE: [E1], W1: [E2]}, done={"job-2": "tok-2"}, dead={"job-3"})


# RabbitMQ 3.10.8's firehose and event exchange, as it sent them (connection names as it makes them).
CONNECTION = "127.0.0.1:42030 -> 127.0.0.1:30781"
BODY = json.dumps({"id": "job-1", "payload": {}}).encode()


def test_a_delivery_of_the_jobs_queue_is_a_claim_on_its_connection() -> None:
    headers = {"exchange_name": "", "routing_keys": ["jobs"], "redelivered": 1, "vhost": "/",
               "connection": CONNECTION, "channel": 1, "user": "chaos"}
    assert trace_of("deliver.jobs", headers, BODY) == ("claim", "job-1", CONNECTION)
    assert trace_of("deliver.jobs.dead", headers, BODY) is None, "the snapshot's reading of the dead queue"


def test_a_publish_routed_to_the_dead_queue_is_a_failure_and_an_enqueue_is_nothing() -> None:
    dead = {"exchange_name": "", "routing_keys": ["jobs.dead"], "connection": CONNECTION,
            "routed_queues": ["jobs.dead"]}
    assert trace_of("publish.", dead, BODY) == ("fail", "job-1", CONNECTION)
    assert trace_of("publish.", dict(dead, routed_queues=["jobs"]), BODY) is None
    assert trace_of("deliver.jobs", {"connection": CONNECTION}, b"not json") is None


def test_a_connection_created_event_names_its_connection() -> None:
    event = {"name": CONNECTION, "user_provided_name": "w1", "vhost": "/", "user": "chaos"}
    assert connection_named(event) == (CONNECTION, "w1")
    assert connection_named({"name": CONNECTION.encode(), "user_provided_name": b"w2"}) == (CONNECTION, "w2")
    assert connection_named({"name": CONNECTION}) is None, "a connection its client did not name"
