"""Runs each known-answer cell N times in a row and prints the verdicts, their times, and any process
of a run still alive afterwards: the evidence that verdicts are stable, not lucky."""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

CELLS = [("pg_lease", "kill_after_effect_before_ack", []), ("pg_naive", "kill_after_effect_before_ack", [])]


def leftovers(marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    runs_dir = Path(tempfile.mkdtemp(prefix="queue-chaos-repeat-"))
    for target, scenario, params in CELLS:
        codes: collections.Counter[int] = collections.Counter()
        times = []
        for seed in range(1, args.runs + 1):
            began = time.monotonic()
            argv = [sys.executable, "-m", "chaos", "run", "--target", target, "--scenario", scenario,
                    "--seed", str(seed), "--runs-dir", str(runs_dir), *params]
            codes[subprocess.run(argv, capture_output=True, check=False).returncode] += 1
            times.append(time.monotonic() - began)
        print(f"{target:<10} {scenario:<30} runs {args.runs}  exit codes {dict(codes)}  "
              f"seconds/run min {min(times):.2f} median {sorted(times)[len(times) // 2]:.2f} max {max(times):.2f}")
    print(f"processes of these runs still alive: {leftovers(str(runs_dir))}")


if __name__ == "__main__":
    main()
