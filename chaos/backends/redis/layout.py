"""A Redis queue's record declared, not coded: target.toml's `[observer]` table says which key holds each
job's record (a hash, or a string holding a JSON object), which of its fields give the job's state, owner
and attempt, and which lists, sorted sets or sets of job ids mean queued, active, done or dead.
`parse_layout` checks the table (a malformed one is exit 2 naming what was expected) and `RecordModel`
replays it from the replication stream, as `chaos.backends.redis.replication.ListModel` replays
redis_reliable's: at the end of each transaction (or lone write) every job it touched is looked at again,
and the change of its phase, owner or attempt is the queue's record of a claim, completion, release or
failure. `LayoutObserver` (chaos.backends.redis.observer) follows the stream with it.

A job's phase is its state field's where the layout declares one and the value is mapped, else the
phase of the keys that list it (done, then dead, then active, then queued). Its owner is the owner field,
else the `{owner}` part of the active key that lists it; its token the attempt field as text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from chaos.backends.redis.replication import Change, ReplayedLayout
from chaos.errors import ConfigError

PHASES = ("queued", "active", "done", "dead")
FORMATS = ("hash", "json")
TABLE_KEYS = ("record", "format", "state", "owner", "attempt", "states", "lists")
# Writes that change no record and no member, even on a key the layout follows (a TTL, a notification).
UNCHANGING = {"PEXPIREAT", "EXPIREAT", "PEXPIRE", "EXPIRE", "PERSIST", "PUBLISH", "PING", "REPLCONF"}
KINDS_OF_PHASE = {"claim": "active", "complete": "done", "release": "queued", "fail": "dead"}

EXAMPLE = """[observer]
record = "job:{id}"      # the key of each job's record, after the run's key prefix; {id} is the suite's job id
format = "json"          # json (a string holding a JSON object) | hash
state = "status"         # the field giving its state (a dotted path into JSON)
owner = "worker"         # the field naming the worker that holds it
attempt = "attempt"      # the field giving its attempt or claim token
[observer.states]        # the state field's values, by phase: queued, active, done, dead
active = ["active"]
done = ["completed"]
[observer.lists]         # lists, sorted sets or sets of job ids, by phase; `{owner}` and `*` match a part
queued = ["wait"]
active = ["active"]"""


class LayoutError(ConfigError):
    """target.toml's [observer] table does not declare a Redis layout the observer can read."""


@dataclass(frozen=True)
class Pattern:
    """A key after the run's prefix, with `{id}`, `{owner}` and `*` matching a part of it."""

    text: str
    regex: re.Pattern[str]
    glob: str

    def match(self, key: str, prefix: str) -> dict[str, str] | None:
        if not key.startswith(prefix):
            return None
        found = self.regex.fullmatch(key[len(prefix):])
        return None if found is None else found.groupdict()


@dataclass(frozen=True)
class RedisLayout:
    """A declared layout: the record's key, format and fields; each phase's state values and keys."""

    record: Pattern | None
    format: str
    state: str | None
    owner: str | None
    attempt: str | None
    states: dict[str, str]  # a state field's value -> its phase
    lists: tuple[tuple[str, Pattern], ...]  # (phase, key pattern)

    @property
    def covers(self) -> frozenset[str]:
        """The record kinds it can show: a claim always (an active job shows), the rest where its phase does."""
        shown = set(self.states.values()) | {phase for phase, _ in self.lists}
        return frozenset(kind for kind, phase in KINDS_OF_PHASE.items() if phase in shown)

    def record_job(self, key: str, prefix: str) -> str | None:
        """The job whose record `key` is, None for any other key."""
        found = self.record.match(key, prefix) if self.record is not None else None
        return found["id"] if found is not None else None

    def globs(self, prefix: str) -> list[str]:
        """The KEYS patterns of every key it follows, under the run's prefix."""
        escaped = _glob_escape(prefix)
        return [escaped + pattern.glob for pattern in ([self.record] if self.record else [])
                + [pattern for _, pattern in self.lists]]


def _fail(where: str, problem: str) -> LayoutError:
    return LayoutError(f"{where}: [observer] {problem}. Expected a Redis layout the observer reads from the "
                       f"replication stream, such as:\n{EXAMPLE}\nor observer = \"module:Class\" naming an "
                       "observer class (docs/writing-a-target.md, section 10).")


def _glob_escape(text: str) -> str:
    return "".join("\\" + char if char in "\\*?[]^" else char for char in text)


