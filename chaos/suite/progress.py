"""A suite's progress, read from each running run's ledger about once a second.

On a terminal: a live line per running run (its phase, jobs settled of enqueued, faults injected,
seconds so far) redrawn in place under the lines of the runs already finished. Elsewhere (a CI log):
one plain line each time a run enters a phase, and one per finished run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chaos import events
from chaos.ledger import progress
from chaos.suite.cell import Planned

POLL_S = 1.0
# The phase a run is in, by its ledger's last event kind (the first prefix that matches); any other
# event (probes, gates, workers, a server restarted by a fault) is the scenario running.
PHASES = ((events.RUN_END, "judging"), (events.SNAPSHOT, "taking the final snapshot"),
          (events.DRAINED, "drained, stopping the workers"), (events.FAULT, "injecting faults"),
          (events.BACKEND_PREPARE, "starting the server"), (events.BACKEND_START, "starting the server"),
          (events.RUN_START, "starting"))
RUNNING = "running the scenario"


@dataclass
class _Run:
    planned: Planned
    runs: Path
    began: float
    phase: str = "starting"


class Progress:
    def __init__(self, say: Callable[[str], None], live: bool | None = None) -> None:
        self.say = say
        self.live = sys.stdout.isatty() if live is None else live
        self._running: dict[str, _Run] = {}
        self._drawn = 0  # live lines on the terminal now
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="chaos-suite-progress", daemon=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._erase()

    def started(self, planned: Planned, runs: Path) -> None:
        with self._lock:
            self._running[planned.run_key] = _Run(planned, runs, time.monotonic())

    def finished(self, planned: Planned, line: str) -> None:
        with self._lock:
            self._running.pop(planned.run_key, None)
            self._erase()
            self.say(line)
            self._draw()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            with self._lock:
                runs = list(self._running.values())
            lines = [(run, self._status(run)) for run in runs]
            with self._lock:
                lines = [line for line in lines if line[0].planned.run_key in self._running]  # not finished since
                if self.live:
                    self._erase()
                    self._draw({run.planned.run_key: text for run, (_, text) in lines})
                else:
                    for run, (phase, text) in lines:
                        if phase != run.phase:
                            run.phase = phase
                            self.say(f"  {text}")

    def _status(self, run: _Run) -> tuple[str, str]:
        ledgers = sorted(run.runs.glob("*/ledger.sqlite")) if run.runs.is_dir() else []
        enqueued, settled, faults, last = progress(ledgers[-1]) if ledgers else (0, 0, 0, None)
        phase = "starting" if last is None else next((name for prefix, name in PHASES if last.startswith(prefix)),
                                                     RUNNING)
        cell = run.planned.cell
        return phase, (f"{cell.variant} x {cell.scenario_variant} seed {run.planned.seed}: {phase}; {settled}/"
                       f"{enqueued} jobs settled, {faults} fault(s) injected, {time.monotonic() - run.began:.0f}s")

    def _draw(self, texts: dict[str, str] | None = None) -> None:
        """The live block: a line per running run (called with the lock held)."""
        if not self.live:
            return
        lines = [f"  ... {text}" for text in (texts or {}).values()]
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
        self._drawn = len(lines)

    def _erase(self) -> None:
        if self.live and self._drawn:
            sys.stdout.write(f"\x1b[{self._drawn}F\x1b[J")  # up to the block's first line, then clear below
            sys.stdout.flush()
        self._drawn = 0
