"""rq_redis worker: starts RQ's own worker, `rq worker` (the `rq` console script's module, `python -m
rq.cli worker`), in this very process (os.execv keeps the pid the supervisor started and reaps), with the
flags of the run's `monitoring` variant. RQ's default `Worker` forks a work horse per job, which runs
tasks.chaos_job and the callbacks that send the probes (tasks.py).

- `default`: RQ as shipped. Every interval flag at its default (`--job-monitoring-interval` 30,
  `--maintenance-interval` 600, `--worker-ttl` 420: an idle worker blocks 405 s in its dequeue, and runs
  its maintenance only between dequeues).
- `interval1s_ttl16`: RQ's documented monitoring and TTL settings tightened so that recovery happens within
  a run: `--job-monitoring-interval 1` (the worker renews the job's StartedJobRegistry entry every second,
  with a TTL of 1 + 60 s), `--maintenance-interval 1` (StartedJobRegistry.cleanup every second, on an idle
  worker) and `--worker-ttl 16` (a dequeue blocks for worker_ttl - 15 = 1 s, so the maintenance runs).
  The control enqueues with `Retry(max=max_attempts - 1)`, which the cleanup also honours for an abandoned
  job.

`--queue-class tasks.ReadyQueue` is RQ's dequeue with the `ready` probe (tasks.py explains the point).

The worker's name is the suite's worker id and the pid (`w1.12345`): RQ refuses a second live worker of a
name, and a killed worker's key outlives it (its TTL).
"""

from __future__ import annotations

import os
import sys

from tasks_names import FLAGS, queue_name

from chaos.worker import settings

cfg = settings()
variant = str(cfg.param("monitoring"))
argv = [sys.executable, "-m", "rq.cli", "worker", "--url", os.environ["CHAOS_BACKEND_URL"],
        "--name", f"{cfg.worker_id}.{os.getpid()}", "--path", os.path.dirname(os.path.abspath(__file__)),
        "--queue-class", "tasks.ReadyQueue", *FLAGS[variant], queue_name(os.environ.get("CHAOS_NAMESPACE", ""))]
sys.stdout.flush()
os.execv(sys.executable, argv)
