"""A verdict names the server as an emulator when its provider recorded one (backend.start's `emulator`,
as the local SQS provider records moto): a finding on an emulator is a finding on that emulator. A verdict
on a real server carries no such note, and the note never changes the verdict."""

from __future__ import annotations

from chaos import events
from chaos.check.checker import judge
from tests.history import History


def test_a_verdict_on_an_emulator_names_it_and_keeps_its_verdict() -> None:
    h = History().record(events.backend_start(provider="local", emulator="moto 5.2.6"))
    verdict = judge(h.enqueue("a").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass"
    assert verdict.notes == ["the backend is an emulator, moto 5.2.6: a finding here is a finding on moto 5.2.6, "
                             "not necessarily on the service it imitates"]


def test_a_verdict_on_a_real_server_has_no_emulator_note() -> None:
    h = History().record(events.backend_start(provider="local", port=6379))
    verdict = judge(h.enqueue("a").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass" and verdict.notes == []
