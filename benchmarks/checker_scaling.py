"""Checker scaling: how `chaos.check.checker.judge` grows with the size of the ledger.

What it measures: the wall time of `judge(events)` on synthetic ledgers of 125k, 250k, 500k and 1,000,000
events, built in memory as lists of `chaos.events.Event` shaped like real runs: run.start with the
target's contract, every job enqueued up front, workers executing jobs concurrently (claim, several
heartbeats, effect, ack, interleaved across workers), some workers killed after an effect and before its
ack (gate.armed, gate.matched, fault, fault.applied, process.exit, a fresh process.start) with the job
redelivered to another worker after the lease, some executions abandoned after a failed heartbeat and
redelivered, a few jobs left stuck (their owner killed, never reclaimed), then the final snapshot (one
`snapshot` per job), snapshot.taken and run.end. Optionally (--sqlite) the same ledger is written to a
SQLite file with the ledger's own schema and `read_events` is timed separately.

Why: `chaos report` and every run judge the whole ledger; a long soak run can log a million events, and
the checker must stay linear in them (constant microseconds per event). The issue's goal is one million
events judged in under 3 s.

    python3 benchmarks/checker_scaling.py [--sizes 125000 250000 500000 1000000] [--repeat 3] [--sqlite]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chaos import events  # noqa: E402
from chaos.check.checker import judge  # noqa: E402
from chaos.check.verdict import Verdict  # noqa: E402
from chaos.events import Event, Record  # noqa: E402
from chaos.ledger import SCHEMA, read_events  # noqa: E402

GOAL_S_PER_MILLION = 3.0
SIZES = (125_000, 250_000, 500_000, 1_000_000)
CONTRACT: dict[str, Any] = {"recovery_bound_s": 2.0, "delivery": "at-least-once", "lease_s": 1.0,
                            "heartbeat_s": 0.25, "stale_ack": "rejected", "overlap": "after-lease-loss",
                            "max_attempts": 3}
WALL_ORIGIN = 1_700_000_000.0



@dataclass(frozen=True)
class Shape:
    """The knobs of a synthetic run; the defaults give ~9 events per job."""

    workers: int = 16
    heartbeats: tuple[int, int] = (1, 5)  # per execution, inclusive range
    kill_one_in: int = 400  # jobs whose worker is killed after the effect, before the ack
    abandon_one_in: int = 700  # executions that lose their lease (failed heartbeat) and abandon
    stuck: int = 5  # killed owners whose jobs are never reclaimed
    dt: float = 0.0005  # controller seconds between consecutive events
    redeliver_after_s: float = 1.2  # lease_s plus the reclaimer's delay


@dataclass
class Builder:
    """Appends events with increasing seq and monotonic/wall clocks, as the ledger would."""

    dt: float
    events: list[Event] = field(default_factory=list)
    t: float = 100.0

    def add(self, record: Record) -> None:
        """Stamp one event built by a `chaos.events` constructor, as the ledger does."""
        kind, source, job, worker, data = record
        self.t += self.dt
        self.events.append(Event(len(self.events) + 1, self.t, WALL_ORIGIN + self.t, source, kind, job, worker, data))

    def emit(self, steps: Sequence[Record]) -> None:
        for step in steps:
            self.add(step)


@dataclass
class Simulation:
    """Workers taking jobs in rounds; killed and abandoned jobs come back once their lease has run out."""

    shape: Shape
    rng: random.Random
    builder: Builder
    pids: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    owner: dict[str, str | None] = field(default_factory=dict)
    redeliver: deque[tuple[float, str]] = field(default_factory=deque)
    faults: int = 0
    stuck_left: int = 0

    def next_pid(self, worker: str) -> int:
        self.pids[worker] = self.pids.get(worker, 1000) + 1
        return self.pids[worker]


def probe_data(sim: Simulation, worker: str, token: str, **extra: Any) -> dict[str, Any]:
    return {"token": token, "pid": sim.pids[worker], "clock": WALL_ORIGIN + sim.builder.t, **extra}


def execution_steps(sim: Simulation, job: str, worker: str) -> tuple[list[Record], str]:
    """One claim of `job` by `worker`; returns its steps and how it ends: ack, kill, stuck or abandon."""
    sim.attempts[job] = attempt = sim.attempts.get(job, 0) + 1
    token = f"{worker}-{job}-{attempt}"
    sim.owner[job] = worker
    steps = [events.probe(events.CLAIM, job, worker, probe_data(sim, worker, token))]
    lo, hi = sim.shape.heartbeats
    steps += [events.probe(events.HEARTBEAT, job, worker, probe_data(sim, worker, token, ok=True))
              for _ in range(sim.rng.randint(lo, hi))]
    roll = sim.rng.randrange(sim.shape.kill_one_in * sim.shape.abandon_one_in)
    if roll % sim.shape.abandon_one_in == 0 and attempt < 3:
        steps += [events.probe(events.HEARTBEAT, job, worker, probe_data(sim, worker, token, ok=False)),
                  events.probe(events.ABANDON, job, worker, probe_data(sim, worker, token))]
        sim.owner[job] = None
        return steps, "abandon"
    steps.append(events.probe(events.EFFECT, job, worker, probe_data(sim, worker, token, key=job, accepted=True)))
    if roll % sim.shape.kill_one_in == 0 and attempt < 3:
        stuck = sim.stuck_left > 0
        sim.stuck_left -= stuck
        return steps + kill_steps(sim, job, worker), "stuck" if stuck else "kill"
    steps.append(events.probe(events.ACK, job, worker, probe_data(sim, worker, token, ok=True)))
    sim.owner[job] = None
    return steps, "ack"


def kill_steps(sim: Simulation, job: str, worker: str) -> list[Record]:
    """A gate held after the effect, the worker SIGKILLed and reaped, a fresh process in its place, in
    the order the sink, nemesis and supervisor journal them."""
    sim.faults += 1
    gate, fid, pid = f"g{sim.faults}", f"f{sim.faults}", sim.pids[worker]
    new_pid = sim.next_pid(worker)
    return [events.gate_matched(gate, f"after:effect job={job}", events.EFFECT, job, worker, pid),
            events.fault(fid, "kill", worker, gate, {"scope": "tree"}),
            events.fault_applied(fid, worker, {"pids": [pid]}),
            events.process_exit(worker, pid, "worker", -9, "SIGKILL"),
            events.gate_released(gate, job),
            events.process_start(worker, new_pid, "worker", ["worker.py"], WALL_ORIGIN + sim.builder.t)]


def next_job(sim: Simulation, fresh: deque[str]) -> str | None:
    """A job whose lease ran out (redelivery) before a fresh one."""
    if sim.redeliver and sim.redeliver[0][0] <= sim.builder.t:
        return sim.redeliver.popleft()[1]
    return fresh.popleft() if fresh else None


def run_round(sim: Simulation, fresh: deque[str], workers: Sequence[str]) -> bool:
    """Each worker takes one job; their executions' events interleave. False when no work is left."""
    plans: list[list[Record]] = []
    comebacks: list[str] = []
    for worker in workers:
        job = next_job(sim, fresh)
        if job is None:
            break
        steps, ending = execution_steps(sim, job, worker)
        if ending in ("kill", "stuck"):
            sim.builder.add(events.gate_armed(f"g{sim.faults}", f"after:effect job={job}", job, None))
        if ending in ("kill", "abandon"):
            comebacks.append(job)
        plans.append(steps)
    if not plans:
        return bool(sim.redeliver)
    sim.builder.emit([step for group in zip_longest(*plans) for step in group if step is not None])
    ready = sim.builder.t + sim.shape.redeliver_after_s
    sim.redeliver.extend((ready, job) for job in comebacks)
    return True


