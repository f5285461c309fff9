"""The sqs_visibility worker's lease fence, on a fake clock and an in-memory stand-in for the SQS client:
the fence is the worker's own deadline, so it is tested without an endpoint (moto accepts every receipt
handle a message ever had, so no endpoint's answer could show it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

WORKER = Path(__file__).resolve().parents[2] / "targets" / "sqs_visibility" / "worker.py"
VISIBILITY_S = 2


def load_worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sqs_visibility_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


worker = load_worker()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Endpoint:
    """Records each request; each takes `latency_s` on the clock before its answer (an accepted one)."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.latency_s = clock, 0.0
        self.calls: list[str] = []

    def change_message_visibility(self, **request: Any) -> dict[str, Any]:
        return self._answer("change_message_visibility")

    def delete_message(self, **request: Any) -> dict[str, Any]:
        return self._answer("delete_message")

    def _answer(self, call: str) -> dict[str, Any]:
        self.calls.append(call)
        self.clock.now += self.latency_s
        return {}


@pytest.fixture
def clock() -> Clock:
    return Clock()


def lease(clock: Clock, endpoint: Endpoint, fenced: bool = True) -> Any:
    """A lease whose receive was sent at the clock's now."""
    return worker.Lease(endpoint, "url", {"ReceiptHandle": "handle-1"}, clock(), VISIBILITY_S, fenced, clock=clock)


def test_the_deadline_keeps_a_margin_before_the_timeout(clock: Clock) -> None:
    held = lease(clock, Endpoint(clock))
    assert held.deadline == pytest.approx(clock.now + VISIBILITY_S - 0.1)
    assert worker.margin_s(30) == pytest.approx(1.5)


def test_an_extension_answered_after_the_old_deadline_does_not_extend(clock: Clock) -> None:
    endpoint = Endpoint(clock)
    held = lease(clock, endpoint)
    old = held.deadline
    clock.now = old - 0.05
    endpoint.latency_s = 0.1  # sent before the deadline, answered after it
    assert held.extend() is False
    assert endpoint.calls == ["change_message_visibility"]
    assert held.deadline == old
    assert held.holds() is False
    assert held.extend() is False  # lost for good: nothing more is sent
    assert endpoint.calls == ["change_message_visibility"]


def test_an_extension_answered_in_time_extends_from_its_send_time(clock: Clock) -> None:
    endpoint = Endpoint(clock)
    held = lease(clock, endpoint)
    clock.now += 1.0
    sent = clock.now
    endpoint.latency_s = 0.5
    assert held.extend() is True
    assert held.deadline == pytest.approx(sent + VISIBILITY_S - 0.1)


def test_a_delete_past_the_deadline_is_not_sent(clock: Clock) -> None:
    endpoint = Endpoint(clock)
    held = lease(clock, endpoint)
    clock.now = held.deadline
    assert held.delete(1) is None
    assert endpoint.calls == []


def test_a_delete_answered_after_the_deadline_is_unknown(clock: Clock) -> None:
    endpoint = Endpoint(clock)
    held = lease(clock, endpoint)
    clock.now = held.deadline - 0.05
    endpoint.latency_s = 0.1
    ok, said = held.delete(1)
    assert ok is None and "after the lease's deadline" in said
    assert endpoint.calls == ["delete_message"]


def test_unfenced_a_delete_past_the_deadline_is_sent(clock: Clock) -> None:
    endpoint = Endpoint(clock)
    held = lease(clock, endpoint, fenced=False)
    clock.now += 10 * VISIBILITY_S
    assert held.delete(1) == (True, "DeleteMessage accepted the receipt handle of receive 1")
    assert endpoint.calls == ["delete_message"]
