"""active_list's worker, the queue's own (a stand-in for a BullMQ-like library): keys under the run's
prefix are `wait` (a list of job ids), `active` (one list shared by every worker), `dead` (a sorted set),
and `job:<id>` (a JSON string: id, payload, status, worker, attempt, lock_until in the server's
milliseconds). Each script reads the server's clock and changes a job's list and its JSON in one step. A
worker claims the head of wait, renews its lock from a thread, completes the job by script, and before
each claim runs the stalled-job check, which moves every active job whose lock expired back to wait (or to
dead after its last attempt).

It reports its ack's outcome as unknown (ok null), as a library that completes jobs out of the handler's
sight would: what the queue accepted is the queue's record's to say (the [observer] layout in target.toml).
`-p ack=unchecked` completes a job whoever holds its lock, and writes the completing execution into its JSON.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, serve_jobs, settings, stop_flag
from chaos.worker.redis import TRANSIENT, connect, keys, settle

NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: wait, active; ARGV: prefix, worker, lease ms. The head of wait, active and locked by this worker.
CLAIM = NOW + """
local id = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
if not id then return false end
local key = ARGV[1] .. 'job:' .. id
local job = cjson.decode(redis.call('GET', key))
job['status'] = 'active'
job['worker'] = ARGV[2]
job['attempt'] = job['attempt'] + 1
job['lock_until'] = now + tonumber(ARGV[3])
local raw = cjson.encode(job)
redis.call('SET', key, raw)
return raw"""

OWNED = """
local key = ARGV[1] .. 'job:' .. ARGV[2]
local raw = redis.call('GET', key)
local job = raw and cjson.decode(raw)
local owned = job and job['status'] == 'active' and job['worker'] == ARGV[3] and tostring(job['attempt']) == ARGV[4]
"""

# ARGV: prefix, id, worker, attempt, lease ms. 1 when the lock was this execution's and is extended.
EXTEND = NOW + OWNED + """
if not owned then return 0 end
job['lock_until'] = now + tonumber(ARGV[5])
redis.call('SET', key, cjson.encode(job))
return 1"""

# KEYS: active; ARGV: prefix, id, worker, attempt, 'checked' or 'unchecked'. 1 when the job is completed
# by this execution. Unchecked, any execution completes it, and the record names it.
COMPLETE = OWNED + """
if ARGV[5] == 'checked' and not owned then return 0 end
if not job then return 0 end
redis.call('LREM', KEYS[1], 1, ARGV[2])
job['status'] = 'completed'
job['worker'] = ARGV[3]
job['attempt'] = tonumber(ARGV[4])
redis.call('SET', key, cjson.encode(job))
return 1"""

# KEYS: active, wait, dead; ARGV: prefix, id, worker, attempt, max attempts. A failed attempt: dead after
# the last (1), else back to wait (0); -1 when it is no longer this execution's.
FAIL = NOW + OWNED + """
if not owned then return -1 end
redis.call('LREM', KEYS[1], 1, ARGV[2])
if job['attempt'] >= tonumber(ARGV[5]) then
  job['status'] = 'failed'
  redis.call('ZADD', KEYS[3], now, ARGV[2])
else
  job['status'] = 'waiting'
  redis.call('RPUSH', KEYS[2], ARGV[2])
end
redis.call('SET', key, cjson.encode(job))
if job['status'] == 'failed' then return 1 end
return 0"""

# KEYS: active, wait, dead; ARGV: prefix, max attempts. Every active job whose lock expired goes back to
# wait, or to dead after its last attempt; the number moved.
STALLED = NOW + """
local moved = 0
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local key = ARGV[1] .. 'job:' .. id
  local job = cjson.decode(redis.call('GET', key))
  if job['lock_until'] < now then
    redis.call('LREM', KEYS[1], 1, id)
    if job['attempt'] >= tonumber(ARGV[2]) then
      job['status'] = 'failed'
      redis.call('ZADD', KEYS[3], now, id)
    else
      job['status'] = 'waiting'
      redis.call('RPUSH', KEYS[2], id)
    end
    redis.call('SET', key, cjson.encode(job))
    moved = moved + 1
  end
end
return moved"""


class Current:
    """The execution this process works on (job, attempt), shared with the lock's renewal thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.job: tuple[str, str] | None = None

    def set(self, value: tuple[str, str] | None) -> None:
        with self.lock:
            self.job = value

    def get(self) -> tuple[str, str] | None:
        with self.lock:
            return self.job


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client = connect()
    prefix = keys().prefix
    wait, active, dead = prefix + "wait", prefix + "active", prefix + "dead"
    claim_job, complete = client.register_script(CLAIM), client.register_script(COMPLETE)
    fail, stalled = client.register_script(FAIL), client.register_script(STALLED)
    lease_ms, me, max_attempts = int(cfg.lease_s * 1000), cfg.worker_id, cfg.max_attempts
    current = Current()

    def renew() -> None:
        renewer = connect()
        renew_lock = renewer.register_script(EXTEND)
        while not stop.wait(cfg.heartbeat_s):
            held = current.get()
            if held is None:
                continue
            try:
                ok = renew_lock(args=[prefix, held[0], me, held[1], lease_ms]) == 1
            except TRANSIENT as exc:
                log(f"lock renewal failed: {exc!r}")
                ok = False
            probe.heartbeat(held[0], held[1], ok)

    threading.Thread(target=renew, name="lock-renewal", daemon=True).start()
    log(f"started with {cfg.params}")

    def claim() -> dict[str, Any] | None:
        stalled(keys=[active, wait, dead], args=[prefix, max_attempts])
        raw = claim_job(keys=[wait, active], args=[prefix, me, lease_ms])
        return None if raw is None else dict(json.loads(raw))

    def process(job: dict[str, Any]) -> None:
        name, attempt = str(job["id"]), str(job["attempt"])
        current.set((name, attempt))
        probe.claim(name, attempt, attempt=int(attempt))
        try:
            run_handler(job["payload"])
        except JobFailed as exc:
            current.set(None)
            probe.abandon(name, attempt, reason="handler failed")
            outcome = settle(lambda: fail(keys=[active, wait, dead], args=[prefix, name, me, attempt, max_attempts]),
                             stop)
            log(f"{name} failed ({exc}); retried (0), dead (1), no longer ours (-1): {outcome}")
            return
        probe.effect(name, attempt)
        current.set(None)
        done = settle(lambda: complete(keys=[active], args=[prefix, name, me, attempt, cfg.param("ack")]), stop)
        log(f"{name} attempt {attempt}: completion {'accepted' if done == 1 else 'refused or unknown'}")
        probe.ack(name, attempt, None)

    serve_jobs(stop, claim, process, TRANSIENT)


if __name__ == "__main__":
    main()
