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

# KEYS: attempts, dead set, queue; ARGV: entry, job, max_attempts. One script: a retry after a lost reply
# may count a failure twice, never half-apply one.
FAIL = """
if redis.call('HINCRBY', KEYS[1], ARGV[2], 1) >= tonumber(ARGV[3]) then
  redis.call('SADD', KEYS[2], ARGV[2])
  return 1
end
redis.call('RPUSH', KEYS[3], ARGV[1])
return 0"""


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client, k = connect(), keys()
    max_attempts = cfg.max_attempts
    log(f"started with {cfg.params}")

    def claim() -> str | None:
        popped = client.blpop([k.queue], timeout=BLOCK_S)
        return None if popped is None else str(popped[1])

    fail = client.register_script(FAIL)

    def done(job: str, token: str) -> bool:
        client.hset(k.done, job, token)
        return True

    def process(raw: str) -> None:
        job, payload = parse(raw)
        token = uuid.uuid4().hex
        probe.claim(job, token)
        try:
            run_handler(payload)
        except JobFailed as exc:
            probe.abandon(job, token, reason="handler failed")
            settle(lambda: fail(keys=[k.attempts, k.dead, k.queue], args=[raw, job, max_attempts]), stop)
            log(f"{job} failed ({exc})")
            return
        probe.effect(job, token)
        probe.ack(job, token, settle(lambda: done(job, token), stop))

    serve_jobs(stop, claim, process, TRANSIENT)


if __name__ == "__main__":
    main()
