"""redis_reliable reconciler: returns the processing lists of dead processes to the queue's head.

A list is an orphan once its process's heartbeat key has expired; as Sidekiq Pro's guard demands, it is
recovered only when the heartbeat has stayed missing for guard_s more (the first sighting is marked with
the server's clock, so no process clock matters). All in one script, atomic against a heartbeat renewal.

Broken variants (target.toml's [params]): `liveness = "registered"` skips the list of every process still
in the processes set (it stops cleanly only once), so a stopped or cut-off owner's job sits in a list
nobody recovers until the owner comes back; `sweep = "abort"` retries each job the workers' stall check
aborted (the dead set) once retry_s has passed since, by the server's clock.
"""

from __future__ import annotations

from chaos.worker import log, settings, stop_flag
from chaos.worker.redis import TRANSIENT, connect, keys

# KEYS: processing list, its heartbeat, queue, orphan mark; ARGV: guard in ms. Returns the entries moved.
RECOVER = """
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DEL', KEYS[4])
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = redis.call('GET', KEYS[4])
if not since then
  redis.call('SET', KEYS[4], now, 'PX', 600000)
  return 0
end
if now - tonumber(since) < tonumber(ARGV[1]) then return 0 end
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[3], 'RIGHT', 'LEFT') do moved = moved + 1 end
redis.call('DEL', KEYS[4])
return moved"""
# KEYS: aborted hash, dead set, queue; ARGV: retry_s in ms. Each aborted job still dead once retry_s has
# passed back on the queue, once (the aborted hash keeps its stamp: the stall check never aborts it again).
RETRY_ABORTED = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local aborted = redis.call('HGETALL', KEYS[1])
local moved = 0
for i = 1, #aborted, 2 do
  local stamp = aborted[i + 1]
  local space = string.find(stamp, ' ')
  if now - tonumber(string.sub(stamp, 1, space - 1)) >= tonumber(ARGV[1])
      and redis.call('SREM', KEYS[2], aborted[i]) == 1 then
    redis.call('RPUSH', KEYS[3], string.sub(stamp, space + 1))
    moved = moved + 1
  end
end
return moved"""


def main() -> None:
    cfg = settings()
    stop = stop_flag()
    client, k = connect(), keys()
    recover, retry_aborted = client.register_script(RECOVER), client.register_script(RETRY_ABORTED)
    period, guard_ms = cfg.param("reconcile_s"), int(cfg.param("guard_s") * 1000)
    registered, abort = cfg.param("liveness") == "registered", cfg.param("sweep") == "abort"
    retry_ms = int(cfg.param("retry_s") * 1000)
    prefix = k.processing("")
    log(f"reconciling every {period}s, guard {guard_ms} ms")
    while not stop.wait(period):
        try:
            if abort and (moved := retry_aborted(keys=[k.prefix + "aborted", k.dead, k.queue], args=[retry_ms])):
                log(f"retried {moved} aborted job(s)")
            for key in client.scan_iter(match=k.processing_lists(), count=1000):
                identity = str(key)[len(prefix):]
                if registered and client.sismember(k.prefix + "processes", identity):
                    continue  # registered: taken for alive, whatever its heartbeat
                moved = recover(keys=[key, k.heartbeat(identity), k.queue, k.orphan(identity)],
                                args=[guard_ms])
                if moved:
                    log(f"returned {moved} job(s) of {identity} to the queue")
        except TRANSIENT as exc:
            log(f"reconcile failed: {exc!r}")


if __name__ == "__main__":
    main()
