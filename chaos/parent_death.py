"""Tie a child process's life to the controller's: if the controller itself is SIGKILLed (no `finally`
runs), the kernel signals every worker and server it started, so none outlives it (Linux prctl)."""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` that asks the kernel to send `sig` to the child when its parent thread dies.

    It runs after Popen has switched user, so it survives the drop to an unprivileged user.
    """

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return arm
