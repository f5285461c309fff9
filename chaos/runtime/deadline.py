"""Every run ends: past its deadline the run stops as a harness error that says what it was waiting for,
instead of waiting forever on a job that never settles or a scenario that never returns."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from chaos.contract import Contract
from chaos.errors import HarnessError

BASE_S = 60.0
REPEAT_S = 5.0
PER_RECOVERY_BOUND = 30.0


class RunDeadline(HarnessError):
    """The run passed its deadline."""


def default_deadline_s(contract: Contract) -> float:
    """A minute plus thirty recovery bounds: far past what any bundled scenario needs (they wait a few
    recovery bounds at most), short enough that a hung run fails CI in minutes."""
    return BASE_S + PER_RECOVERY_BOUND * contract.recovery_bound_s


@contextmanager
def deadline(seconds: float, doing: Callable[[], str]) -> Iterator[None]:
    """Raise RunDeadline in the main thread once `seconds` have passed (SIGALRM). A run driven from another
    thread has no deadline: only the main thread receives signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    expired: list[str] = []  # what the run was doing when the alarm first rang

    def expire(signum: int, frame: FrameType | None) -> None:
        expired.append(doing())
        raise RunDeadline(f"The run passed its deadline of {seconds:g}s while {expired[0]}. Everything it started "
                          "was stopped. A queue that needs longer: raise it with --deadline SECONDS (or the "
                          "scenario's DEADLINE_S).")

    previous = signal.signal(signal.SIGALRM, expire)
    # Again every few seconds: code that catches every exception (a retry loop) cannot swallow it for good.
    signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if expired:  # the alarm rang, and code that caught it (a library's connect) let the run go on: not a pass
        raise RunDeadline(f"The run passed its deadline of {seconds:g}s while {expired[0]}; code running then caught "
                          "the deadline's alarm and carried on, so whatever it did after is not a verdict. Everything "
                          "it started was stopped. A queue that needs longer: raise it with --deadline SECONDS (or "
                          "the scenario's DEADLINE_S).")
