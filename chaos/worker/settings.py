"""Helpers for workers: their settings from the environment, a SIGTERM-aware stop flag, and the
workload's handler (a chosen duration, or a poison job that always fails). Standard library only,
Python 3.8 syntax: workers run in the queue's own virtualenv."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from chaos import events
from chaos.worker import probe

T = TypeVar("T")
POLL_S = 0.05
SETTLE_TIMEOUT_S = 10.0


class JobFailed(Exception):
    """The handler failed (a poison job); the queue's retry or dead-letter rule takes over."""


@dataclass(frozen=True)
class WorkerSettings:
    """What the suite tells every worker: its name, the target's parameters (typed, as target.toml's [params]
    and -p give them) and the contract, whose promises a worker keeps without parsing it itself."""

    worker_id: str
    params: dict[str, Any]
    contract: dict[str, Any]

    def param(self, key: str) -> Any:
        """A parameter's value: a string, an integer, a float or a boolean, as its default in target.toml."""
        return self.params[key]

    @property
    def lease_s(self) -> float:
        """The lease a claim holds (0.0 where the contract has none)."""
        return float(self.contract.get("lease_s") or 0.0)

    @property
    def heartbeat_s(self) -> float:
        """How often an owner extends its lease (0.0 where the contract has no heartbeat)."""
        return float(self.contract.get("heartbeat_s") or 0.0)

    @property
    def recovery_bound_s(self) -> float:
        """The longest a job may stay unavailable after its owner dies."""
        return float(self.contract["recovery_bound_s"])

    @property
    def max_attempts(self) -> int:
        """Claims after which a failing job is dead-lettered (1 where the contract sets none: no retry)."""
        return int(self.contract.get("max_attempts") or 1)


def settings() -> WorkerSettings:
    return WorkerSettings(
        os.environ.get(events.ENV_WORKER_ID, f"pid{os.getpid()}"),
        json.loads(os.environ.get(events.ENV_TARGET_PARAMS, "{}")),
        json.loads(os.environ.get(events.ENV_CONTRACT, "{}")),
    )


def stop_flag() -> threading.Event:
    """An event set by SIGTERM, so the worker finishes its loop instead of dying mid-statement."""
    stop = threading.Event()

    def on_term(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    return stop


def pause(seconds: float, cancel: threading.Event | None = None) -> bool:
    """Sleep, waking early when cancelled (True then). Never time.sleep: under a clock fault's libfaketime
    (0.9.10, with an unfaked monotonic clock) Python 3.11's time.sleep fails with EINVAL, since its
    absolute-deadline clock_nanosleep is shifted into the past; an event's timed wait is not."""
    return (cancel if cancel is not None else threading.Event()).wait(seconds)


def run_handler(payload: dict[str, Any], cancel: threading.Event | None = None) -> bool:
    """Do the job's work: sleep its handler time (waking early when cancelled). False when cancelled."""
    duration = float(payload.get("handler_s") or 0.0)
    if duration > 0 and pause(duration, cancel):
        return False
    if payload.get("fail"):
        raise JobFailed("poison job: its handler fails every time")
    return not (cancel is not None and cancel.is_set())


class HandlerThread:
    """The job's handler on its own thread, for a worker whose one connection must stay busy meanwhile
    (a touch, a client library's heartbeats): finished (True), cancelled (False) or failed (JobFailed)."""

    def __init__(self, payload: dict[str, Any], cancel: threading.Event) -> None:
        self.outcome: bool | JobFailed | None = None
        self._thread = threading.Thread(target=self._run, args=(payload, cancel), name="handler", daemon=True)
        self._thread.start()

    def _run(self, payload: dict[str, Any], cancel: threading.Event) -> None:
        try:
            self.outcome = run_handler(payload, cancel)
        except JobFailed as exc:
            self.outcome = exc

    def running(self, wait_s: float = 0.0) -> bool:
        """Whether it still runs, after waiting up to wait_s for it to end."""
        self._thread.join(wait_s)
        return self._thread.is_alive()


def retrying(action: Callable[[], T], transient: tuple[type[BaseException], ...], stop: threading.Event,
             on_retry: Callable[[BaseException], None] | None = None, timeout: float = 60.0) -> T:
    """Retry an action through transient errors (a backend restart) until it succeeds or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except transient as exc:
            if time.monotonic() > deadline or stop.is_set():
                raise
            log(f"transient error, retrying: {exc!r}")
            if on_retry is not None:
                on_retry(exc)
            pause(0.1, stop)


def settled(action: Callable[[], T], transient: tuple[type[BaseException], ...], stop: threading.Event,
            what: str) -> T | None:
    """Run a completing command through transient errors for SETTLE_TIMEOUT_S; None when the queue stayed
    unreachable: its outcome is unknown, and the job is left to the queue's own recovery rule (never report
    a completion that did not commit)."""
    try:
        return retrying(action, transient, stop, timeout=SETTLE_TIMEOUT_S)
    except transient as exc:
        log(f"{what}: could not reach the queue to settle it ({exc!r}); left to its recovery")
        return None


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {os.environ.get(events.ENV_WORKER_ID, '?')}: {message}", file=sys.stderr,
          flush=True)


def serve_jobs(stop: threading.Event, claim: Callable[[], T | None], process: Callable[[T], None],
               transient: tuple[type[BaseException], ...], on_error: Callable[[], None] | None = None) -> None:
    """Claim and process jobs until SIGTERM; poll when idle, back off while the server is away. The first
    claim that finds nothing sends the `ready` probe."""
    while not stop.is_set():
        try:
            claimed = claim()
        except transient as exc:
            log(f"claim failed: {exc!r}")
            if on_error is not None:
                on_error()
            stop.wait(0.2)
            continue
        if claimed is None:
            probe.ready()
            stop.wait(POLL_S)
            continue
        process(claimed)
    log("stopping")