def wait_for_redeliveries(sim: Simulation) -> None:
    """Nothing fresh left: let time pass until the next lease runs out (workers idle, polling)."""
    if sim.redeliver and sim.redeliver[0][0] > sim.builder.t:
        sim.builder.t = sim.redeliver[0][0]


def snapshot_steps(sim: Simulation, jobs: Sequence[str]) -> list[Record]:
    return [events.snapshot(job, "claimed" if sim.owner.get(job) else "done", sim.owner.get(job),
                            sim.attempts.get(job, 0)) for job in jobs]


def synthetic_ledger(target_events: int, shape: Shape = Shape(), seed: int = 1) -> list[Event]:
    """A ledger of about `target_events` events (within a fraction of a percent), deterministic per seed."""
    jobs = [f"job-{n:07d}" for n in range(max(1, round(target_events / _events_per_job(shape))))]
    builder = Builder(shape.dt)
    sim = Simulation(shape, random.Random(seed), builder, stuck_left=shape.stuck)
    workers = [f"w{n + 1}" for n in range(shape.workers)]
    builder.add(events.run_start(target="synthetic", scenario="checker_scaling", seed=seed, params={},
                                 contract=dict(CONTRACT), backend="local", pid=1,
                                 command=f"chaos run --target synthetic --seed {seed}"))
    for worker in workers:
        builder.add(events.process_start(worker, sim.next_pid(worker), "worker", ["worker.py"], WALL_ORIGIN))
    builder.emit([events.enqueue(job, {"handler_s": 0.0, "fail": False}) for job in jobs])
    fresh = deque(jobs)
    while fresh or sim.redeliver:
        if not run_round(sim, fresh, workers):
            break
        if not fresh:
            wait_for_redeliveries(sim)
    builder.add(events.drained(len(jobs)))
    builder.emit(snapshot_steps(sim, jobs))
    builder.add(events.snapshot_taken(len(jobs)))
    builder.add(events.run_end("ok", ""))
    return builder.events


