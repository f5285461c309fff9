"""The toxic types: their attributes as the API shows and checks them, and what each does to the chunks
of one direction of a connection (`Stream`, implemented by `chaos.toxiproxy.proxy.Link`).

A toxic's `run` gets one chunk (its arrival time and bytes) and hands what passes on to `emit`, waiting
through `stream.wait`, which ends early when the chain changes (then the toxic flushes: no data is
dropped by adding, updating or removing a toxic, as in Toxiproxy).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

# type -> (Go struct name, {attribute: Go type}); every attribute is a JSON integer, 0 by default
TYPES: dict[str, tuple[str, dict[str, str]]] = {
    "latency": ("LatencyToxic", {"latency": "int64", "jitter": "int64"}),
    "bandwidth": ("BandwidthToxic", {"rate": "int64"}),
    "slow_close": ("SlowCloseToxic", {"delay": "int64"}),
    "timeout": ("TimeoutToxic", {"timeout": "int64"}),
    "reset_peer": ("ResetToxic", {"timeout": "int64"}),
    "slicer": ("SlicerToxic", {"average_size": "int", "size_variation": "int", "delay": "int"}),
    "limit_data": ("LimitDataToxic", {"bytes": "int64"}),
    "noop": ("NoopToxic", {}),
}
STREAMS = ("upstream", "downstream")

Emit = Callable[[float, bytes], Awaitable[None]]


class BadAttributes(ValueError):
    """An attribute the API refuses (400), with Go's JSON decoder's wording."""


class Stream(Protocol):
    """What a toxic may do to its direction of the connection."""

    async def wait(self, seconds: float | None) -> bool:
        """Sleep (None: until interrupted); False when the toxic chain changed meanwhile (flush now)."""

    def close(self) -> None:
        """Close the whole connection (an RST when a reset_peer was there at its start, else a FIN)."""

    def dropped(self, size: int) -> None:
        """Count bytes a toxic swallowed (a black hole holds them)."""


class JsonObject(dict[str, Any]):
    """A JSON object as Go's decoder walks it: `pairs` keeps every key in document order, duplicates too."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


class GoNumber(float):
    """A JSON number Go's decoder would not put in an int64 (a fraction, an exponent, or past int64's
    range), with its text as written, which Go's error quotes."""

    text: str

    def __new__(cls, text: str) -> GoNumber:
        number = super().__new__(cls, text)  # past float's range: inf, never an error
        number.text = text
        return number


INT64 = range(-(1 << 63), 1 << 63)


def json_integer(text: str) -> int | GoNumber:
    """An integer literal as Go reads it: an int64, else a GoNumber (no 4,300-digit limit to trip on)."""
    if len(text.lstrip("-")) <= 19 and int(text) in INT64:
        return int(text)
    return GoNumber(text)


def go_fields(raw: Any, names: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(field, value) for each key of a JSON object that names one of `names`, matched as Go's decoder
    matches keys to struct fields: exactly or case-insensitively (Unicode simple folding: "Name", "LISTEN",
    and the Kelvin sign for k), in document order with duplicates, so the last one wins."""
    wanted = list(names)
    for key, value in raw.pairs if isinstance(raw, JsonObject) else raw.items():
        name = key if key in wanted else next((n for n in wanted if _folds_to(key, n)), None)
        if name is not None:
            yield name, value


def _folds_to(key: str, name: str) -> bool:
    return len(key) == len(name) and all(k == n or k.casefold() == n for k, n in zip(key, name, strict=True))


def decode_attributes(kind: str, raw: Any, current: dict[str, int] | None = None) -> dict[str, int]:
    """The toxic's attributes from a request body, over `current` (an update merges) or the zero defaults."""
    struct, schema = TYPES[kind]
    attributes = dict(current) if current is not None else {name: 0 for name in schema}
    if raw is None:
        return attributes
    if not isinstance(raw, dict):
        raise BadAttributes(f"json: cannot unmarshal {json_kind(raw)} into Go struct field ToxicWrapper.attributes "
                            "of type toxics.NoopToxic")
    for name, value in go_fields(raw, schema):
        if value is None:
            continue  # unknown attributes are ignored; null leaves the value as it was
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadAttributes(f"json: cannot unmarshal {json_kind(value)} into Go struct field "
                                f"{struct}.attributes.{name} of type {schema[name]}")
        if isinstance(value, float):  # a fraction, an exponent, or past int64 (an int64 attribute takes none)
            text = value.text if isinstance(value, GoNumber) else repr(value)
            raise BadAttributes(f"json: cannot unmarshal number {text} into Go struct field "
                                f"{struct}.attributes.{name} of type {schema[name]}")
        attributes[name] = value
    return attributes


def json_kind(value: Any) -> str:
    """The JSON type of a value, as Go's decoder names it in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@dataclass
class Toxic:
    """One toxic of a proxy, as the API shows it (key order as Toxiproxy writes it)."""

    name: str
    type: str
    stream: str  # as the client wrote it ("UpStream" stays so); `direction` is the parsed one
    toxicity: float
    attributes: dict[str, int] = field(default_factory=dict)

    @property
    def direction(self) -> str:
        return self.stream.lower()

    def to_json(self) -> dict[str, Any]:
        return {"attributes": self.attributes, "name": self.name, "type": self.type, "stream": self.stream,
                "toxicity": self.toxicity}

    def behaviour(self, rng: random.Random) -> Behaviour:
        """What this toxic does on one link; the link's state (limit_data's count) lives in the behaviour."""
        return BEHAVIOURS[self.type](self.attributes, rng)


class Behaviour:
    """A toxic at work on one link. The default passes every chunk unchanged (noop)."""

    resets = False  # a reset_peer present when the connection starts makes its close an RST

    def __init__(self, attributes: dict[str, int], rng: random.Random) -> None:
        self.attributes = attributes
        self.rng = rng

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        await emit(arrival, data)

    async def at_eof(self, stream: Stream) -> None:
        """The source ended: what happens before the connection closes."""

    def closes_on_removal(self) -> bool:
        return False

    def holds_s(self) -> float:
        """How long this toxic may hold a chunk: the link queues that long's worth of bytes."""
        return 0.0


