"""What containers cost a run: building an image from the host's binaries (cold, then cached: the tag is
a hash, so the second call only looks it up), starting a worker's container (`docker run --init` of
queue-chaos/python until its process runs, and until it exits), and the container faults' own latency
(pause and unpause through the cgroup freezer, a container kill until it is gone).

    python3 benchmarks/container_faults.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from chaos.containers import engine, images, workers


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    client = engine.client()
    spec = images.ImageSpec("bench-redis", ("/usr/bin/redis-server",), files=images.passwd())
    for found in client.images.list(name="queue-chaos/bench-redis"):
        client.images.remove(found.id, force=True)
    print(f"image build (redis-server, cold): {timed(lambda: images.ensure(spec)):.2f} s; "
          f"cached: {timed(lambda: images.ensure(spec)) * 1000:.0f} ms")
    python = images.ensure(workers.python_image())
    mounts = [arg for path in workers.python_mounts() for arg in ("-v", f"{path}:{path}:ro")]
    run = ["docker", "run", "--rm", "--init", "--network", "host", *mounts, python]
    exited = [timed(lambda: subprocess.run([*run, sys.executable, "-c", "pass"], check=True))
              for _ in range(args.repeat)]
    print(f"worker container, docker run --init of a Python that exits: median {statistics.median(exited):.2f} s")
    volumes = {path: {"bind": path, "mode": "ro"} for path in workers.python_mounts()}
    paused, thawed, killed = [], [], []
    for _ in range(args.repeat):
        container = client.containers.run(python, [sys.executable, "-c", "import time; time.sleep(60)"], detach=True,
                                           init=True, network_mode="host", labels=engine.labels("bench"),
                                           volumes=volumes)
        try:
            paused.append(timed(container.pause))
            thawed.append(timed(container.unpause))
            began = time.perf_counter()
            container.kill()
            container.wait()
            killed.append(time.perf_counter() - began)
        finally:
            container.remove(force=True)
    print(f"pause: median {statistics.median(paused) * 1000:.0f} ms; unpause: "
          f"{statistics.median(thawed) * 1000:.0f} ms; container kill until exited: "
          f"{statistics.median(killed) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
