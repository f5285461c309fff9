"""What runs inside a worker process: the probe client (`chaos.probe`) and the helpers below.

Standard library only (`chaos.worker.postgres` adds psycopg) and Python 3.8 syntax, since workers run
in the queue's own virtualenv, often older than the suite's. It imports nothing of `chaos` but the
leaf vocabulary `chaos.events`.
"""

from chaos.worker.settings import (
    POLL_S,
    HandlerThread,
    JobFailed,
    WorkerSettings,
    log,
    pause,
    retrying,
    run_handler,
    serve_jobs,
    settings,
    stop_flag,
)

__all__ = ["POLL_S", "HandlerThread", "JobFailed", "WorkerSettings", "log", "pause", "retrying", "run_handler",
           "serve_jobs", "settings", "stop_flag"]
