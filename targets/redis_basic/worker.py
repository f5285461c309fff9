"""redis_basic worker: Sidekiq's basic fetch. BLPOP takes the job off the queue and the handler runs;
nothing in Redis remembers the popped job, so a worker that dies between the pop and the end of the job
loses it (the seed: "Sidekiq's basic fetch removes a job from Redis, so a process crash can lose it").

Completion records the job in the done hash (job -> claim token); a failure counts the attempt and puts
the job back on the queue, or in the dead set after max_attempts.
"""

from __future__ import annotations

import uuid

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, serve_jobs, settings, stop_flag
from chaos.worker.redis import BLOCK_S, TRANSIENT, connect, keys, parse, settle


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client, k = connect(), keys()
    max_attempts = int(cfg.contract.get("max_attempts") or 1)
    log(f"started with {cfg.params}")

    def claim() -> str | None:
        popped = client.blpop([k.queue], timeout=BLOCK_S)
        return None if popped is None else str(popped[1])

    def fail(raw: str, job: str) -> None:
        with client.pipeline(transaction=True) as pipe:
            pipe.hincrby(k.attempts, job, 1)
            failures = int(pipe.execute()[0])
        if failures >= max_attempts:
            client.sadd(k.dead, job)
        else:
            client.rpush(k.queue, raw)

    def process(raw: str) -> None:
        job, payload = parse(raw)
        token = uuid.uuid4().hex
        probe.claim(job, token)
        try:
            run_handler(payload)
        except JobFailed as exc:
            probe.abandon(job, token, reason="handler failed")
            settle(lambda: fail(raw, job), stop)
            log(f"{job} failed ({exc})")
            return
        probe.effect(job, token)
        probe.ack(job, token, settle(lambda: client.hset(k.done, job, token) is not None, stop))

    serve_jobs(stop, claim, process, TRANSIENT)


if __name__ == "__main__":
    main()
