"""The test ledger builder (tests/history.py) journals each fault kind as the real nemesis, supervisor
and backend do: the same event kinds, in the same order. Checker tests build their ledgers with it, so
a change in the runtime's journaling order breaks this test instead of leaving the checker tested
against ledgers no run writes anymore."""

from __future__ import annotations

import time
from pathlib import Path

from chaos import Context, RunOptions, Scenario, find_target, read_events, run_scenario
from chaos import events as vocabulary
from chaos.events import Event
from tests.history import History

FAULT_EVENTS = (vocabulary.FAULT, vocabulary.FAULT_APPLIED, vocabulary.FAULT_HEALED, vocabulary.PROCESS_START,
                vocabulary.PROCESS_EXIT, vocabulary.BACKEND_RESTART, vocabulary.NETWORK_CUT)


def every_fault(ctx: Context) -> None:
    """One fault of each kind, one after another, with no job in flight."""
    ctx.start_worker("w1")
    ctx.start_worker("w2")
    ctx.kill("w1")
    ctx.stop_until("w2", lambda event: False, 0.1)
    ctx.restart("w2")
    ctx.restart_backend("immediate")
    ctx.start_worker("w3", clock_offset_s=600.0)
    time.sleep(1.0)  # the restarted w2 has connected to its proxy by now, so the partition has a connection to cut
    ctx.partition_until("w2", lambda event: False, 0.1)
    ctx.wait_drained(5.0)  # no job: drained at once, which closes the last fault's window


def sequences(ledger: list[Event]) -> dict[str, list[str]]:
    """Per fault kind, the kinds of the fault's events and of the process and backend events it caused,
    from its journal entry to the next fault's (or to the end of the scenario)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for event in ledger:
        if event.kind == vocabulary.DRAINED:
            current = None
        if event.kind == vocabulary.FAULT:
            current = found[event.data["kind"]] = []
        if current is not None and event.kind in FAULT_EVENTS:
            current.append(event.kind)
    return found


def built(kind: str) -> list[str]:
    history = {
        "kill": lambda h: h.kill("w1"),
        "stop": lambda h: h.stop("w2").heal("w2"),
        "restart": lambda h: h.restart("w2"),
        "backend_restart": lambda h: h.backend_restart(),
        "clock": lambda h: h.clock("w3", 600.0),
        "partition": lambda h: h.partition("w2", cut=1).heal("w2"),
    }[kind](History())
    return sequences(history.events)[kind]


def test_the_builder_journals_every_fault_kind_as_a_real_run_does(tmp_path: Path) -> None:
    scenario = Scenario("every_fault", Path(__file__), "", every_fault,
                        ("kill", "stop", "restart", "backend_restart", "clock", "partition"))
    result = run_scenario(find_target("pg_lease"), scenario, RunOptions(seed=1, runs_dir=tmp_path))
    real = sequences(read_events(result.dir / "ledger.sqlite"))
    assert sorted(real) == ["backend_restart", "clock", "kill", "partition", "restart", "stop"]
    for kind, seen in real.items():
        expected = built(kind)
        if kind == "kill":
            # The supervisor reaps a killed process on its own thread, which may journal the exit before
            # the nemesis writes `fault.applied`; the nemesis then waits for that exit.
            assert seen[0] == expected[0] and sorted(seen) == sorted(expected), (kind, seen, expected)
        else:
            assert seen == expected, (kind, seen, expected)
