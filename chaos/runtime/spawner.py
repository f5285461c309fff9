"""The one thread that starts every process of a run.

The kernel's parent-death signal, which ends a run's workers when its runner is killed outright, fires
when the THREAD that forked a worker ends, not its process: a worker a scenario started from a helper
thread would be SIGKILLed as soon as that thread returned. So every start is handed to this thread,
which lives as long as the run (and dies with the runner, taking the workers with it).
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from chaos.errors import HarnessError

T = TypeVar("T")


class _Call(Generic[T]):
    """One start handed over, and its outcome; `done` is held until the outcome is set."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self.fn = fn
        self.done = threading.Lock()
        self.done.acquire()
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller, whatever it is
            self.error = exc
        finally:
            self.done.release()

    def outcome(self) -> T:
        # A bare lock, not a condition: a signal handler that raises (Ctrl-C, the deadline) while the
        # caller waits leaves no half-released lock; the start itself completes in the spawner regardless.
        self.done.acquire()
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # set whenever no error was


class Spawner:
    def __init__(self, name: str = "spawner") -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._fenced = False
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the spawner thread and return its result (or raise its exception)."""
        call = _Call(fn)
        with self._lock:
            if self._fenced:
                raise HarnessError("a process was started after the run began stopping its processes")
            self._calls.put(call.run)
        return call.outcome()

    def fence(self) -> None:
        """Refuse new starts and wait until those handed over are done; the thread lives on."""
        with self._lock:
            if self._fenced:
                return
            self._fenced = True
            barrier = _Call(lambda: None)
            self._calls.put(barrier.run)
        barrier.outcome()

    def close(self) -> None:
        """Fence, then end the thread: the processes it started get their parent-death signal, so they
        are ended before."""
        self.fence()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._calls.put(None)
        self._thread.join()

    def _serve(self) -> None:
        # SIGALRM (the run's deadline) held as Supervisor.start holds it in its caller: the reaper threads
        # started here inherit this mask, and each child unblocks it before exec.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while (run := self._calls.get()) is not None:
            run()
