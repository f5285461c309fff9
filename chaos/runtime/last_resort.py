"""The end of a run that user code will not let end: a bare `except:` in a scenario swallows every
deadline alarm and the first Ctrl-C, a thread of its own never returns. Then the run is ended from
outside the main thread: what the run registered is torn down within a bound (its ledger's run.end,
its reports, its servers and namespaces), every process it started is killed, and the process exits
with the code that says why. Nothing the user's code does can keep a run alive past this."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

import psutil

from chaos.runtime import exit_owner

TEARDOWN_S = 20.0  # the most the registered teardown may take before every process is killed regardless
KILL_WAIT_S = 5.0

Teardown = Callable[[str, int], None]  # (why, exit code)
_teardowns: list[Teardown] = []
_ending = threading.Lock()
_in_charge = threading.Event()


def take_charge() -> None:
    """This process is the `chaos` command: `watchdog` may end it. A program that runs scenarios through
    the API keeps its process (its runs have the SIGALRM deadline only)."""
    _in_charge.set()


def in_charge() -> bool:
    """Whether this process is the `chaos` command (see `take_charge`)."""
    return _in_charge.is_set()


@contextmanager
def registered(teardown: Teardown) -> Iterator[None]:
    """While inside, `end_now` calls `teardown(why, code)` before it kills what is left."""
    _teardowns.append(teardown)
    try:
        yield
    finally:
        _teardowns.remove(teardown)


@contextmanager
def watchdog(seconds: float, why: Callable[[], str], code: int = 3) -> Iterator[None]:
    """`end_now(why(), code)` if the block is still running after `seconds`, whatever its thread does."""
    if not _in_charge.is_set():
        yield
        return
    finished = threading.Event()

    def watch() -> None:
        if not finished.wait(seconds):
            end_now(why(), code)

    threading.Thread(target=watch, name="chaos-watchdog", daemon=True).start()
    try:
        yield
    finally:
        finished.set()


def end_now(why: str, code: int) -> NoReturn:
    """Tear down (bounded), kill every descendant, say why, exit with `code`: from any thread, once; a
    second caller waits for the first one's exit."""
    if not _ending.acquire(blocking=False):
        threading.Event().wait()
    if threading.current_thread() is threading.main_thread():  # a third Ctrl-C must not interrupt this one
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
    _kill_descendants()  # first: whatever the teardown meets, nothing the run started keeps running
    worker = threading.Thread(target=_tear_down, args=(why, code), name="chaos-teardown", daemon=True)
    worker.start()
    worker.join(TEARDOWN_S)
    _kill_descendants()
    with contextlib.suppress(Exception):
        sys.stderr.write(f"chaos: {why}\n")
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Flush what was written and exit, without waiting for threads user code left behind: a reader that
    went away (`chaos run | head`) costs the output, never the exit code. The exit handlers still run
    (the local servers' last resort), as on a normal exit; a `chaos run`'s parent is told the code, so it
    knows the run ended this way and not by code of the user's (`chaos.runtime.exit_owner`)."""
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    exit_owner.tell_exit(code)
    os._exit(code)


def _tear_down(why: str, code: int) -> None:
    for teardown in reversed(list(_teardowns)):
        with contextlib.suppress(BaseException):
            teardown(why, code)
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()  # the local servers' last resort: none left running, their data removed


def _kill_descendants() -> None:
    with contextlib.suppress(psutil.Error):
        children = psutil.Process().children(recursive=True)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=KILL_WAIT_S)