def _events_per_job(shape: Shape) -> float:
    """enqueue + claim + mean heartbeats + effect + ack + snapshot (kills and abandons add a little)."""
    return 5 + sum(shape.heartbeats) / 2 + 8 / shape.kill_one_in + 4 / shape.abandon_one_in


# -- measuring ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    events: int
    seconds: float
    verdict: Verdict

    @property
    def us_per_event(self) -> float:
        return self.seconds / self.events * 1e6


def time_judge(ledger: list[Event], repeat: int) -> Timing:
    """Best of `repeat` runs of judge(ledger) (the best is the least disturbed by other load)."""
    best, verdict = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        verdict = judge(ledger)
        best = min(best, time.perf_counter() - start)
    assert verdict is not None
    return Timing(len(ledger), best, verdict)


def write_sqlite(ledger: Sequence[Event], path: Path) -> None:
    """The ledger's own schema and encoding, written in one transaction (Ledger.append is per event)."""
    db = sqlite3.connect(str(path))
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(SCHEMA)
        with db:
            db.executemany("INSERT INTO events (seq, mono, wall, source, kind, job, worker, data) "
                           "VALUES (?,?,?,?,?,?,?,?)",
                           ((e.seq, e.mono, e.wall, e.source, e.kind, e.job, e.worker,
                             json.dumps(e.data, sort_keys=True, default=str)) for e in ledger))
    finally:
        db.close()


def time_read(ledger: Sequence[Event], repeat: int) -> float:
    """Best of `repeat` read_events on a SQLite ledger holding these events; checks it read them all back."""
    best = float("inf")
    with tempfile.TemporaryDirectory(prefix="chaos-bench-") as tmp:
        path = Path(tmp) / "ledger.sqlite"
        write_sqlite(ledger, path)
        for _ in range(repeat):
            gc.collect()
            start = time.perf_counter()
            read = read_events(path)
            best = min(best, time.perf_counter() - start)
            if len(read) != len(ledger) or read[-1] != ledger[-1]:
                raise RuntimeError(f"read_events gave {len(read)} events back, expected {len(ledger)}")
            del read
    return best


def describe(verdict: Verdict) -> str:
    counts = verdict.counts
    kinds: dict[str, int] = {}
    for v in verdict.violations:
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
    shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
    return (f"{verdict.verdict}: jobs {counts.get('enqueued')}, completed {counts.get('completed')}, "
            f"redelivered {counts.get('redelivered')}, stuck {counts.get('stuck')}; violations: {shown}")


def measure(size: int, repeat: int, sqlite: bool) -> tuple[Timing, float | None]:
    build_start = time.perf_counter()
    ledger = synthetic_ledger(size)
    print(f"  built {len(ledger):,} events in {time.perf_counter() - build_start:.1f}s", file=sys.stderr)
    timing = time_judge(ledger, repeat)
    read_s = time_read(ledger, repeat) if sqlite else None
    return timing, read_s


def print_table(rows: Sequence[tuple[Timing, float | None]]) -> None:
    header = f"{'events':>10} {'judge s':>8} {'us/event':>9} {'x first':>8}"
    if any(read is not None for _, read in rows):
        header += f" {'read_events s':>14} {'us/event':>9}"
    print(header)
    first = rows[0][0].us_per_event
    for timing, read in rows:
        per_event = timing.us_per_event
        line = f"{timing.events:>10,} {timing.seconds:>8.3f} {per_event:>9.2f} {per_event / first:>8.2f}"
        if read is not None:
            line += f" {read:>14.3f} {read / timing.events * 1e6:>9.2f}"
        print(line)
    for timing, _ in rows:
        print(f"{timing.events:>10,}  {describe(timing.verdict)}")
    largest = rows[-1][0]
    projected = largest.us_per_event  # microseconds per event = seconds per million events
    print(f"goal: 1,000,000 events judged in < {GOAL_S_PER_MILLION:.0f} s; at {largest.events:,} events: "
          f"{largest.seconds:.3f} s ({projected:.2f} s per million: "
          f"{'meets' if projected < GOAL_S_PER_MILLION else 'OVER'} goal)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="ledger sizes in events")
    parser.add_argument("--repeat", type=int, default=3, help="judge (and read) each ledger N times, keep the best")
    parser.add_argument("--sqlite", action="store_true", help="also time read_events from a SQLite ledger")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = [measure(size, args.repeat, args.sqlite) for size in sorted(args.sizes)]
    print_table(rows)
    return 0 if all(t.verdict.verdict != "error" for t, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
