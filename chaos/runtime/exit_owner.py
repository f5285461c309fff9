"""`chaos run` in two processes, so that no code of the user's chooses its exit code.

The scenario and the target's control run in the run's own process, where `os._exit(0)` (or a signal,
or the OOM killer) ends it at once: no `finally`, no verdict, and the shell sees whatever code it was
given. So `chaos run` forks once its arguments are read. The child is the run, as before. The parent runs
no code of the user's: it forwards the signals sent to it and, once the child has ended, exits with the
code of the verdict.json the child wrote in the run dir it made for this run. The child tells the parent,
through a pipe, that run dir as soon as it exists and the exit code it chose on its way out
(`chaos.runtime.last_resort.exit_now`). A child that ended without saying so was ended by something
else: the parent then removes what it left (as `chaos clean` would), ends its ledger with an `error`
verdict saying how it ended, and exits 3.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import EXIT_CODES, Verdict
from chaos.errors import ChaosError
from chaos.ledger import Ledger, read_events
from chaos.procs import die_with_parent
from chaos.reports import summary, write_reports
from chaos.runtime.cleanup import clean_killed_runs

Say = Callable[[str, TextIO], None]

HARNESS_ERROR = 3
VERDICT_ONLY = frozenset({EXIT_CODES["pass"], EXIT_CODES["fail"], EXIT_CODES["inconclusive"], EXIT_CODES["skipped"]})
SI_KERNEL = 0x80  # si_code of a signal the kernel sent: a terminal's Ctrl-C, which the child gets too
FORWARDED = frozenset({signal.SIGINT, signal.SIGTERM})
WATCHED = FORWARDED | {signal.SIGCHLD}
POLL_S = 1.0  # the longest a lost SIGCHLD could delay the parent's exit
COALESCE_S = 0.1  # repeats of a signal within this long are one signal (see _wait)

_channel: list[int] = []  # in the run's process: the write end of the pipe to its parent


def split(backend_url: str | None, say: Say) -> None:
    """Fork: return in the child, which goes on to run; the parent waits, then exits with the run's code.
    `backend_url` is the run's external server, for cleaning up after a child that ended abruptly."""
    read_end, write_end = os.pipe()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an inherited SIG_IGN would reap the child unseen
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)  # from here, every signal is waited for
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        die_with_parent()()  # a SIGKILL of the command still ends the run at once, as it did in one process
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if os.getppid() != parent:  # the parent died before the kernel was told
            os._exit(HARNESS_ERROR)
        _channel.append(write_end)
        return
    os.close(write_end)
    status = _wait(child)
    told = _told(read_end, child)
    code = _code(os.waitstatus_to_exitcode(status), told, backend_url, say)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def tell_run_dir(path: Path) -> None:
    """In the run's process: the run dir it has just made, where its verdict will be."""
    _tell({"dir": str(path.resolve())})


def tell_exit(code: int) -> None:
    """In the run's process: the exit code it is about to exit with, through the suite's own way out."""
    _tell({"exit": code})


def _tell(message: dict[str, object]) -> None:
    if not _channel:
        return
    line = memoryview(json.dumps({"pid": os.getpid(), **message}).encode() + b"\n")
    with contextlib.suppress(OSError):  # a parent that is gone can be told nothing
        while line:
            line = line[os.write(_channel[0], line):]


def _wait(child: int) -> int:
    """The child's wait status. A signal sent to this process alone is passed on, once: a second copy
    would make the run end at once instead of cleaning up. So a terminal's (the kernel sends it to the
    whole foreground group) is not, having reached the child already; nor is a repeat within COALESCE_S,
    which one process would have seen once (a pending signal absorbs its repeats): a parent-death signal
    comes once per thread of a dying multi-threaded parent, such as a suite."""
    forwarded: dict[int, float] = {}
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return status
        info = signal.sigtimedwait(WATCHED, POLL_S)
        if info is None or info.si_signo not in FORWARDED or info.si_code == SI_KERNEL:
            continue
        now = time.monotonic()
        if now - forwarded.get(info.si_signo, -math.inf) >= COALESCE_S:
            forwarded[info.si_signo] = now
            os.kill(child, info.si_signo)  # not yet reaped: the pid is still the child's


