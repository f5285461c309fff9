"""Execution labels: a worker's n-th claim of the run, stable across every report of it."""

from __future__ import annotations

import pytest

from chaos.check import labels
from tests.history import History

pytestmark = pytest.mark.unit


def test_each_claim_of_a_worker_gets_its_next_number_whatever_the_job() -> None:
    history = (History().enqueue("job-1", "job-2").claim("job-1", "w1", "a" * 32).claim("job-2", "w2", "b" * 32)
               .claim("job-2", "w1", "c" * 32).claim("job-1", "w1", "d" * 32))
    found = labels.of_ledger(history.events)
    assert found.of("job-1", "w1", "a" * 32) == "w1#1"
    assert found.of("job-2", "w2", "b" * 32) == "w2#1"
    assert found.of("job-2", "w1", "c" * 32) == "w1#2"
    assert found.of("job-1", "w1", "d" * 32) == "w1#3"


def test_two_executions_whose_tokens_share_a_head_get_different_labels() -> None:
    history = History().enqueue("job-1").claim("job-1", "w1", "0123456789ab" + "0" * 20).claim(
        "job-1", "w1", "0123456789ab" + "1" * 20)
    found = labels.of_ledger(history.events)
    assert {found.of("job-1", "w1", "0123456789ab" + end * 20) for end in "01"} == {"w1#1", "w1#2"}


def test_a_claim_reported_twice_under_one_token_keeps_its_label_and_an_unclaimed_execution_has_none() -> None:
    history = History().enqueue("job-1").claim("job-1", "w1", "t1").claim("job-1", "w1", "t1").claim(
        "job-1", "w1", "t2")
    found = labels.of_ledger(history.events)
    assert (found.of("job-1", "w1", "t1"), found.of("job-1", "w1", "t2")) == ("w1#1", "w1#2")
    assert found.of("job-1", "w2", "t9") is None
    assert found.of_event(history.events[-1]) == "w1#2"