class Latency(Behaviour):
    def holds_s(self) -> float:
        return max(0, self.attributes["latency"] + max(self.attributes["jitter"], 0)) / 1000.0

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        jitter = self.attributes["jitter"]
        delay_ms = self.attributes["latency"] + (self.rng.randrange(-jitter, jitter) if jitter > 0 else 0)
        due = arrival + max(delay_ms, 0) / 1000.0
        # The event loop's timers may fire up to a millisecond early (libuv keeps a cached, millisecond
        # clock): wait out what is left, so no byte is delayed less than the latency, as Go's sleep.
        while (left := due - time.monotonic()) > 0:
            if not await stream.wait(left):
                break  # the toxic chain changed: flush now
        await emit(max(due, arrival), data)


class Bandwidth(Behaviour):
    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        rate = self.attributes["rate"]  # KB/s, 1 KB = 1000 bytes
        if rate <= 0:  # Toxiproxy lets nothing through at rate 0; the connection stays open
            if not await stream.wait(None):
                await emit(arrival, data)  # the chain changed: flush
            return
        piece_size = rate * 100  # at most rate*100 bytes per 100 ms, as Toxiproxy sends them
        start = time.monotonic()
        sent = 0
        flushing = False
        for offset in range(0, len(data), piece_size):
            piece = data[offset:offset + piece_size]
            sent += len(piece)
            due = start + sent / (rate * 1000.0)
            if not flushing and due > time.monotonic():
                flushing = not await stream.wait(due - time.monotonic())
            await emit(arrival, piece)


class SlowClose(Behaviour):
    async def at_eof(self, stream: Stream) -> None:
        await stream.wait(self.attributes["delay"] / 1000.0)


class Timeout(Behaviour):
    """Swallows every chunk; with timeout > 0 closes the connection after that long with no chunk arriving
    (each chunk restarts the timer: `Link` runs the idle timer); removing it closes the connection."""

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        stream.dropped(len(data))

    def idle_timeout_s(self) -> float | None:
        timeout = self.attributes["timeout"]
        return timeout / 1000.0 if timeout > 0 else None

    def closes_on_removal(self) -> bool:
        return True


class ResetPeer(Behaviour):
    """Drops the first chunk (or waits for EOF), then after `timeout` ms closes the connection: with an RST
    when a reset_peer was in a chain when the connection started (the connection lingers 0), else a FIN."""

    resets = True

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        stream.dropped(len(data))
        await self._reset(stream)

    async def at_eof(self, stream: Stream) -> None:
        await self._reset(stream)

    async def _reset(self, stream: Stream) -> None:
        await stream.wait(self.attributes["timeout"] / 1000.0)
        stream.close()  # an RST only when the toxic was there when the connection started (its linger 0)


class Slicer(Behaviour):
    """Splits each chunk into pieces around `average_size` bytes, sleeping `delay` µs after each. An
    average_size of 0 (which crashes Toxiproxy) passes chunks whole; a size_variation of average_size or
    more is taken as average_size - 1 (Toxiproxy's README asks for less)."""

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        average = self.attributes["average_size"]
        if average <= 0:
            await emit(arrival, data)
            return
        variation = max(0, min(self.attributes["size_variation"], average - 1))
        delay = self.attributes["delay"] / 1_000_000.0
        flushing = False
        for piece in self._pieces(data, average, variation):
            await emit(arrival, piece)
            if delay > 0 and not flushing:
                flushing = not await stream.wait(delay)

    def _pieces(self, data: bytes, average: int, variation: int) -> list[bytes]:
        pieces = []
        todo = [data]
        while todo:
            chunk = todo.pop()
            if len(chunk) - average <= variation:
                pieces.append(chunk)
                continue
            mid = len(chunk) // 2 + (self.rng.randrange(-variation, variation) if variation > 0 else 0)
            mid = min(max(mid, 1), len(chunk) - 1)
            todo += [chunk[mid:], chunk[:mid]]
        return pieces


class LimitData(Behaviour):
    """Passes at most `bytes` bytes on this link (counted across updates), then closes the connection."""

    def __init__(self, attributes: dict[str, int], rng: random.Random) -> None:
        super().__init__(attributes, rng)
        self.transmitted = 0

    async def run(self, stream: Stream, arrival: float, data: bytes, emit: Emit) -> None:
        left = self.attributes["bytes"] - self.transmitted
        if left > 0:
            piece = data[:left]
            self.transmitted += len(piece)
            await emit(arrival, piece)
        if self.transmitted >= self.attributes["bytes"]:
            stream.close()


BEHAVIOURS: dict[str, type[Behaviour]] = {
    "latency": Latency, "bandwidth": Bandwidth, "slow_close": SlowClose, "timeout": Timeout,
    "reset_peer": ResetPeer, "slicer": Slicer, "limit_data": LimitData, "noop": Behaviour,
}

