"""The consumer group's record as Redis 7.0 replicates it (the commands below are what a replica received
for redis_streams' scripts): which writes are claims, completions and failures, and by whom."""

from __future__ import annotations

import json

from chaos.backends.redis.replication import Change
from chaos.backends.redis.streams import StreamModel, StreamState, parse_state
from chaos.worker.redis_streams import StreamKeys

KEYS = StreamKeys("p:")
ENTRY = "1796535253358-0"


def job(name: str) -> str:
    return json.dumps({"id": name, "payload": {}})


def xclaim(consumer: str, count: int, time_ms: int) -> list[str]:
    return ["XCLAIM", "p:stream", "workers", consumer, "0", ENTRY, "TIME", str(time_ms), "RETRYCOUNT", str(count),
            "FORCE", "JUSTID", "LASTID", ENTRY]


def feed(model: StreamModel, *commands: list[str]) -> list[Change]:
    changes: list[Change] = []
    for command in commands:
        changes += model.apply([part.encode() for part in command])
    return changes


def model() -> StreamModel:
    m = StreamModel(KEYS, 0)
    m.load(StreamState(), infer=False)
    feed(m, ["SELECT", "0"], ["XGROUP", "CREATE", "p:stream", "workers", "0", "MKSTREAM"],
         ["XADD", "p:stream", ENTRY, "job", job("job-1")])
    return m


def test_a_delivery_and_a_reclaim_are_claims_and_an_extension_is_none() -> None:
    m = model()
    assert feed(m, xclaim("w1:a", 1, 1000)) == [Change("claim", "job-1", "w1", f"w1:a/{ENTRY}/1")]
    assert feed(m, xclaim("w1:a", 1, 1600)) == []  # XCLAIM JUSTID to itself: the lease extended
    assert feed(m, xclaim("w1:a", 1, 400)) == []  # the idle mark of a release: still its consumer's entry
    assert feed(m, xclaim("w2:b", 2, 2700)) == [Change("claim", "job-1", "w2", f"w2:b/{ENTRY}/2")]
    assert not m.stale


def test_a_completion_is_by_the_claim_its_done_record_names_whoever_held_the_entry() -> None:
    m = model()
    feed(m, xclaim("w1:a", 1, 1000), xclaim("w2:b", 2, 2700))
    stale = f"w1:a/{ENTRY}/1"
    changes = feed(m, ["MULTI"], ["XACK", "p:stream", "workers", ENTRY], ["HSET", "p:done", "job-1", stale], ["EXEC"])
    assert changes == [Change("complete", "job-1", "w1", stale)]
    assert m.state.pending == {} and m.state.done == {"job-1": stale}


def test_a_dead_letter_is_a_failure_by_the_entrys_consumer() -> None:
    m = model()
    feed(m, xclaim("w1:a", 3, 1000))
    changes = feed(m, ["MULTI"], ["XADD", "p:dead-letters", "1796535253999-0", "source", ENTRY, "job", job("job-1"),
                                  "deliveries", "3"], ["XACK", "p:stream", "workers", ENTRY], ["EXEC"])
    assert changes == [Change("fail", "job-1", "w1")]


def test_a_write_it_cannot_replay_makes_it_read_the_state_again() -> None:
    m = model()
    feed(m, ["XTRIM", "p:stream", "MAXLEN", "0"])
    assert m.stale


def test_the_state_read_after_a_restart_gives_what_the_stream_did_not_show() -> None:
    m = model()
    feed(m, xclaim("w1:a", 1, 1000))
    reply = [[[ENTRY, ["job", job("job-1")]]], [[ENTRY, "w2:b", 5, 2]], [], []]
    assert m.load(parse_state(reply), infer=True) == [Change("claim", "job-1", "w2", f"w2:b/{ENTRY}/2")]


def test_a_job_claimed_and_acknowledged_while_the_stream_was_not_followed_shows_its_claim_first() -> None:
    """A restart's gap can hold a whole execution: the done record names the claim the ack script acted
    for, which the record must show before the completion (else that completion reads as a stale owner's)."""
    m = model()
    token = f"w3:c/{ENTRY}/1"
    reply = [[[ENTRY, ["job", job("job-1")]]], [], ["job-1", token], []]
    assert m.load(parse_state(reply), infer=True) == [Change("claim", "job-1", "w3", token),
                                                       Change("complete", "job-1", "w3", token)]


def test_a_completion_of_the_claim_the_model_saw_is_not_claimed_again() -> None:
    m = model()
    feed(m, xclaim("w1:a", 1, 1000))
    token = f"w1:a/{ENTRY}/1"
    reply = [[[ENTRY, ["job", job("job-1")]]], [], ["job-1", token], []]
    assert m.load(parse_state(reply), infer=True) == [Change("complete", "job-1", "w1", token)]
