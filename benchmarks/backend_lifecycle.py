"""How long each server takes to start, to crash-restart (SIGKILL, then ready on the same data and
ports), and to close, and how much memory it holds once started: what a run pays before its first job,
and what a restart fault costs a scenario. `--provider docker` measures the server in its container
(the image already built: `chaos.containers.images` builds it once per machine).

    python3 benchmarks/backend_lifecycle.py [--repeat 3] [--kinds postgres,redis,beanstalkd,rabbitmq,nats]
                                            [--provider local|docker]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from chaos.backends.base import BackendSettings
from chaos.backends.registry import provider

OPTIONS = {"redis": {"persistence": "aof-always"}, "beanstalkd": {"binlog": "on"}}


def resident_mb(pid: int | None) -> float:
    """The server's resident memory: its process and every descendant."""
    if pid is None:
        return 0.0
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 1e6


def measure(kind: str, root: Path, name: str) -> tuple[float, float, float, float]:
    began = time.perf_counter()
    backend = provider(kind, name).open(BackendSettings(root, "bench", options=OPTIONS.get(kind, {})))
    started = time.perf_counter() - began
    try:
        memory = resident_mb(getattr(backend, "pid", None))
        began = time.perf_counter()
        backend.restart("immediate")
        restarted = time.perf_counter() - began
    finally:
        began = time.perf_counter()
        backend.close()
        closed = time.perf_counter() - began
    return started, restarted, closed, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default="postgres,redis,beanstalkd,rabbitmq,nats")
    parser.add_argument("--provider", choices=("local", "docker"), default="local")
    args = parser.parse_args()
    print(f"{'kind':<11} {'start s':>8} {'restart s':>10} {'close s':>8} {'RSS MB':>7}   "
          f"({args.provider}, median of {args.repeat})")
    for kind in args.kinds.split(","):
        rows = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(measure(kind, Path(tmp) / kind, args.provider))
        start, restart, close, memory = (statistics.median(column) for column in zip(*rows, strict=True))
        print(f"{kind:<11} {start:>8.2f} {restart:>10.2f} {close:>8.2f} {memory:>7.0f}")


if __name__ == "__main__":
    main()
