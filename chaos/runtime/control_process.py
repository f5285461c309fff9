"""A target's control as a process of its own: any language, any interpreter, speaking JSON lines over
its stdin and stdout (docs/control-protocol.md).

`ControlChannel` is the wire: one request at a time, each a JSON object on a line with an `id` and an `op`,
each answer a JSON object on a line carrying that `id` and a `result` or an `error`. Everything that goes
wrong on it (an error answer, a crash, a line that is not an answer, an answer to another request, no
answer in time) is a `ControlProcessError` naming the target, the op and the last lines of the process's
stderr, so a run that breaks there is a harness error of the target's, never a verdict on its queue.

`ProcessControl` is a `Control` that forwards each call to such a process, which the run starts like a
worker (its own supervisor, so it is contained and cleaned up like one, its stderr in `logs/control.log`)
and ends after the final snapshot: the rest of the suite sees one more `Control`.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path
from typing import IO, Any, ClassVar

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.errors import TargetCodeError
from chaos.ledger import Ledger
from chaos.queue_model import Job, JobState, KeepsNoCompletions
from chaos.runtime.supervisor import Managed, Supervisor, log_tail
from chaos.target import ControlCommand, Target

CONTROL = "control"  # the process's name in the run (its log is logs/control.log) and its CHAOS_WORKER_ID
PROTOCOL = 1  # the protocol's version, in the process's environment as CHAOS_CONTROL_PROTOCOL
ENV_PROTOCOL = "CHAOS_CONTROL_PROTOCOL"
STATES = ("pending", "claimed", "done", "dead", "absent")
MAX_LINE = 16 * 1024 * 1024  # an answer longer than this is refused (a snapshot of many jobs fits easily)
END_S = 2.0  # how long the process may take to exit by itself once its stdin is closed, before SIGTERM


class ControlProcessError(TargetCodeError):
    """The control process answered an error, crashed, wrote what is no answer, or did not answer in time."""


class ControlAnswerError(ControlProcessError):
    """The process answered the op with an error: it is alive and speaking, so a read the run repeats through
    transient errors (the final snapshot after a backend restart) may ask again."""


_EOF = object()


class ControlChannel:
    """Requests and answers over a process's stdin and stdout; the reader thread hands each line over."""

    def __init__(self, target: str, stdin: IO[bytes], stdout: IO[bytes], log: Path, timeout_s: float,
                 returncode: Any) -> None:
        self.target = target
        self.stdin = stdin
        self._stdout = stdout
        self.log = log
        self.timeout_s = timeout_s
        self.returncode = returncode  # () -> the process's exit code, or None while it runs
        self.next_id = 1
        self.broken: str | None = None  # why the channel can no longer be trusted (its answers would be misread)
        self._lock = threading.Lock()
        self._lines: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, args=(stdout,), name="control-reader", daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        try:
            while line := stdout.readline(MAX_LINE + 1):
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(_EOF)

    def request(self, op: str, **arguments: Any) -> Any:
        """Send one request and return its answer's `result`; every failure is a ControlProcessError."""
        with self._lock:
            if self.broken is not None:
                raise self._error(op, f"it is no longer usable: {self.broken}")
            ident, self.next_id = self.next_id, self.next_id + 1
            try:
                line = json.dumps({"id": ident, "op": op, **arguments}, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise self._error(op, f"the request cannot be written as JSON ({exc})", broken=False) from exc
            try:
                self.stdin.write(line.encode() + b"\n")
                self.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                raise self._error(op, self._ended("its stdin was closed before the request was written")) from None
            return self._answer(op, ident)

    def _answer(self, op: str, ident: int) -> Any:
        until = time.monotonic() + self.timeout_s
        try:
            line = self._lines.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            raise self._error(op, f"no answer within {self.timeout_s:g}s (timeout_s in target.toml's [control])") \
                from None
        if line is _EOF:
            raise self._error(op, self._ended("its stdout closed with no answer"))
        assert isinstance(line, bytes)
        if len(line) > MAX_LINE:
            raise self._error(op, f"it wrote a line longer than {MAX_LINE} bytes")
        try:
            answer = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._error(op, f"it wrote a line that is not a JSON object: {_quote(line)}. Its stdout is the "
                              "protocol's channel: write logs to stderr") from None
        if not isinstance(answer, dict):
            raise self._error(op, f"it wrote a line that is not a JSON object: {_quote(line)}")
        if answer.get("id") != ident:
            raise self._error(op, f"it answered the id {answer.get('id')!r}, not the request's {ident}: "
                              f"{_quote(line)}. Answer each request once, with its id")
        if "error" in answer:
            error = answer["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ControlAnswerError(self.describe(op, f"it answered an error: {message}"))
        if "result" not in answer:
            raise self._error(op, f"its answer has neither result nor error: {_quote(line)}")
        return answer["result"]

    def close(self) -> None:
        """Once the process has ended: the reader reads its stdout's end, and the pipe is closed (left to the
        garbage collector where something the process started still holds it open: closing it under a reader
        blocked in it would block too)."""
        self._reader.join(END_S)
        if not self._reader.is_alive():
            self._stdout.close()

    def _ended(self, what: str) -> str:
        """Why the process stopped answering: its exit code, where it has exited (or does within a moment)."""
        code = None
        for _ in range(50):
            if (code := self.returncode()) is not None:
                break
            time.sleep(0.02)
        return f"{what}: it exited with code {code}" if code is not None else what

    def _error(self, op: str, what: str, broken: bool = True) -> ControlProcessError:
        """The error for `op`; the channel is broken after it (a late answer would be read as the next one's)."""
        if broken and self.broken is None:
            self.broken = f"{op} failed before"
        return ControlProcessError(self.describe(op, what))

    def describe(self, op: str, what: str) -> str:
        tail = log_tail(self.log)
        said = ("; its stderr (" + str(self.log) + ") ends:\n    " + "\n    ".join(tail)) if tail else \
            f"; its stderr ({self.log}) is empty"
        return f"Target {self.target}'s control process, op {op}: {what}{said}"


class ProcessControl:
    """The `Control` of a target whose control is a process (target.toml's `[control] command`). `start_control`
    makes the class of each target's, with its `shows_deliveries` (a class attribute, as `Control` has it)."""

    shows_deliveries: ClassVar[bool] = True

    def __init__(self, target: Target, backend: Backend, ledger: Ledger, log_dir: Path) -> None:
        spec = target.control_process
        assert spec is not None
        self.spec = spec
        self.target = target
        self.backend = backend
        self.supervisor = Supervisor(ledger, log_dir, target.shutdown_grace_s)
        argv = target.command(spec.command, CONTROL, backend.endpoint.url, backend.namespace)
        try:
            self.process: Managed = self.supervisor.start(CONTROL, argv, self._env(), role=CONTROL, cwd=target.path,
                                                          stdio=True)
        except BaseException:
            self.supervisor.close()
            raise
        popen = self.process.popen
        assert popen.stdin is not None and popen.stdout is not None
        self.channel = ControlChannel(target.name, popen.stdin, popen.stdout, self.process.log, spec.timeout_s,
                                      popen.poll)

    def _env(self) -> dict[str, str]:
        """The suite's environment, the backend's connection as a worker gets it (from the server's own
        endpoint: the control is never behind a worker's proxy), the target's params and contract."""
        return {**os.environ, **connection_env(self.backend.kind, self.backend.endpoint, self.backend.namespace),
                events.ENV_WORKER_ID: CONTROL, ENV_PROTOCOL: str(PROTOCOL),
                events.ENV_TARGET_PARAMS: json.dumps(self.target.params),
                events.ENV_CONTRACT: json.dumps(self.target.contract.to_dict()), "PYTHONUNBUFFERED": "1"}

    def setup(self) -> None:
        self.channel.request("setup")

    def enqueue(self, jobs: list[Job]) -> None:
        self.channel.request("enqueue", jobs=[{"id": job.id, **job.payload()} for job in jobs])

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return connection_env(self.backend.kind, endpoint, self.backend.namespace)

    def snapshot(self) -> list[JobState]:
        result = self.channel.request("snapshot")
        jobs = result.get("jobs") if isinstance(result, dict) else None
        if not isinstance(jobs, list):
            raise self._wrong("snapshot", f"its result is {_short(result)}; expected {{\"jobs\": [...]}}")
        return [self._state(entry) for entry in jobs]

    def _state(self, entry: Any) -> JobState:
        if not isinstance(entry, dict) or not isinstance(entry.get("job"), str) or not entry["job"] \
                or entry.get("state") not in STATES:
            raise self._wrong("snapshot", f"it listed {_short(entry)}; each job is an object with a non-empty "
                              f"string job and a state among {', '.join(STATES)}")
        owner, attempts, detail = entry.get("owner"), entry.get("attempts"), entry.get("detail", {})
        if owner is not None and not isinstance(owner, str) or attempts is not None and (
                not isinstance(attempts, int) or isinstance(attempts, bool)) or not isinstance(detail, dict):
            raise self._wrong("snapshot", f"it listed {_short(entry)}; owner is a string or null, attempts an "
                              "integer or null, detail an object")
        return JobState(entry["job"], entry["state"], owner, attempts, detail)

    def completion(self, job: str, token: str) -> str | tuple[str, str]:
        result = self.channel.request("completion", job=job, token=token)
        if not isinstance(result, dict) or result.get("outcome") not in events.COMPLETIONS \
                or result.get("source", events.QUEUE_RECORD) not in events.SOURCES:
            raise self._wrong("completion", f"its result is {_short(result)}; expected {{\"outcome\": one of "
                              f"{', '.join(events.COMPLETIONS)}}}, with \"source\" one of {', '.join(events.SOURCES)} "
                              "where the answer is not the queue's record")
        return str(result["outcome"]), str(result.get("source", events.QUEUE_RECORD))

    def _wrong(self, op: str, what: str) -> ControlProcessError:
        return ControlProcessError(self.channel.describe(op, what))

    def close(self) -> None:
        """Teardown (where the process still answers), then end it: its stdin closed, a moment to exit by
        itself, then the supervisor's SIGTERM and SIGKILL. What teardown raises comes after the process ended."""
        try:
            if self.channel.broken is None and self.process.alive:
                self.channel.request("teardown")
        finally:
            self.process.ending = True
            try:
                assert self.process.popen.stdin is not None
                self.process.popen.stdin.close()
            except OSError:
                pass
            self.supervisor.wait_exit(CONTROL, END_S)
            self.supervisor.close()
            self.channel.close()


def start_control(target: Target, backend: Backend, ledger: Ledger, log_dir: Path) -> ProcessControl:
    """The target's control process, started (the run asks its setup next). Where its queue keeps no record
    of which execution completed a job (`keeps_completions = false`), completion() is KeepsNoCompletions':
    "unknown", the process never asked, and `chaos target check` reads the control as one that keeps none."""
    spec: ControlCommand | None = target.control_process
    assert spec is not None
    bases = (ProcessControl,) if spec.keeps_completions else (KeepsNoCompletions, ProcessControl)
    kind = type("ProcessControl", bases, {"shows_deliveries": spec.shows_deliveries})
    control: ProcessControl = kind(target, backend, ledger, log_dir)
    return control


def connection_env(kind: str, endpoint: Endpoint, namespace: str) -> dict[str, str]:
    """How a process reaches the backend (the control, or a worker through its own endpoint): the URL and the
    run's namespace, and for PostgreSQL the libpq string under the name the bundled workers read."""
    env = {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: namespace}
    if kind == "postgres":
        env[events.ENV_POSTGRES_DSN] = endpoint.url
    return env


def _quote(line: bytes) -> str:
    text = line.decode("utf-8", "replace").rstrip("\n")
    return repr(text if len(text) <= 200 else text[:200] + "...")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
