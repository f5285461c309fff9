"""The sink over real HTTP: token enforcement, commit-before-answer, and gates."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

import pytest

from chaos import probe
from chaos.errors import ConfigError, NotExercised
from chaos.ledger import Ledger, read_events
from chaos.runtime.sink import Sink


def in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(fn(*args)), daemon=True)
    thread.start()
    return thread, result


def answered(sink: Sink, fn: Any, *args: Any, timeout: float = 5.0) -> Any:
    """Send a probe that no armed gate may hold, and fail (releasing every gate) instead of hanging if
    one does: the probe client waits for its answer as long as a gate holds it."""
    thread, result = in_thread(fn, *args)
    thread.join(timeout)
    if thread.is_alive():
        sink.gates.release_all()
        pytest.fail(f"{fn.__name__}{args} was held by a gate whose filters should have let it pass")
    return result[0]


def kinds(ledger: Ledger) -> list[str]:
    return [e.kind for e in ledger.events()]


def test_probe_is_committed_before_the_answer(sink: Sink, ledger: Ledger) -> None:
    answer = probe.claim("job-1", "tok")
    on_disk = read_events(ledger.path)
    assert on_disk[-1].kind == "probe.claim" and on_disk[-1].seq == answer["seq"]
    assert on_disk[-1].job == "job-1" and on_disk[-1].worker == "w-test" and on_disk[-1].data["token"] == "tok"


@pytest.mark.parametrize("token", [None, "wrong"])
def test_requests_without_the_run_token_are_refused(sink: Sink, ledger: Ledger, token: str | None) -> None:
    host, port = sink.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    headers = {"X-Chaos-Token": token} if token else {}
    conn.request("POST", "/probe/effect", json.dumps({"job": "job-1"}), headers)
    response = conn.getresponse()
    assert response.status == 401
    assert "X-Chaos-Token" in json.loads(response.read())["error"]
    assert "probe.effect" not in kinds(ledger)


def test_malformed_probe_is_refused_with_what_was_expected(sink: Sink) -> None:
    with pytest.raises(probe.ProbeError, match="expected POST /probe/"):
        probe.send("teleport", "job-1")


def test_after_gate_holds_the_committed_probe_until_released(sink: Sink, ledger: Ledger) -> None:
    gate = sink.arm("after:effect", job="job-2")
    answered(sink, probe.effect, "job-1", "t")  # other jobs pass straight through
    thread, result = in_thread(probe.effect, "job-2", "t")
    held = gate.wait(5)
    assert held["job"] == "job-2" and held["point"] == "effect"
    thread.join(0.3)
    assert thread.is_alive(), "the held worker must not get its answer before release"
    assert kinds(ledger).count("probe.effect") == 2, "after:effect holds an effect already committed"
    sink.release(gate)
    thread.join(5)
    assert not thread.is_alive() and result[0]["ok"]
    assert kinds(ledger)[-3:] == ["probe.effect", "gate.matched", "gate.released"]


def test_before_gate_holds_the_probe_uncommitted(sink: Sink, ledger: Ledger) -> None:
    gate = sink.arm("before:ack")
    thread, _ = in_thread(probe.ack, "job-1", "t", True)
    gate.wait(5)
    assert "probe.ack" not in kinds(ledger)
    sink.release(gate)
    thread.join(5)
    assert kinds(ledger)[-1] == "probe.ack"


def test_nth_match_holds_only_the_nth_probe(sink: Sink) -> None:
    gate = sink.arm("before:claim", job="job-1", nth=2)
    answered(sink, probe.claim, "job-1", "first")  # the first claim passes
    assert not gate.matched
    thread, _ = in_thread(probe.claim, "job-1", "second")
    assert gate.wait(5)["token"] == "second"
    sink.release(gate)
    thread.join(5)
    answered(sink, probe.claim, "job-1", "third")  # a matched gate is spent: later probes pass
    assert gate.seen == 2


def test_nth_counts_probes_another_gate_holds(sink: Sink, ledger: Ledger) -> None:
    first = sink.arm("after:claim", job="job-1")
    second = sink.arm("after:claim", job="job-1", nth=2)
    thread, _ = in_thread(probe.claim, "job-1", "first")
    assert first.wait(5)["token"] == "first"
    assert not second.matched and second.seen == 1, "the first claim counts for the second gate too"
    sink.release(first)
    thread.join(5)
    thread, _ = in_thread(probe.claim, "job-1", "second")
    assert second.wait(5)["token"] == "second", "nth=2 is the job's second claim, not the third"
    sink.release(second)
    thread.join(5)
    assert not thread.is_alive()


def test_a_probe_two_gates_take_is_held_until_both_are_released(sink: Sink, ledger: Ledger) -> None:
    gates = [sink.arm("after:effect", job="job-1"), sink.arm("after:effect")]
    thread, result = in_thread(probe.effect, "job-1", "t")
    assert all(gate.wait(5)["job"] == "job-1" for gate in gates)
    sink.release(gates[0])
    thread.join(0.3)
    assert thread.is_alive(), "still held by the second gate"
    sink.release(gates[1])
    thread.join(5)
    assert not thread.is_alive() and result[0]["ok"]
    assert kinds(ledger).count("gate.matched") == 2


def test_worker_filter(sink: Sink) -> None:
    gate = sink.arm("after:claim", worker="w-other")
    answered(sink, probe.claim, "job-1", "t")
    assert not gate.matched


def test_gate_that_never_matches_raises_not_exercised(sink: Sink) -> None:
    gate = sink.arm("after:ack", job="nobody")
    with pytest.raises(NotExercised, match="never matched"):
        gate.wait(0.2)


def test_bad_gate_spec_is_a_config_error(sink: Sink) -> None:
    with pytest.raises(ConfigError, match="before:<point>"):
        sink.arm("during:effect")


def test_idempotent_sink_refuses_a_repeated_key(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    with Sink(ledger, mode="idempotent") as sink:
        monkeypatch.setenv("CHAOS_SINK_URL", sink.url)
        monkeypatch.setenv("CHAOS_RUN_TOKEN", sink.token)
        assert probe.effect("job-1", "t1", key="k")["accepted"] is True
        assert probe.effect("job-1", "t2", key="k")["accepted"] is False
    assert [e.data["accepted"] for e in ledger.events() if e.kind == "probe.effect"] == [True, False]


def test_fenced_sink_refuses_an_effect_older_than_one_seen(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    with Sink(ledger, mode="fenced") as sink:
        monkeypatch.setenv("CHAOS_SINK_URL", sink.url)
        monkeypatch.setenv("CHAOS_RUN_TOKEN", sink.token)
        assert probe.send("effect", "job-1", token="t2", fence=2)["accepted"] is True
        assert probe.send("effect", "job-1", token="t1", fence=1)["accepted"] is False, "a stale writer is fenced"
        assert probe.send("effect", "job-1", token="t3", fence=3)["accepted"] is True
        assert probe.send("effect", "job-2", token="t1", fence=1)["accepted"] is True, "fences are per job"
