"""The target's control's word on completions its workers could not vouch for (`control.completion`).

A library that completes a job itself, after the handler returned and out of its sight, leaves the
worker reporting its ack with ok null. Where the control answered whether the queue took that completion
(`chaos.Control.completion`), the ack is judged as the control says: accepted is an accepted ack (so one
from a superseded execution is `stale_ack_accepted`), refused a refused one; unknown leaves the ack
proving nothing either way, as a worker's own null does. Done (the queue completed the job, but does not
record by whose ack) leaves the ack unjudged too, and proves the job completed.
"""

from __future__ import annotations

from collections.abc import Sequence

from chaos import events
from chaos.events import Event

Key = tuple[str, str | None, str]  # (job, worker, token): the ack the answer is about
_OK = {"accepted": True, "refused": False}


def answered(ledger: Sequence[Event]) -> dict[Key, bool]:
    """Each ack the control answered definitely: True where the queue took the completion, else False."""
    return {(e.job, e.worker, str(e.data.get("token"))): _OK[e.data["outcome"]] for e in ledger
            if e.kind == events.COMPLETION and e.job is not None and e.data.get("outcome") in _OK}


def done(ledger: Sequence[Event]) -> set[Key]:
    """Each ack about which the control answered that the queue completed its job, by this execution's ack
    or another's: evidence of the job's completion, none about this ack's."""
    return {(e.job, e.worker, str(e.data.get("token"))) for e in ledger
            if e.kind == events.COMPLETION and e.job is not None and e.data.get("outcome") == "done"}
