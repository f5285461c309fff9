"""arq_redis's producer and reader, run by the arq virtualenv's python for the control (control.py), which
lives in the suite's process where arq cannot be imported (arq 0.28 pins redis<6, the suite has redis 8).

    <venv python> arq_helper.py REDIS_URL NAMESPACE

One JSON request a line on stdin, one JSON answer a line on stdout, until stdin closes. Everything goes
through arq's public API: `create_pool` and `ArqRedis.enqueue_job` (with `_job_id`, arq's documented custom
job id: `<namespace><job>`), `Job.status()`, `Job.result_info()`. Requests:

- {"op": "enqueue", "jobs": [[job, payload], ...]}: enqueue `chaos_job(job, payload)` for each, in order.
- {"op": "snapshot", "jobs": [job, ...]}: each job's arq status, with its result's try and success. Read
  job by job, never through `ArqRedis.queued_jobs()`: that lists the queue's ids, then reads each job's key,
  and raises 'job ... not found' for a job a worker finished in between (a failed job, deleted at once).
- {"op": "result", "job": job}: the stored result's try and success (null without one).
- {"op": "close"}: delete the run's arq keys that do not start with the namespace (arq names every job key
  `arq:<kind>:<job id>`, from arq.constants), then exit.

An answer is {"ok": ...} or {"error": "..."} (a Redis error: the control raises it, and a scenario's
polling asks again).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import in_progress_key_prefix, job_key_prefix, result_key_prefix, retry_key_prefix
from arq.jobs import Job

FUNCTION = "chaos_job"


class Helper:
    def __init__(self, url: str, namespace: str) -> None:
        self.settings = RedisSettings.from_dsn(url)
        self.settings.conn_retries = 0  # a failed connection is the answer's error; the control's caller retries
        self.namespace = namespace
        self.queue = namespace + "arq:queue"
        self.pool: ArqRedis | None = None

    async def redis(self) -> ArqRedis:
        if self.pool is None:
            self.pool = await create_pool(self.settings, default_queue_name=self.queue)
        return self.pool

    def job(self, pool: ArqRedis, job: str) -> Job:
        return Job(self.namespace + job, pool, _queue_name=self.queue)

    async def enqueue(self, jobs: list[list[Any]]) -> list[str]:
        pool = await self.redis()
        ids = []
        for job, payload in jobs:
            queued = await pool.enqueue_job(FUNCTION, job, payload, _job_id=self.namespace + job)
            if queued is None:
                raise RuntimeError(f"arq refused to enqueue {job}: a job with id {self.namespace + job} exists")
            ids.append(queued.job_id)
        return ids

    async def result(self, job: str) -> dict[str, Any] | None:
        info = await self.job(await self.redis(), job).result_info()
        if info is None:
            return None
        return {"try": info.job_try, "success": bool(info.success), "result": repr(info.result)[:200]}

    async def snapshot(self, jobs: list[str]) -> dict[str, Any]:
        pool = await self.redis()
        found = {}
        for job in jobs:
            status = await self.job(pool, job).status()
            entry: dict[str, Any] = {"status": status.value}
            if status.value == "complete":
                entry["result"] = await self.result(job)
            found[job] = entry
        return {"jobs": found}

    async def close(self) -> int:
        pool = await self.redis()
        keys = []
        for prefix in (job_key_prefix, in_progress_key_prefix, result_key_prefix, retry_key_prefix):
            keys += [key async for key in pool.scan_iter(match=prefix + self.namespace + "*")]
        if keys and self.namespace:
            await pool.delete(*keys)
        await pool.aclose()
        self.pool = None
        return len(keys)

    async def handle(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op == "enqueue":
            return await self.enqueue(request["jobs"])
        if op == "snapshot":
            return await self.snapshot(request["jobs"])
        if op == "result":
            return await self.result(request["job"])
        if op == "close":
            return await self.close()
        raise ValueError(f"unknown op {op!r}")


def main() -> None:
    helper = Helper(sys.argv[1], sys.argv[2])
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer: dict[str, Any] = {"ok": loop.run_until_complete(helper.handle(request))}
        except Exception as exc:  # noqa: BLE001 - every failure is the answer, the control decides
            if helper.pool is not None:  # a broken connection: start afresh on the next request
                try:
                    loop.run_until_complete(helper.pool.aclose())
                except Exception:  # noqa: BLE001, S110 - closing what is already broken
                    pass
                helper.pool = None
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
        if request.get("op") == "close":
            break


if __name__ == "__main__":
    main()
