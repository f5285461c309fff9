"""How often the installed beanstalkd fails to expire a reservation whose owner went silent: the failure
the known answer `beanstalkd_ttr x stop_past_deadline` meets now and then on beanstalkd 1.12.

Each trial is what a beanstalkd_ttr worker does before a SIGSTOP: on one connection, reserve a job, read
its stats, touch it, delete it, then reserve the next job and read its stats, and go silent. A second
connection waits for that job to come back when its TTR (1 s) runs out. A job still reserved two seconds
past its TTR is "never expired"; one command on the silent connection then shows whether the server had
only lost its timer (the job is released at once).

    python3 benchmarks/beanstalkd_ttr_timer.py [--trials 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import greenstalk

from chaos.backends.base import BackendSettings
from chaos.backends.registry import provider
from chaos.worker.beanstalkd import connect

TTR_S = 1
GRACE_S = 2.0


def trial(url: str, tube: str) -> tuple[float | None, bool]:
    """Seconds from the silence to the job's release (None: never), and whether a command then released it."""
    with connect(url, tube) as control, connect(url, tube) as owner, connect(url, tube) as watcher:
        for n in range(2):
            control.put(json.dumps({"n": n}), ttr=TTR_S)
        first = owner.reserve(timeout=1)
        owner.stats_job(first)
        owner.touch(first)
        owner.delete(first)
        silent = owner.reserve(timeout=1)
        owner.stats_job(silent)
        began = time.monotonic()
        until = began + TTR_S + GRACE_S
        while time.monotonic() < until:
            try:
                job = watcher.reserve(timeout=1)
            except greenstalk.TimedOutError:
                continue
            watcher.delete(job)
            return time.monotonic() - began, False
        owner.stats()  # any command on the silent connection
        time.sleep(0.1)
        released = control.stats_job(silent)["state"] != "reserved"
        if released:
            watcher.delete(watcher.reserve(timeout=1))
        else:
            owner.delete(silent)
        return None, released


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chaos-bench-") as root:
        backend: Any = provider("beanstalkd", "local").open(BackendSettings(Path(root), "bench"))
        try:
            outcomes = [trial(backend.endpoint.url, f"bench-{i}") for i in range(args.trials)]
        finally:
            backend.close()
    released = [seconds for seconds, _ in outcomes if seconds is not None]
    never = [rearmed for seconds, rearmed in outcomes if seconds is None]
    print(f"trials: {len(outcomes)} (TTR {TTR_S} s)")
    print(f"released by the TTR: {len(released)}, median {statistics.median(released):.3f} s after the silence"
          if released else "released by the TTR: 0")
    print(f"never expired within {GRACE_S:.0f} s past the TTR: {len(never)} "
          f"({100 * len(never) / len(outcomes):.1f}%), released at once by one command on the silent "
          f"connection: {sum(never)}")


if __name__ == "__main__":
    main()
