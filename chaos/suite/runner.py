"""Runs a suite: every planned run as a `chaos run` process of its own (hermetic: its own servers, ports,
proxies and run dir, as a user's run), up to `jobs` at once, each judged against its cell.

A run is a process, not a thread, because a run owns process-wide things (its deadline's alarm, its
signal handlers, its last resort). Each is started with a parent-death signal, so a suite killed
outright takes its runs with it, and each run's own cleanup then stops what it started. Ctrl-C (or
SIGTERM) stops the runs under way the same way and starts no other.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.discovery import find_scenario, find_target
from chaos.errors import ChaosError, ConfigError
from chaos.leftovers import run_processes
from chaos.procs import die_with_parent
from chaos.runtime.run import RunOptions, prepare
from chaos.suite.cell import Cell, Planned
from chaos.suite.expect import Outcome, judge_run
from chaos.suite.progress import Progress
from chaos.suite.shared import SharedServers, shareable

STOP_GRACE_S = 60.0  # how long a stopped run may take to clean up before it is killed


@dataclass(frozen=True)
class CellRun:
    """One finished run of a cell: how it was judged, and where its run dir is (relative to the suite's)."""

    planned: Planned
    outcome: Outcome
    exit_code: int
    duration_s: float
    run_dir: str | None
    verdict: dict[str, Any] | None
    shared_server: bool
    left_behind: tuple[int, ...] = ()  # the pids of processes the run left behind after it ended


def preflight(cells: list[Cell]) -> None:
    """Check every cell as `chaos run` would before it starts anything: a usage error names its cell."""
    for cell in {cell.id: cell for cell in cells}.values():
        try:
            prepare(find_target(cell.target), find_scenario(cell.scenario), run_options(cell))
        except ConfigError as exc:
            raise ConfigError(f"Suite cell {cell.variant} x {cell.scenario_variant}: {exc}") from exc


def run_options(cell: Cell) -> RunOptions:
    """The options `chaos run` takes from a cell's arguments."""
    return RunOptions(overrides=_pairs(cell.params), contract=_pairs(cell.contract),
                      scenario_params=_pairs(cell.scenario_params), backend=cell.backend or "local",
                      worker_image=cell.worker_image)


def _pairs(settings: tuple[str, ...]) -> dict[str, str]:
    return dict(setting.partition("=")[::2] for setting in settings)


class SuiteRunner:
    def __init__(self, out: Path, jobs: int, share_servers: bool, say: Callable[[str], None],
                 live: bool | None = None) -> None:
        self.out = out
        self.jobs = jobs
        self.progress = Progress(say, live)
        self.shared = SharedServers(out / "servers") if share_servers else None
        self._slots: queue.Queue[int] = queue.Queue()
        for slot in range(jobs):
            self._slots.put(slot)
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def run(self, planned: list[Planned]) -> list[CellRun]:
        """Every planned run, at most `jobs` at once; the results in the suite's order."""
        done: dict[int, CellRun] = {}
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="chaos-suite")
        try:
            with self.progress:
                futures = {pool.submit(self._run_one, run): i for i, run in enumerate(planned)}
                pending: set[Future[CellRun]] = set(futures)
                while pending:
                    finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                    for future in finished:
                        result = future.result()
                        done[futures[future]] = result
                        self.progress.finished(result.planned, self._line(len(done), len(planned), result))
        except BaseException:
            self._stop_all()
            raise
        finally:
            # The shared nodes were started from the pool's threads, whose exit would kill them (their
            # parent-death signal): every run has ended (or was stopped) here, so close them first.
            if self.shared is not None:
                self.shared.close()
            pool.shutdown(wait=True, cancel_futures=True)
        return [done[i] for i in range(len(planned))]

    def _run_one(self, planned: Planned) -> CellRun:
        slot = self._slots.get()
        began = time.monotonic()
        try:
            return self._execute(planned, slot, began)
        except Exception as exc:  # noqa: BLE001 - one run's breakage is that run's error, never the suite's end
            why = str(exc) if isinstance(exc, ChaosError) else f"the suite could not run it: {exc!r}"
            return CellRun(planned, Outcome("error", [why]), 3, time.monotonic() - began, None, None, False)
        finally:
            self._slots.put(slot)

    def _execute(self, planned: Planned, slot: int, began: float) -> CellRun:
        cell = planned.cell
        cell_dir = self.out / "cells" / planned.run_key
        runs = cell_dir / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        earlier = set(runs.iterdir())  # an interrupted suite's runs in this --out are never judged as this one
        argv = [sys.executable, "-m", "chaos", *cell.argv(planned.seed, runs)]
        env = dict(os.environ)
        shared = self.shared is not None and shareable(cell) and not self._stopping.is_set()
        if shared and self.shared is not None:
            env.update(self.shared.env(slot))
            argv += ["--backend", "external"]
        output = cell_dir / "output.log"
        self.progress.started(planned, runs)
        code = self._spawn(argv, env, output)
        made = sorted(p for p in runs.iterdir() if p.is_dir() and p not in earlier)
        run_dir = made[-1] if made else None
        verdict = read_verdict(run_dir)
        left = run_processes(run_dir) if run_dir is not None and (run_dir / "ledger.sqlite").exists() else []
        left_behind = tuple(process.pid for process in left)
        outcome = judge_run(cell, verdict, code, output.read_text(errors="replace"), left_behind)
        relative = str(run_dir.relative_to(self.out)) if run_dir is not None else None
        return CellRun(planned, outcome, code, time.monotonic() - began, relative, verdict, shared, left_behind)

    def _spawn(self, argv: list[str], env: dict[str, str], output: Path) -> int:
        """One run, in a session of its own: a terminal's Ctrl-C reaches the suite alone, which stops each
        run once (a second signal would make a run kill everything at once instead of cleaning up)."""
        with output.open("wb") as log:
            with self._lock:
                if self._stopping.is_set():
                    log.write(b"the suite was stopped before this run started\n")
                    return 130
                process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                           env=env, start_new_session=True,
                                           preexec_fn=die_with_parent(signal.SIGTERM))
                self._running.add(process)
            try:
                return process.wait()
            finally:
                with self._lock:
                    self._running.discard(process)

    def _stop_all(self) -> None:
        """Ctrl-C or SIGTERM: every run under way stops as if interrupted (its cleanup runs), no other starts."""
        with self._lock:  # under the lock: a run is either started and listed here, or never started
            self._stopping.set()
            running = list(self._running)
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    @staticmethod
    def _line(done: int, total: int, result: CellRun) -> str:
        planned = result.planned
        repeat = f" repeat {planned.repeat}" if planned.repeat > 1 else ""
        why = f": {result.outcome.reasons[0]}" if result.outcome.reasons else ""
        return (f"[{done}/{total}] {result.outcome.status.upper():<12} {planned.cell.variant} x "
                f"{planned.cell.scenario_variant} seed {planned.seed}{repeat} ({result.duration_s:.1f}s){why}")


def read_verdict(run_dir: Path | None) -> dict[str, Any] | None:
    """The run's verdict.json; None where it wrote none (or none that parses)."""
    if run_dir is None:
        return None
    try:
        loaded: dict[str, Any] = json.loads((run_dir / "verdict.json").read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting past the parser's depth
        return None
    return loaded
