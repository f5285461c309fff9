"""huey_redis tasks: what the producer (control.py, in the suite) and the consumer (worker.py, run by
huey's own `huey_consumer`) share, as a huey application's tasks module is shared by both.

`huey_for` is the huey instance: RedisHuey on the URL the suite hands over, named for the run's
namespace. huey's `name` is its storage namespace ("The queue name is the storage namespace", its
recipes), and RedisStorage builds every key as `huey.<kind>.<name>` (`huey.redis.<name>` is the queue
list, `huey.results.<name>` the result hash, `huey.schedule.<name>` the schedule): with `clean_name=False`
the name is the run's prefix verbatim, so a run's keys are `huey.redis.chaos:<run>:` and so on. They
cannot start with the prefix itself: huey has no option for what comes before the name (README.md).

`define_task` is the one task, `chaos_job(job, payload)`: the suite's job id is its first argument (it
travels in huey's own message, pickled), the handler runs, and the job's external side effect is the
`effect` probe. It returns the job id, so huey's result store records the completion under the task's
id. Its `retries` are the contract's max_attempts less one: huey runs a failing task again that many
times (SIGNAL_RETRYING), then stores its error as the result.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from huey import RedisHuey
from redis import ConnectionPool

from chaos import probe
from chaos.worker import log, run_handler

TASK = "chaos_job"  # the task's name; huey registers it as tasks.chaos_job (module and name)
READ_TIMEOUT_S = 1  # huey's blocking pop (BRPOP) waits this long for a message before it looks again
SOCKET_TIMEOUT_S = 3.0  # longer than the blocking pop: a cut connection fails instead of hanging


def pool_for(url: str) -> ConnectionPool:
    """redis-py's pool for `url`, with timeouts (huey takes a url or a pool, not both)."""
    return ConnectionPool.from_url(url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)


def huey_for(pool: ConnectionPool, namespace: str, kind: type[RedisHuey] = RedisHuey) -> Any:
    """The run's huey: a RedisHuey (`kind`) on `pool`, its storage named for the run's namespace, storing
    results."""
    return kind(name=namespace or "huey", connection_pool=pool, clean_name=False, results=True,
                     read_timeout=READ_TIMEOUT_S)


def report(send: Callable[[], Any]) -> None:
    """Send one probe; one the sink did not commit ends the process at once (the protocol's rule: huey
    catches what a task or a signal handler raises, and would log it and carry on as if it had been sent)."""
    try:
        send()
    except probe.ProbeError as exc:
        log(f"{exc}; exiting")
        os._exit(70)


def attempt_of(task: Any, max_attempts: int) -> int:
    """Which execution of its job this is, 1 for the first: huey counts a task's retries down from the
    decorator's `retries` (max_attempts - 1), one less after each failure."""
    return max_attempts - int(task.retries)


def token_of(task: Any, max_attempts: int) -> str:
    """The execution's token: huey's task id (kept across retries) and the attempt."""
    return f"{task.id}:{attempt_of(task, max_attempts)}"


def define_task(huey: Any, max_attempts: int) -> Any:
    """Register chaos_job on `huey`: the producer calls it to enqueue, the consumer runs it."""

    @huey.task(retries=max_attempts - 1, context=True, name=TASK)  # type: ignore[untyped-decorator]
    def chaos_job(job: str, payload: dict[str, Any], task: Any = None) -> str:
        run_handler(payload)  # a poison job raises JobFailed here, before any effect
        report(lambda: probe.effect(job, token_of(task, max_attempts), fence=attempt_of(task, max_attempts)))
        return job

    return chaos_job