def _pattern(text: Any, where: str, what: str, allowed: tuple[str, ...], required: str | None) -> Pattern:
    if not isinstance(text, str) or not text:
        raise _fail(where, f"{what} = {text!r} is not a key pattern (a non-empty string)")
    parts = re.split(r"(\{[^{}]*\}|\*)", text)
    regex, glob, seen = [], [], []
    for part in parts:
        if part == "*":
            regex.append(".*")
            glob.append("*")
        elif part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            if name not in allowed or name in seen:
                names = " or ".join("{" + a + "}" for a in allowed)
                raise _fail(where, f"{what} = {text!r} uses {part}, which is not {names} (each at most once)")
            seen.append(name)
            regex.append(f"(?P<{name}>.+?)" if name == "id" else f"(?P<{name}>[^:]+)")
            glob.append("*")
        elif "{" in part or "}" in part:
            raise _fail(where, f"{what} = {text!r} has an unmatched brace")
        else:
            regex.append(re.escape(part))
            glob.append(_glob_escape(part))
    if required is not None and required not in seen:
        raise _fail(where, f"{what} = {text!r} does not say where the job's id is: it needs {{{required}}}")
    return Pattern(text, re.compile("".join(regex)), "".join(glob))


def _field(raw: dict[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise _fail(where, f"{key} = {value!r} is not a field name (a non-empty string)")
    return value


def _by_phase(raw: Any, key: str, where: str) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        raise _fail(where, f"{key} = {raw!r} is not a table of phases ({', '.join(PHASES)})")
    found: dict[str, list[str]] = {}
    for phase, values in raw.items():
        if phase not in PHASES:
            raise _fail(where, f"{key} names the phase {phase!r}, which is none of {', '.join(PHASES)}")
        values = [values] if isinstance(values, str) else values
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise _fail(where, f"{key}.{phase} = {values!r} is not a list of non-empty strings")
        found[phase] = values
    return found


def parse_layout(raw: Any, where: str) -> RedisLayout:
    """target.toml's [observer] table as a layout; LayoutError (exit 2) saying what was expected."""
    if not isinstance(raw, dict):
        raise _fail(where, f"is {raw!r}, not a table")
    unknown = sorted(set(raw) - set(TABLE_KEYS))
    if unknown:
        raise _fail(where, f"sets {', '.join(unknown)}, which a layout does not take (it takes "
                    f"{', '.join(TABLE_KEYS)})")
    record = None if "record" not in raw else _pattern(raw["record"], where, "record", ("id",), "id")
    fmt = raw.get("format", "hash")
    if fmt not in FORMATS:
        raise _fail(where, f"format = {fmt!r} is neither of {', '.join(FORMATS)}")
    fields = {key: _field(raw, key, where) for key in ("state", "owner", "attempt")}
    if record is None and (any(fields.values()) or "format" in raw):
        raise _fail(where, "names the record's format or fields but no record key (record = \"job:{id}\")")
    states_raw = _by_phase(raw.get("states", {}), "states", where)
    if bool(states_raw) != (fields["state"] is not None):
        raise _fail(where, "needs state (the field) and [observer.states] (its values by phase) together")
    states: dict[str, str] = {}
    for phase, values in states_raw.items():
        for value in values:
            if value in states:
                raise _fail(where, f"gives the state {value!r} two phases, {states[value]} and {phase}")
            states[value] = phase
    lists = tuple((phase, _pattern(text, where, f"lists.{phase}", ("owner",), None))
                  for phase, texts in _by_phase(raw.get("lists", {}), "lists", where).items() for text in texts)
    if "active" not in states.values() and "active" not in (phase for phase, _ in lists):
        raise _fail(where, "does not say how a claimed job shows: give [observer.states] an active value, or "
                    "[observer.lists] an active key")
    return RedisLayout(record, fmt, fields["state"], fields["owner"], fields["attempt"], states, lists)


@dataclass(frozen=True)
class View:
    """A job as the layout shows it at one point of the stream."""

    phase: str | None
    owner: str | None
    attempt: str | None


@dataclass
class RecordState:
    """The layout's keys as one atomic read found them: each job's record (its fields), each list's
    members in order, each sorted set's or set's members with their scores (0 in a set)."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # job -> fields
    lists: dict[str, list[str]] = field(default_factory=dict)
    scored: dict[str, dict[str, float]] = field(default_factory=dict)


def transition(before: View | None, after: View) -> Change | None:
    """The queue's record of one job's change of view, if it is one."""
    was = before.phase if before is not None else None
    moved = before is None or (after.owner, after.attempt) != (before.owner, before.attempt)
    if after.phase == "active" and (was != "active" or moved):
        return Change("claim", "", after.owner, after.attempt)
    if after.phase in ("done", "dead") and (was != after.phase or (moved and after.owner is not None)):
        owner = after.owner if after.owner is not None else before.owner if before is not None else None
        attempt = after.attempt if after.attempt is not None else before.attempt if before is not None else None
        return Change("complete" if after.phase == "done" else "fail", "", owner, attempt)
    if after.phase == "queued" and was == "active" and before is not None:
        return Change("release", "", before.owner, before.attempt)
    return None


class RecordModel(ReplayedLayout):
    """A declared layout replayed from the stream (see the module's docstring)."""

    def __init__(self, layout: RedisLayout, prefix: str, db: int) -> None:
        super().__init__(db)
        self.layout = layout
        self.prefix = prefix
        self.state = RecordState()
        self.views: dict[str, View] = {}
        self._touched: set[str] = set()

    # -- what a job shows --------------------------------------------------------------------------------

    def view(self, job: str, state: RecordState | None = None) -> View:
        state = state or self.state
        layout = self.layout
        record = state.records.get(job)
        value = _text(_get(record, layout.state))
        phase = layout.states.get(value) if value is not None else None
        listed: dict[str, str | None] = {}
        for key, members in [*state.lists.items(), *state.scored.items()]:
            if job in members:
                found = self._collection(key)
                if found is not None:
                    listed.setdefault(found[0], found[1])
        if phase is None:
            phase = next((p for p in ("done", "dead", "active", "queued") if p in listed), None)
        owner = _text(_get(record, layout.owner)) if layout.owner else None
        if owner is None and phase == "active":
            owner = listed.get("active")
        attempt = _text(_get(record, layout.attempt)) if layout.attempt else None
        return View(phase, owner, attempt)

    def jobs(self, state: RecordState) -> set[str]:
        found = set(state.records)
        for members in [*state.lists.values(), *state.scored.values()]:
            found.update(members)
        return found

    # -- the state ---------------------------------------------------------------------------------------

    def load(self, state: RecordState, infer: bool) -> list[Change]:
        """Take `state` as the model's here; with `infer`, the changes from the model's views to its."""
        views = {job: self.view(job, state) for job in self.jobs(state)}
        changes: list[Change] = []
        if infer:
            for job in sorted(views):
                changes += self._change(job, self.views.get(job), views[job])
        self.state, self.views, self.stale, self._touched = state, views, False, set()
        return changes

    def apply(self, argv: list[bytes], replay: bool = True) -> list[Change]:
        super().apply(argv, replay)
        if not replay or self._in_multi:
            return []
        changes: list[Change] = []
        for job in sorted(self._touched):
            after = self.view(job)
            changes += self._change(job, self.views.get(job), after)
            self.views[job] = after
        self._touched = set()
        return changes

    @staticmethod
    def _change(job: str, before: View | None, after: View) -> list[Change]:
        change = transition(before, after)
        return [] if change is None else [Change(change.kind, job, change.actor, change.token)]

    # -- the keys ----------------------------------------------------------------------------------------

    def record_job(self, key: str) -> str | None:
        return self.layout.record_job(key, self.prefix)

    def _collection(self, key: str) -> tuple[str, str | None] | None:
        """The phase of a followed list or set, and the owner its key names."""
        for phase, pattern in self.layout.lists:
            found = pattern.match(key, self.prefix)
            if found is not None:
                return phase, found.get("owner")
        return None

    # -- the stream --------------------------------------------------------------------------------------

    def _flush(self) -> None:
        self._touched |= self.jobs(self.state)
        self.state = RecordState()

    def _end_transaction(self) -> None:
        """Views are settled in `apply`, once the transaction is over."""

    def _write(self, name: str, args: list[str]) -> list[Change]:
        if not args:
            return []
        if name in ("DEL", "UNLINK"):
            for key in args:
                self._delete(key)
            return []
        if name == "MSET":
            for key, value in zip(args[::2], args[1::2], strict=False):
                self._record_write("SET", [key, value])
            return []
        key = args[0]
        if self.record_job(key) is not None:
            self._record_write(name, args)
        elif name in ("LMOVE", "RPOPLPUSH", "SMOVE") and len(args) >= 2:
            self._move(name, args)
        elif self._collection(key) is not None:
            self._collection_write(name, key, args[1:])
        return []

    def _delete(self, key: str) -> None:
        job = self.record_job(key)
        if job is not None and self.state.records.pop(job, None) is not None:
            self._touched.add(job)
        self._touched.update(self.state.lists.pop(key, []))
        self._touched.update(self.state.scored.pop(key, {}))

    def _record_write(self, name: str, args: list[str]) -> None:
        job = self.record_job(args[0])
        records = self.state.records
        if job is None or name in UNCHANGING:
            return
        self._touched.add(job)
        if self.layout.format == "json":
            value = {"SET": 1, "SETNX": 1, "GETSET": 1, "SETEX": 2, "PSETEX": 2}.get(name)
            if value is None or len(args) <= value:
                self.stale = True
                return
            if name == "SETNX" and job in records:
                return
            records[job] = _object(args[value])
            return
        fields = records.setdefault(job, {})
        if name in ("HSET", "HMSET"):
            fields.update(zip(args[1::2], args[2::2], strict=False))
        elif name == "HSETNX" and len(args) == 3:
            fields.setdefault(args[1], args[2])
        elif name == "HDEL":
            for key in args[1:]:
                fields.pop(key, None)
        elif name in ("HINCRBY", "HINCRBYFLOAT") and len(args) == 3:
            number = float(fields.get(args[1], 0)) + float(args[2])
            fields[args[1]] = str(int(number)) if name == "HINCRBY" else repr(number)
        else:
            self.stale = True

    def _move(self, name: str, args: list[str]) -> None:
        """LMOVE, RPOPLPUSH, SMOVE: an element leaves one key for another, either followed or not."""
        source, target = args[0], args[1]
        followed_source, followed_target = self._collection(source), self._collection(target)
        if followed_source is None and followed_target is None:
            return
        if name == "SMOVE":
            if len(args) < 3:
                self.stale = True
                return
            member = args[2]
            if followed_source is not None:
                self.state.scored.get(source, {}).pop(member, None)
            if followed_target is not None:
                self.state.scored.setdefault(target, {})[member] = 0.0
            self._touched.add(member)
            return
        ends = (args[2].upper(), args[3].upper()) if name == "LMOVE" and len(args) >= 4 else ("RIGHT", "LEFT")
        if followed_source is None:
            self.stale = True  # an element the model never saw arrived in a followed list
            return
        members = self.state.lists.get(source)
        if not members:
            self.stale = True
            return
        member = members.pop(0 if ends[0] == "LEFT" else -1)
        if followed_target is not None:
            target_list = self.state.lists.setdefault(target, [])
            target_list.insert(0, member) if ends[1] == "LEFT" else target_list.append(member)
        self._touched.add(member)

    def _collection_write(self, name: str, key: str, args: list[str]) -> None:
        lists, scored = self.state.lists, self.state.scored
        if name in ("RPUSH", "LPUSH", "RPUSHX", "LPUSHX"):
            members = lists.setdefault(key, [])
            for member in args:
                members.insert(0, member) if name[0] == "L" else members.append(member)
            self._touched.update(args)
        elif name in ("LPOP", "RPOP"):
            members = lists.get(key, [])
            for _ in range(int(args[0]) if args else 1):
                if not members:
                    self.stale = True
                    break
                self._touched.add(members.pop(0 if name == "LPOP" else -1))
        elif name == "LREM" and len(args) == 2:
            members = lists.get(key, [])
            count, member = int(args[0]), args[1]
            indexes = [i for i, value in enumerate(members) if value == member]
            chosen = indexes if count == 0 else indexes[:count] if count > 0 else indexes[count:]
            if not chosen:
                self.stale = True
            for index in reversed(chosen):
                del members[index]
            self._touched.add(member)
        elif name == "LTRIM" and len(args) == 2:
            members = lists.get(key, [])
            start, stop = (int(a) if int(a) >= 0 else len(members) + int(a) for a in args)
            kept = members[max(start, 0):stop + 1]
            self._touched.update(set(members) - set(kept))
            lists[key] = kept
        elif name == "ZADD":
            self._zadd(scored.setdefault(key, {}), args)
        elif name in ("ZREM", "SREM"):
            for member in args:
                if scored.get(key, {}).pop(member, None) is not None:
                    self._touched.add(member)
        elif name == "SADD":
            for member in args:
                scored.setdefault(key, {})[member] = 0.0
            self._touched.update(args)
        elif name in ("ZPOPMIN", "ZPOPMAX"):
            ranks = scored.get(key, {})
            ranked = sorted(ranks, key=lambda m: (ranks[m], m), reverse=name == "ZPOPMAX")
            for member in ranked[:int(args[0]) if args else 1]:
                del ranks[member]
                self._touched.add(member)
        elif name == "ZINCRBY" and len(args) == 2:
            ranks = scored.setdefault(key, {})
            ranks[args[1]] = ranks.get(args[1], 0.0) + float(args[0])
            self._touched.add(args[1])
        elif name not in UNCHANGING:
            self.stale = True  # a write the model cannot replay (LSET, LINSERT, RENAME...): read the state again

    def _zadd(self, members: dict[str, float], args: list[str]) -> None:
        flags = set()
        while args and args[0].upper() in ("NX", "XX", "GT", "LT", "CH", "INCR"):
            flags.add(args[0].upper())
            args = args[1:]
        for score_text, member in zip(args[::2], args[1::2], strict=False):
            score = float(score_text)
            if ("NX" in flags and member in members) or ("XX" in flags and member not in members):
                continue
            members[member] = members.get(member, 0.0) + score if "INCR" in flags else score
            self._touched.add(member)


def _object(text: str) -> dict[str, Any]:
    """A JSON record's fields; none for a value that is no JSON object."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _get(record: dict[str, Any] | None, path: str | None) -> Any:
    """A field of a record; a dotted path goes into a JSON record's objects."""
    if record is None or path is None:
        return None
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _text(value: Any) -> str | None:
    """A field's value as the record's text: a JSON number 2 is "2", a string as it is."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# The state script (chaos.backends.redis.observer.LayoutObserver): ARGV[1] the followed keys' patterns, one
# a line; the reply each key once, with its type and contents.
READ_LAYOUT = """
local state = {}
if ARGV[4] == '1' then
  local seen = {}
  for pattern in string.gmatch(ARGV[1], '[^\\n]+') do
    for _, key in ipairs(redis.call('KEYS', pattern)) do
      if not seen[key] then
        seen[key] = true
        local kind = redis.call('TYPE', key)['ok']
        local value = {}
        if kind == 'string' then value = {redis.call('GET', key)}
        elseif kind == 'hash' then value = redis.call('HGETALL', key)
        elseif kind == 'list' then value = redis.call('LRANGE', key, 0, -1)
        elseif kind == 'zset' then value = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
        elseif kind == 'set' then value = redis.call('SMEMBERS', key) end
        state[#state + 1] = key
        state[#state + 1] = kind
        state[#state + 1] = value
      end
    end
  end
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return state"""


def parse_record_state(reply: Any, layout: RedisLayout, prefix: str) -> RecordState:
    """The state script's reply: (key, type, contents) for each followed key."""
    state = RecordState()
    for key, kind, value in zip(reply[::3], reply[1::3], reply[2::3], strict=True):
        key, kind, value = str(key), str(kind), [str(v) for v in value]
        job = layout.record_job(key, prefix)
        if job is not None:
            if kind == "string" and layout.format == "json":
                state.records[job] = _object(value[0])
            elif kind == "hash" and layout.format == "hash":
                state.records[job] = dict(zip(value[::2], value[1::2], strict=True))
        elif kind == "list":
            state.lists[key] = value
        elif kind == "zset":
            state.scored[key] = {m: float(s) for m, s in zip(value[::2], value[1::2], strict=True)}
        elif kind == "set":
            state.scored[key] = dict.fromkeys(value, 0.0)
    return state



# What `chaos target new --backend redis --library` appends to target.toml: the layout to fill in, commented
# out so that the new target runs green (judged from the probes) until the library's keys are named.
TEMPLATE = """
# The queue's own record, read from Redis's replication stream with no observer code of yours: uncomment
# the table below and name your library's keys (after the run's key prefix, which the control hands each
# worker as CHAOS_NAMESPACE) and the fields of a job's record. docs/writing-a-target.md, section 10, has a
# worked example; `chaos target check` then expects the record's claim and completion of its job.
# [observer]
# record = "job:{id}"      # the key of each job's record; {id} is the job's id there, the suite's job id
# format = "json"          # json (a string holding a JSON object) | hash
# state = "status"         # the field giving its state (a dotted path into JSON)
# owner = "worker"         # the field naming the worker that holds it (the suite's name, or a probe's library_id)
# attempt = "attempt"      # the field giving its attempt or claim token: the token your worker's probes send
# [observer.states]        # the state field's values, by phase
# queued = ["waiting"]
# active = ["active"]
# done = ["completed"]
# dead = ["failed"]
# [observer.lists]         # lists, sorted sets or sets of job ids, by phase; {owner} and * match a part of a key
# queued = ["wait"]
# active = ["active"]
# dead = ["failed"]
"""