def _told(read_end: int, child: int) -> dict[str, Any]:
    """What the child said. A process it forked without exec could hold the pipe open, and write to it:
    the read does not wait for an end, and only the child's own lines count."""
    os.set_blocking(read_end, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read_end, 65536):
            data += chunk
    os.close(read_end)
    told: dict[str, Any] = {}
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and message.pop("pid", None) == child:
                told.update(message)
    return told


def _code(ended: int, told: dict[str, Any], backend_url: str | None, say: Say) -> int:
    """The command's exit code: 0, 1 and 4 only from the verdict this run wrote; what the run chose on
    its own way out otherwise (2, 3, 130); 3 when something else ended it before its verdict."""
    run_dir = Path(told["dir"]) if isinstance(told.get("dir"), str) else None
    verdict = _verdict_code(run_dir)
    said = told.get("exit")
    if said == ended:
        if ended not in VERDICT_ONLY:
            return ended
        if verdict is not None:
            return verdict
        say(f"chaos: the run ended with exit code {ended} but wrote no verdict.json"
            f"{f' in {run_dir}' if run_dir else ''}: no verdict, so exit {HARNESS_ERROR}.", sys.stderr)
        return HARNESS_ERROR
    how = _how(ended)
    if verdict is not None:
        say(f"chaos: the run's process {how} after it wrote its verdict ({run_dir}/verdict.json), which "
            "gives the exit code; what it would have printed next is lost.", sys.stderr)
        return verdict
    return _post_mortem(run_dir, how, backend_url, say)


def _verdict_code(run_dir: Path | None) -> int | None:
    """The exit code of the verdict.json in the run dir, if a whole one is there."""
    if run_dir is None:
        return None
    try:
        verdict = json.loads((run_dir / "verdict.json").read_text())
    except (OSError, ValueError):
        return None
    named = verdict.get("verdict") if isinstance(verdict, dict) else None
    return EXIT_CODES.get(named) if isinstance(named, str) else None


def _how(ended: int) -> str:
    if ended < 0:
        return f"was killed by {signal.Signals(-ended).name}"
    return f"exited with code {ended}"


def _post_mortem(run_dir: Path | None, how: str, backend_url: str | None, say: Say) -> int:
    """A run's process that ended without its own end: remove what it left, and say so in its ledger
    and reports as an `error` verdict."""
    cause = (f"The run's process {how} before it wrote a verdict: code of the scenario's or the target's "
             "ended it (os._exit skips every `finally`), or a signal from outside did. Find what ended it; "
             "no verdict was reached.")
    if run_dir is None:
        say(f"chaos: {cause} It ended before it made its run dir, so nothing had started.", sys.stderr)
        return HARNESS_ERROR
    try:
        left = [line.partition(": ")[2] for _, line in clean_killed_runs(run_dir.parent, backend_url)
                if line.startswith(f"{run_dir}: ")]
    except ChaosError as exc:
        left = [f"what it left could not be cleaned up ({exc}); run chaos clean"]
    detail = f"{cause} Cleaned up after it: {'; '.join(left) or 'nothing it started was left'}."
    try:
        verdict = _error_verdict(run_dir, detail)
    except (ChaosError, OSError, sqlite3.Error) as exc:
        say(f"chaos: {detail} Its verdict could not be written either ({exc}).", sys.stderr)
        return HARNESS_ERROR
    say(summary(verdict, run_dir), sys.stdout)
    say(f"chaos: {verdict.error}", sys.stderr)
    return HARNESS_ERROR


def _error_verdict(run_dir: Path, detail: str) -> Verdict:
    """The run's end as the parent saw it, judged from the ledger like any run (an `error`), its reports
    written, so the run dir says what the exit code says."""
    ledger = Ledger(run_dir / "ledger.sqlite")
    try:
        ledger.append(events.run_end("error", detail))
    finally:
        ledger.close()
    recorded = read_events(run_dir / "ledger.sqlite")
    verdict = judge(recorded)
    write_reports(run_dir, verdict, recorded)
    return verdict

