"""Sink throughput: committed probes per second through a real `chaos.runtime.sink.Sink`.

What it measures: a real sink (HTTP on 127.0.0.1) backed by a real `chaos.ledger.Ledger` (SQLite, WAL)
in a temporary directory, driven by 1 and by 8 worker *processes* (multiprocessing, spawn) that use the
real worker-side client `chaos.probe` configured only through CHAOS_SINK_URL, CHAOS_RUN_TOKEN and
CHAOS_WORKER_ID, exactly as a target's worker is. Each worker sends N probes over its keep-alive
connection, cycling claim -> effect -> ack over distinct jobs. The clock runs from a start barrier that
every worker has reached (already imported and connected) until every worker reports it is done.

Why: the sink answers a probe only after committing it to the ledger, so its throughput bounds how fast
a target's workers can go under test; a slow sink stretches runs and distorts timing-sensitive
scenarios (leases, heartbeats). The issue's goal is at least 2,000 committed probes/s.

Afterwards the ledger is re-read from disk and the number of probe events is checked against the number
sent, so every probe counted was really committed. CPU time per probe (the sink's process, which runs
nothing else, and the workers' summed) is printed too: on a shared, loaded machine it is steadier than
the wall-clock rate and shows where the time goes.

    python3 benchmarks/sink_throughput.py [--probes N] [--workers 1 8] [--mode plain]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chaos import events  # noqa: E402
from chaos.ledger import Ledger, read_events  # noqa: E402
from chaos.runtime.sink import Sink  # noqa: E402

GOAL_PROBES_PER_S = 2_000
CYCLE = ("claim", "effect", "ack")


@dataclass(frozen=True)
class Result:
    workers: int
    probes: int
    seconds: float
    committed: int
    sink_cpu_s: float
    worker_cpu_s: float

    @property
    def rate(self) -> float:
        return self.probes / self.seconds if self.seconds > 0 else float("inf")


def send_probes(worker_id: str, probes: int) -> None:
    """Send `probes` probes with the real client, cycling claim/effect/ack over distinct jobs."""
    from chaos import probe

    for i in range(probes):
        job, point = f"{worker_id}-job-{i // len(CYCLE)}", CYCLE[i % len(CYCLE)]
        token = f"{worker_id}-{job}"
        if point == "claim":
            probe.claim(job, token)
        elif point == "effect":
            probe.effect(job, token)
        else:
            probe.ack(job, token, True)


def worker_main(env: dict[str, str], probes: int, barrier: Barrier, done: Any) -> None:
    """One worker process: configure through the environment, connect, wait for the start, send."""
    os.environ.update(env)
    from chaos import probe

    probe._connection().connect()  # open the keep-alive connection before the clock starts
    barrier.wait()
    cpu = time.process_time()
    send_probes(env[events.ENV_WORKER_ID], probes)
    done.put(time.process_time() - cpu)


def start_workers(sink: Sink, workers: int, probes: int) -> tuple[list[Any], Barrier, Any]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers + 1)
    done = ctx.Queue()
    procs = []
    for n in range(workers):
        env = {events.ENV_SINK_URL: sink.url, events.ENV_RUN_TOKEN: sink.token, events.ENV_WORKER_ID: f"w{n + 1}"}
        proc = ctx.Process(target=worker_main, args=(env, probes, barrier, done), daemon=True)
        proc.start()
        procs.append(proc)
    return procs, barrier, done


def count_probe_events(ledger_path: Path) -> int:
    return sum(1 for e in read_events(ledger_path) if e.kind.startswith("probe."))


def measure(workers: int, probes: int, mode: str) -> Result:
    """Run one configuration against a fresh sink and ledger; verify the ledger afterwards."""
    with tempfile.TemporaryDirectory(prefix="chaos-bench-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        try:
            with Sink(ledger, mode=mode) as sink:
                procs, barrier, done = start_workers(sink, workers, probes)
                barrier.wait(timeout=120)
                start, cpu = time.perf_counter(), time.process_time()
                worker_cpu = sum(done.get(timeout=600) for _ in range(workers))
                seconds, sink_cpu = time.perf_counter() - start, time.process_time() - cpu
                for proc in procs:
                    proc.join(timeout=30)
                    if proc.exitcode != 0:
                        raise RuntimeError(f"worker process exited with {proc.exitcode}")
        finally:
            ledger.close()
        committed = count_probe_events(Path(tmp) / "ledger.sqlite")
    return Result(workers, workers * probes, seconds, committed, sink_cpu, worker_cpu)


def print_table(results: Sequence[Result]) -> None:
    print(f"{'workers':>7} {'probes':>8} {'seconds':>8} {'probes/s':>9} {'in ledger':>10} "
          f"{'sink cpu us/probe':>18} {'worker cpu us/probe':>20}")
    for r in results:
        check = "ok" if r.committed == r.probes else "MISMATCH"
        print(f"{r.workers:>7} {r.probes:>8} {r.seconds:>8.3f} {r.rate:>9.0f} {r.committed:>7} {check:<2} "
              f"{r.sink_cpu_s / r.probes * 1e6:>18.0f} {r.worker_cpu_s / r.probes * 1e6:>20.0f}")
    best = min(r.rate for r in results)
    print(f"goal: >= {GOAL_PROBES_PER_S} committed probes/s; slowest configuration: {best:.0f}/s "
          f"({'meets' if best >= GOAL_PROBES_PER_S else 'BELOW'} goal)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=3_000, help="probes per worker (default 3000)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 8], help="worker counts (default 1 8)")
    parser.add_argument("--mode", default="plain", choices=["plain", "idempotent", "fenced"], help="sink mode")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = [measure(n, args.probes, args.mode) for n in args.workers]
    print_table(results)
    return 0 if all(r.committed == r.probes for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
