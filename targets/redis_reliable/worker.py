"""redis_reliable worker: Sidekiq Pro's super_fetch, as the seed describes it. BLMOVE moves a job
atomically from the queue to this process's private processing list, where it stays until the ack
removes it; a heartbeat key with a TTL (lease_s), renewed from its own thread, says the process lives.

The processing list is named for this process (worker name and a random suffix), so a restarted worker
is a new process: its predecessor's list is an orphan that only the reconciler recovers, once that
heartbeat has expired. Each renewal also reports whether the current job's entry is still in the list
(the reconciler may have taken it while this process was stopped). An ack or a failure removes the entry
first (LREM) and does nothing when it is gone: a stale worker's ack is rejected.

Broken variants (target.toml's [params]):
- `sweep = "blind"` writes each claimed job's status (its entry, in the started hash) and, before each
  fetch, runs the queue's retry sweep (as libraries run their maintenance in the fetch path), which
  retries once a started job that no list holds, whatever state it is in: a completed job too.
- `sweep = "abort"` runs the queue's stall check between the pop and the status write (the race of issue
  34's Redis library, made certain): it aborts each job it finds with no status, the one this worker just
  popped included, for the reconciler to retry after retry_s. The job leaves its owner at once, by the
  queue's own record, and the worker carries on unaware until its ack is refused.
- `liveness = "registered"` registers this process in the processes set until it stops cleanly, and the
  reconciler then takes a registered process for alive whatever its heartbeat (a stopped or cut-off owner
  keeps its job until it comes back).
- `startup_recovery = "unguarded"` returns every other process's list to the queue when the worker
  starts, live owners' too: the start-up recovery the seed warns about, without the expired heartbeat and
  guard it requires.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, WorkerSettings, log, retrying, run_handler, serve_jobs, settings, stop_flag
from chaos.worker.redis import BLOCK_S, TRANSIENT, Keys, connect, keys, parse, settle

# KEYS: processing list, done hash; ARGV: entry, job, token. Idempotent: a retried ack that landed says 1.
ACK = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  return 1
end
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[3] then return 1 end
return 0"""
# KEYS: processing list, attempts, dead set, queue; ARGV: entry, job, max_attempts.
FAIL = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return -1 end
if redis.call('HINCRBY', KEYS[2], ARGV[2], 1) >= tonumber(ARGV[3]) then
  redis.call('SADD', KEYS[3], ARGV[2])
  return 1
end
redis.call('RPUSH', KEYS[4], ARGV[1])
return 0"""

# sweep = blind: KEYS: started hash, queue, retried set; ARGV: the processing lists' pattern. Retries each
# started job that no list holds, once, whatever its state: the flaw is that a completed job is one of them.
RETRY_BLIND = """
local held = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  for _, e in ipairs(redis.call('LRANGE', key, 0, -1)) do held[e] = true end
end
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do held[e] = true end
local started = redis.call('HGETALL', KEYS[1])
local moved = 0
for i = 1, #started, 2 do
  if not held[started[i + 1]] then
    redis.call('HDEL', KEYS[1], started[i])
    if redis.call('SADD', KEYS[3], started[i]) == 1 then
      redis.call('RPUSH', KEYS[2], started[i + 1])
      moved = moved + 1
    end
  end
end
return moved"""

# sweep = abort: KEYS: started hash, dead set, aborted hash; ARGV: the processing lists' pattern. The queue's
# stall check: every job in a processing list with no status yet is aborted (moved to the dead set, once per
# job, stamped with the server's clock) for the reconciler to retry after retry_s.
ABORT_STALLED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local aborted = 0
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  for _, e in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local job = cjson.decode(e)['id']
    if redis.call('HEXISTS', KEYS[1], job) == 0 and redis.call('HSETNX', KEYS[3], job, now .. ' ' .. e) == 1 then
      redis.call('LREM', key, 1, e)
      redis.call('SADD', KEYS[2], job)
      aborted = aborted + 1
    end
  end
end
return aborted"""


