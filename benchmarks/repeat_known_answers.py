"""Runs every cell of the known-answer matrix N times in a row and prints, per cell, the exit codes
seen, the seconds per run, and afterwards any process of these runs still alive: the evidence that
verdicts are stable, not lucky."""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from chaos.known_answers import load  # noqa: E402
from chaos.leftovers import run_processes  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", default="", help="run only cells whose id contains this text")
    args = parser.parse_args()
    runs_dir = Path(tempfile.mkdtemp(prefix="queue-chaos-repeat-"))
    unstable = 0
    for cell in [c for c in load() if args.only in c.id]:
        codes: collections.Counter[int] = collections.Counter()
        times = []
        for seed in range(1, args.runs + 1):
            began = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "chaos", *cell.argv(seed, runs_dir)], cwd=REPO,
                                  capture_output=True, text=True, check=False)
            codes[done.returncode] += 1
            times.append(time.monotonic() - began)
            if done.returncode != cell.exit_code:
                print(f"--- {cell.id} seed {seed}: exit {done.returncode}\n{done.stdout}{done.stderr}", flush=True)
        stable = set(codes) == {cell.exit_code}
        unstable += not stable
        print(f"{'ok ' if stable else 'BAD'} {cell.id:<62} exit codes {dict(codes)}  s/run min {min(times):.1f} "
              f"median {sorted(times)[len(times) // 2]:.1f} max {max(times):.1f}", flush=True)
    left = [p.pid for run_dir in runs_dir.iterdir() for p in run_processes(run_dir)]
    print(f"unstable cells: {unstable}; processes of these runs still alive: {left}; run dirs in {runs_dir}")


if __name__ == "__main__":
    main()
