"""Asks the target's control whether the queue took the completions its workers could not vouch for.

A library that completes jobs itself (after the handler returned, out of its sight) leaves the worker
reporting its ack with ok null: the handler cannot know. The control can, where the queue keeps who
completed a job (a row's completing token, a result store): `Control.completion(job, token)` answers
accepted, refused, done (the queue completed the job, but by whose ack it does not record) or unknown,
alone (read from the queue's record) or with the source it read, `(outcome, source)` (events.SOURCES: a
result store's "accepted" proves the task ran, not that its ack was taken). Each definite answer is
journaled once (`control.completion`, with its source), and what is still unknown at the end is journaled
too, so the ledger shows the control was asked; the checker reads an answered ack as the control says,
where its source decides acks (`chaos.check.control_answers`).
"""

from __future__ import annotations

from typing import Any

from chaos import events
from chaos.errors import TargetCodeError
from chaos.ledger import Ledger
from chaos.queue_model import Control

Key = tuple[str, str | None, str]  # (job, worker, token)


class Completions:
    def __init__(self, control: Control, ledger: Ledger) -> None:
        self.control = control
        self.ledger = ledger
        self.answered: dict[Key, str] = {}  # the outcome of each ack answered definitely

    def accepted(self) -> set[str]:
        """Ask about every ack reported with ok null and not answered yet; the jobs whose completion the
        queue took (this ack or, where done, some ack of the job), by the control's word so far. What the
        control raises propagates (a backend still restarting: the caller polls again)."""
        for key in self._unanswered():
            outcome, source = self._ask(key)
            if outcome != "unknown":
                self._journal(key, outcome, source)
        return {job for (job, _, _), outcome in self.answered.items() if outcome in ("accepted", "done")}

    def finish(self) -> None:
        """The last word, before the final snapshot: every ack still unanswered is asked once more, and
        journaled whatever the answer."""
        for key in self._unanswered():
            self._journal(key, *self._ask(key))

    def _unanswered(self) -> list[Key]:
        keys = {(e.job, e.worker, str(e.data["token"])) for e in self.ledger.events()
                if e.kind == events.PROBE_ACK and e.job is not None and e.data.get("ok") is None
                and e.data.get("token") is not None}
        return sorted((key for key in keys if key not in self.answered), key=str)

    def _ask(self, key: Key) -> tuple[str, str]:
        job, _, token = key
        return read_answer(self.control.completion(job, token), f"completion({job!r}, {token!r})")

    def _journal(self, key: Key, outcome: str, source: str) -> None:
        job, worker, token = key
        self.answered[key] = outcome
        self.ledger.append(events.completion(job, worker, token, outcome, source))


def read_answer(answer: Any, call: str) -> tuple[str, str]:
    """A control's completion answer as (outcome, source): an outcome alone is the queue's record's word."""
    outcome, source = answer if isinstance(answer, tuple) and len(answer) == 2 else (answer, events.QUEUE_RECORD)
    if outcome not in events.COMPLETIONS or source not in events.SOURCES:
        raise TargetCodeError(f"The target's control answered {call} with {answer!r}; expected one of "
                              f"{', '.join(events.COMPLETIONS)}, alone or as (outcome, source) with source one of "
                              f"{', '.join(events.SOURCES)}.")
    return str(outcome), str(source)