class Current:
    """The job this process works on, shared with the heartbeat thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.job: tuple[str, str, str] | None = None  # (job, token, entry)

    def set(self, value: tuple[str, str, str] | None) -> None:
        with self.lock:
            self.job = value

    def get(self) -> tuple[str, str, str] | None:
        with self.lock:
            return self.job


class Heartbeat:
    """Renews this process's heartbeat key every heartbeat_s; with a job, reports whether it still owns it."""

    def __init__(self, cfg: WorkerSettings, k: Keys, identity: str, current: Current, stop: threading.Event) -> None:
        self.client, self.k, self.identity, self.current, self.stop = connect(), k, identity, current, stop
        self.ttl_ms = int(cfg.lease_s * 1000)
        self.interval = cfg.heartbeat_s
        self._thread = threading.Thread(target=self._loop, name="heartbeat", daemon=True)

    def beat(self) -> None:
        current = self.current.get()
        try:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.set(self.k.heartbeat(self.identity), "1", px=self.ttl_ms)
                if current is not None:
                    pipe.lpos(self.k.processing(self.identity), current[2])
                replies = pipe.execute()
            owned = current is not None and replies[1] is not None
        except TRANSIENT as exc:
            log(f"heartbeat failed: {exc!r}")
            owned = False
        if current is not None:
            probe.heartbeat(current[0], current[1], owned)

    def _loop(self) -> None:
        while not self.stop.wait(self.interval):
            self.beat()

    def start(self) -> None:
        retrying(lambda: self.client.set(self.k.heartbeat(self.identity), "1", px=self.ttl_ms), TRANSIENT, self.stop)
        self._thread.start()


def recover_all(client: Any, k: Keys, own: str, stop: threading.Event) -> None:
    """Return every other process's processing list to the queue's head, whether its owner lives or not."""
    for key in retrying(lambda: list(client.scan_iter(match=k.processing_lists(), count=1000)), TRANSIENT, stop):
        if str(key) != own:
            while client.lmove(key, k.queue, "RIGHT", "LEFT") is not None:
                log(f"start-up recovery: returned a job of {key} to the queue")


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client, k = connect(), keys()
    identity = f"{cfg.worker_id}:{uuid.uuid4().hex[:8]}"
    processing = k.processing(identity)
    ack, fail = client.register_script(ACK), client.register_script(FAIL)
    retry_blind, abort_stalled = client.register_script(RETRY_BLIND), client.register_script(ABORT_STALLED)
    max_attempts = cfg.max_attempts
    current = Current()
    Heartbeat(cfg, k, identity, current, stop).start()
    registered = cfg.param("liveness") == "registered"
    if registered:
        retrying(lambda: client.sadd(k.prefix + "processes", identity), TRANSIENT, stop)
    blind, abort = cfg.param("sweep") == "blind", cfg.param("sweep") == "abort"
    if cfg.param("startup_recovery") == "unguarded":
        recover_all(client, k, processing, stop)
    log(f"started as {identity} with {cfg.params}")

    def claim() -> str | None:
        """An entry left in this process's own list (a move whose reply a cut connection lost) first,
        then the queue's head (after the retry sweep, under sweep = blind)."""
        if blind:
            retry_blind(keys=[k.prefix + "started", k.queue, k.prefix + "retried"], args=[k.processing_lists()])
        left = client.lindex(processing, 0)
        if left is not None:
            return str(left)
        moved = client.blmove(k.queue, processing, BLOCK_S, "LEFT", "RIGHT")
        return None if moved is None else str(moved)

    def process(raw: str) -> None:
        job, payload = parse(raw)
        token = uuid.uuid4().hex
        current.set((job, token, raw))
        if abort:
            settle(lambda: abort_stalled(keys=[k.prefix + "started", k.dead, k.prefix + "aborted"],
                                         args=[k.processing_lists()]), stop)
        if blind or abort:  # the job's status, for the retry sweep or the stall check
            settle(lambda: client.hset(k.prefix + "started", job, raw), stop)
        probe.claim(job, token)
        try:
            run_handler(payload)
        except JobFailed as exc:
            probe.abandon(job, token, reason="handler failed")
            current.set(None)
            outcome: Any = settle(lambda: fail(keys=[processing, k.attempts, k.dead, k.queue],
                                               args=[raw, job, max_attempts]), stop)
            log(f"{job} failed ({exc}); requeued (0), dead-lettered (1), lost to another owner (-1): {outcome}")
            return
        probe.effect(job, token)
        current.set(None)
        done = settle(lambda: ack(keys=[processing, k.done], args=[raw, job, token]), stop)
        probe.ack(job, token, None if done is None else done == 1)

    serve_jobs(stop, claim, process, TRANSIENT)
    if registered:  # a clean stop: the reconciler may recover this process's list from now on
        settle(lambda: client.srem(k.prefix + "processes", identity), stop)


if __name__ == "__main__":
    main()
