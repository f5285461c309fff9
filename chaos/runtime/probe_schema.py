"""What a probe must look like, checked when it arrives: a probe the checker could not read is refused
at once (400, saying what was wrong), so the worker sees its mistake immediately, not the checker at the
end of the run."""

from __future__ import annotations

import json
import math
from typing import Any

from chaos import events

MAX_DEPTH = 8  # a probe is a flat record; deeper structures are refused, never parsed into the ledger

_TOKEN = "a string, an integer or null"
# field -> (accepts, what it must be); pid, attempt and fence are integers, never booleans.
_FIELDS: dict[str, tuple[Any, str]] = {
    "job": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "worker": (lambda v: isinstance(v, str), "a string"),
    "pid": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "clock": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number (seconds)"),
    "sent": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
             "a number (the worker's time.monotonic() when it sent the probe)"),
    "token": (lambda v: v is None or (isinstance(v, (str, int)) and not isinstance(v, bool)), _TOKEN),
    "key": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "fence": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "attempt": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "ok": (lambda v: v is None or isinstance(v, bool), "true or false (an ack may say null: outcome unknown)"),
    "reason": (lambda v: isinstance(v, str), "a string"),
    # The library's own name for this worker (a Celery hostname, a procrastinate worker id), so the queue's
    # record, which names that, is read as the suite's worker.
    "library_id": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    # On an ack: what its ok is the word of (the worker's report of the queue's answer when absent).
    "source": (lambda v: v in events.SOURCES, "one of " + ", ".join(f'"{s}"' for s in events.SOURCES)),
}
_REQUIRED = {events.HEARTBEAT: ("ok",), events.ACK: ("ok",)}


class BadProbe(ValueError):
    """The request is not a probe the suite can judge; the message says what was wrong, `kind` which
    rule it broke (one per point and field, whatever the value)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse(point: str, body: bytes) -> dict[str, Any]:
    """The probe's fields, or BadProbe naming the first problem."""
    if point not in events.POINTS and point not in events.WORKER_POINTS:
        raise BadProbe(f"unknown probe point {point[:40]!r}: expected POST {events.PROBE_PATH}<"
                       f"{'|'.join(events.POINTS + events.WORKER_POINTS)}>", "point")
    try:
        probe = json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadProbe("the JSON body is nested too deeply; a probe is a flat JSON object", "depth") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadProbe(f"the body is not JSON ({exc})", "json") from None
    if not isinstance(probe, dict):
        raise BadProbe("the body must be a JSON object of the probe's fields", "json")
    if _deeper_than(probe, MAX_DEPTH):
        raise BadProbe(f"the JSON body is nested more than {MAX_DEPTH} levels; a probe is a flat JSON object",
                       "depth")
    for name in (*(() if point in events.WORKER_POINTS else ("job",)), *_REQUIRED.get(point, ())):
        if name not in probe:
            raise BadProbe(f"a {point} probe needs the field {name!r} ({_FIELDS[name][1]})", f"{point}.{name}")
    for name, value in probe.items():
        check = _FIELDS.get(name)
        if check is not None and not check[0](value):
            raise BadProbe(f"field {name!r} of a {point} probe must be {check[1]}, not {json.dumps(value)[:80]}",
                           f"{point}.{name}")
    if point == events.HEARTBEAT and probe["ok"] is None:
        raise BadProbe("field 'ok' of a heartbeat probe must be true or false: the worker knows whether its "
                       "extension succeeded", f"{point}.ok")
    return probe


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` levels (iteratively: the JSON parser accepts more levels
    than Python's recursion would)."""
    level = [value]
    for _ in range(limit + 1):
        containers = [item for item in level if isinstance(item, (dict, list))]
        if not containers:
            return False
        level = [child for item in containers for child in (item.values() if isinstance(item, dict) else item)]
    return True
