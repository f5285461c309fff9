"""Redis Streams plumbing shared by targets/redis_streams' workers and control: the run's keys, the
consumer group, the claim token, and the Lua scripts that make each ownership step one atomic check
against the group's pending entries list (PEL). Python 3.8 syntax, like the rest of `chaos.worker`.

A consumer group's PEL is the lease table: each delivered, unacknowledged entry names the consumer it
was delivered to, its idle time (since that delivery, or a later XCLAIM) and its delivery counter. Redis
itself checks none of that on XACK or XCLAIM: any client may acknowledge or claim any pending entry. So
every step that must belong to the current owner first asks XPENDING whether the entry is still pending
for this consumer with this delivery count, inside the same script as the write.
"""

from __future__ import annotations

import json
import os
from typing import Any

from chaos import events

GROUP = "workers"

# Whether `id` is pending for consumer ARGV[3] with delivery count ARGV[4] (ARGV[1] the group, ARGV[2] the id).
# A stream that is gone (a server restarted without persistence) has nothing pending, nor its group.
_OWNED = """
local function owned()
  if redis.call('EXISTS', KEYS[1]) == 0 then return false end
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1, ARGV[3])
  return #p == 1 and tonumber(p[1][4]) == tonumber(ARGV[4])
end
"""

# KEYS: stream, dead stream; ARGV: group, consumer, min idle ms (the lease), max_attempts, '1' to reclaim.
# First XAUTOCLAIM an entry idle past the lease (its delivery counter grows: the attempt); one delivered
# more than max_attempts times is dead-lettered instead (copied to the dead stream and acknowledged, in
# this script). Else a new entry (XREADGROUP >). Returns {id, entry, deliveries}, {'dead', id, deliveries}
# or nil (also when the stream is gone: a server restarted without persistence forgot it and its group).
CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
if ARGV[5] == '1' then
  local cursor = '0-0'
  repeat
    local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], cursor, 'COUNT', 1)
    cursor = r[1]
    local e = r[2][1]
    if e then
      local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
      local n = tonumber(p[1][4])
      if n > tonumber(ARGV[4]) then
        redis.call('XADD', KEYS[2], '*', 'source', e[1], 'job', e[2][2], 'deliveries', n)
        redis.call('XACK', KEYS[1], ARGV[1], e[1])
        return {'dead', e[1], n}
      end
      return {e[1], e[2][2], n}
    end
  until cursor == '0-0'
end
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if not r then return nil end
local e = r[1][2][1]
return {e[1], e[2][2], 1}"""

# KEYS: stream; ARGV: group, id, consumer, deliveries, '1' to extend. The lease extension: XCLAIM to itself
# (JUSTID: the delivery counter stays) resets the entry's idle time, only while it is still this claim's.
EXTEND = _OWNED + """
if not owned() then return 0 end
if ARGV[5] == '1' then redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID') end
return 1"""

# KEYS: stream, done hash; ARGV: group, id, consumer, deliveries, job, token. The conditional ack: XACK and
# the done record together, only while the entry is this claim's; a retried ack that landed says 1.
ACK = _OWNED + """
if owned() then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[5], ARGV[6])
  return 1
end
if redis.call('HGET', KEYS[2], ARGV[5]) == ARGV[6] then return 1 end
return 0"""

# The broken variant (ack=plain): what Redis offers, a bare XACK, whoever sends it. Its reply is Redis's
# verdict (1: it acknowledged a pending entry, whichever consumer held it); the done record follows it.
PLAIN_ACK = """
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[5], ARGV[6])
  return 1
end
if redis.call('HGET', KEYS[2], ARGV[5]) == ARGV[6] then return 1 end
return 0"""

# KEYS: stream, dead stream; ARGV: group, id, consumer, deliveries, entry, max_attempts, idle ms. A failed
# handler: on its max_attempts-th delivery the entry is dead-lettered (1); else it is released (0) by
# marking it idle past the lease, so the next XAUTOCLAIM takes it at once; -1 when it is no longer ours.
FAIL = _OWNED + """
if not owned() then return -1 end
if tonumber(ARGV[4]) >= tonumber(ARGV[6]) then
  redis.call('XADD', KEYS[2], '*', 'source', ARGV[2], 'job', ARGV[5], 'deliveries', ARGV[4])
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'IDLE', ARGV[7], 'JUSTID')
return 0"""


class StreamKeys:
    """The run's keys, under its prefix: the job stream, the done hash (job -> the token of the claim
    whose ack completed it) and the dead-letter stream."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.stream = prefix + "stream"
        self.done = prefix + "done"
        self.dead = prefix + "dead-letters"


def stream_keys() -> StreamKeys:
    """This run's keys, under the prefix the control handed the worker."""
    return StreamKeys(os.environ.get(events.ENV_NAMESPACE, ""))


def job_of(fields: list[Any]) -> str | None:
    """The suite's job id in a stream entry's flat fields (`job` holds chaos.worker.redis.entry's JSON), else
    None."""
    values = {fields[i]: fields[i + 1] for i in range(0, len(fields) - 1, 2)}  # zip(strict=) is 3.10's
    try:
        data = json.loads(values.get("job", ""))
    except ValueError:
        return None
    job = data.get("id") if isinstance(data, dict) else None
    return job if isinstance(job, str) else None


def claim_token(consumer: str, entry_id: str, deliveries: int) -> str:
    """One claim: the consumer it was delivered to, the entry, and the delivery counter at that delivery."""
    return f"{consumer}/{entry_id}/{deliveries}"


def token_consumer(token: str) -> str | None:
    """The consumer a claim token names (None for text that is no claim token)."""
    parts = token.split("/")
    return parts[0] if len(parts) == 3 else None


def worker_of(consumer: str) -> str:
    """The suite's worker name in a consumer name (`w1:1f2e3d4c`: worker and process)."""
    return consumer.rpartition(":")[0] or consumer


__all__ = ["ACK", "CLAIM", "EXTEND", "FAIL", "GROUP", "PLAIN_ACK", "StreamKeys", "claim_token", "job_of",
           "stream_keys", "token_consumer", "worker_of"]
