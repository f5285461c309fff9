"""The Toxiproxy HTTP API over the embedded server's proxies: routes, status codes, error bodies and JSON
shapes as ../shared/reference/toxiproxy-api.md gives them for Toxiproxy v2.12.0.

`Api.answer` maps one request to one response; `chaos.toxiproxy.server` does the HTTP around it.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import secrets
import struct
import sys
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from chaos.toxiproxy.proxy import ApiFailure, Journal, Proxy, resolve, split_address
from chaos.toxiproxy.toxics import (
    STREAMS,
    TYPES,
    BadAttributes,
    GoNumber,
    JsonObject,
    Toxic,
    decode_attributes,
    go_fields,
    json_integer,
    json_kind,
)

VERSION = "v2.12.0"  # the API this server speaks
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class ApiError(Exception):
    """An error Toxiproxy answers as `{"error": ..., "status": ...}` in a text/plain body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def bad_body(detail: str) -> ApiError:
    return ApiError(400, f"bad request body: {detail}")


MAX_DEPTH = 10_000  # Go's decoder refuses JSON nested deeper
PROXY_NOT_FOUND = (404, "proxy not found")
TOXIC_NOT_FOUND = (404, "toxic not found")

_ROUTES: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(r"/proxies"), {"GET": "proxy_index", "POST": "proxy_create"}),
    (re.compile(r"/populate"), {"POST": "populate"}),
    (re.compile(r"/reset"), {"POST": "reset"}),
    (re.compile(r"/version"), {"GET": "version"}),
    (re.compile(r"/proxies/(?P<proxy>[^/]+)"), {"GET": "proxy_show", "POST": "proxy_update",
                                                "PATCH": "proxy_update", "DELETE": "proxy_delete"}),
    (re.compile(r"/proxies/(?P<proxy>[^/]+)/toxics"), {"GET": "toxic_index", "POST": "toxic_create"}),
    (re.compile(r"/proxies/(?P<proxy>[^/]+)/toxics/(?P<toxic>[^/]+)"),
     {"GET": "toxic_show", "POST": "toxic_update", "PATCH": "toxic_update", "DELETE": "toxic_delete"}),
]


class Api:
    """The proxies of one server and the API over them. Runs on the server's event loop only."""

    def __init__(self, journal: Journal | None = None, seed: int | None = None) -> None:
        self.proxies: dict[str, Proxy] = {}
        self.rng = random.Random(seed)
        self.journal = journal
        # Handlers await listens and closes; one at a time, so two creates of one name cannot both pass
        # the 409 check, and no request sees a proxy half made.
        self._lock = asyncio.Lock()

    async def answer(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Response:
        path = target.split("?", 1)[0]
        for pattern, methods in _ROUTES:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            handler = methods.get(method)
            if handler is None:
                return Response(405)
            if headers.get("user-agent", "").startswith("Mozilla/"):
                return Response(403, b"User agent not allowed\n", {"Content-Type": TEXT})
            try:
                names = {key: urllib.parse.unquote(value) for key, value in match.groupdict().items()}
                async with self._lock:
                    response: Response = await getattr(self, handler)(body, **names)
            except ApiError as exc:
                response = error_response(exc.status, exc.message)
            except ApiFailure as exc:
                response = error_response(500, str(exc))
            response.headers["X-Toxiproxy-Request-Id"] = secrets.token_hex(10)
            return response
        return Response(404, b"404 page not found\n", {"Content-Type": TEXT})

    async def close(self) -> None:
        for proxy in list(self.proxies.values()):
            await proxy.stop()
        self.proxies.clear()

    # -- proxies -----------------------------------------------------------------------------------

    async def proxy_index(self, body: bytes) -> Response:
        return ok({name: self.proxies[name].to_json() for name in sorted(self.proxies)})

    async def proxy_create(self, body: bytes) -> Response:
        spec = _object(body, "toxiproxy.Proxy", {"name": str, "listen": str, "upstream": str, "enabled": bool})
        name, upstream = spec.get("name") or "", spec.get("upstream") or ""
        if not name:
            raise ApiError(400, "missing required field: name")
        if not upstream:
            raise ApiError(400, "missing required field: upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        proxy = await self._started(name, spec.get("listen") or "", upstream, spec.get("enabled", True))
        return ok(proxy.to_json(), 201)

    async def _started(self, name: str, listen: str, upstream: str, enabled: bool) -> Proxy:
        proxy = Proxy(name, listen, upstream, self.rng, self.journal)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return proxy

    async def populate(self, body: bytes) -> Response:
        try:
            items = _decode(body)
            if items is None:  # JSON null: an empty list to Go
                items = []
            if not isinstance(items, list):
                raise bad_body(f"json: cannot unmarshal {json_kind(items)} into Go value of type []struct {{ "
                               'toxiproxy.Proxy; Enabled *bool "json:\\"enabled\\"" }')
            specs = [_fields(item, "toxiproxy.Proxy", {"name": str, "listen": str, "upstream": str,
                                                         "enabled": bool}) for item in items]
            for number, spec in enumerate(specs, 1):
                for key in ("name", "upstream"):
                    if not spec.get(key):
                        raise ApiError(400, f"missing required field: {key} at proxy {number}")
        except ApiError as exc:
            return ok({"error": exc.message, "status": exc.status, "proxies": None}, exc.status)
        done: list[Proxy] = []
        for spec in specs:
            try:
                done.append(await self._add_or_replace(spec))
            except ApiFailure as exc:
                return ok({"error": str(exc), "status": 500, "proxies": [p.to_json() for p in done]}, 500)
        return ok({"proxies": [p.to_json() for p in done] or None}, 201)

    async def _add_or_replace(self, spec: dict[str, Any]) -> Proxy:
        listen = spec.get("listen") or ""
        existing = self.proxies.get(spec["name"])
        if existing is not None:
            if not _differs(existing, listen, spec["upstream"]):
                return existing
            await existing.stop()
            del self.proxies[spec["name"]]
        return await self._started(spec["name"], listen, spec["upstream"], spec.get("enabled", True))

    async def proxy_show(self, body: bytes, proxy: str) -> Response:
        return ok(self._proxy(proxy).to_json())

    async def proxy_update(self, body: bytes, proxy: str) -> Response:
        found = self._proxy(proxy)
        spec = _object(body, "toxiproxy.Proxy", {"name": str, "listen": str, "upstream": str, "enabled": bool})
        listen = spec.get("listen", found.listen)
        upstream = spec.get("upstream", found.upstream)
        enabled = spec.get("enabled", found.enabled)
        if listen != found.listen:
            try:
                await resolve(listen)
            except ValueError as exc:  # refused before anything changes, as Toxiproxy resolves first
                raise ApiFailure(str(exc)) from exc
        if _differs(found, listen, upstream):
            await found.stop()
            found.listen, found.upstream = listen, upstream
        if enabled and not found.enabled:
            await found.start()
        elif not enabled and found.enabled:
            await found.stop()
        return ok(found.to_json())

    async def proxy_delete(self, body: bytes, proxy: str) -> Response:
        found = self._proxy(proxy)
        await found.stop()
        del self.proxies[proxy]
        return Response(204)

    async def reset(self, body: bytes) -> Response:
        for proxy in list(self.proxies.values()):
            await proxy.start()
            for direction in STREAMS:
                for toxic in list(proxy.toxics[direction]):
                    proxy.remove(toxic)
        return Response(204)

    async def version(self, body: bytes) -> Response:
        return Response(200, json.dumps({"version": VERSION}).encode() + b"\n",
                        {"Content-Type": "application/json;charset=utf-8"})

    # -- toxics ------------------------------------------------------------------------------------

    async def toxic_index(self, body: bytes, proxy: str) -> Response:
        found = self._proxy(proxy)
        return ok([t.to_json() for d in STREAMS for t in found.toxics[d]])

    async def toxic_create(self, body: bytes, proxy: str) -> Response:
        found = self._proxy(proxy)
        raw = _decode(body)
        spec = _fields(raw, "toxics.ToxicWrapper", {"name": str, "type": str, "stream": str, "toxicity": float})
        given = _attributes(raw)
        for value in given:
            if not isinstance(value, (dict, type(None))):
                raise bad_body(f"json: cannot unmarshal {json_kind(value)} into Go struct field "
                               "ToxicWrapper.attributes of type toxics.NoopToxic")
        stream = spec.get("stream", "downstream")
        if stream.lower() not in STREAMS:
            raise ApiError(400, "stream was invalid, can be either upstream or downstream")
        kind = spec.get("type") or ""
        if kind not in TYPES:
            raise ApiError(400, "invalid toxic type")
        name = spec.get("name") or f"{kind}_{stream}"
        if found.find(name) is not None:
            raise ApiError(409, "toxic already exists")
        attributes = _merged(kind, given, decode_attributes(kind, None))
        toxic = Toxic(name, kind, stream, float32(spec.get("toxicity", 1.0)), attributes)
        found.add(toxic)
        return ok(toxic.to_json())

    async def toxic_show(self, body: bytes, proxy: str, toxic: str) -> Response:
        return ok(self._toxic(self._proxy(proxy), toxic).to_json())

    async def toxic_update(self, body: bytes, proxy: str, toxic: str) -> Response:
        found = self._proxy(proxy)
        existing = self._toxic(found, toxic)
        raw = _decode(body)
        spec = _fields(raw, "toxics.ToxicWrapper", {"toxicity": float})  # name, type and stream are ignored
        existing.attributes = _merged(existing.type, _attributes(raw), existing.attributes)
        if "toxicity" in spec:
            existing.toxicity = float32(spec["toxicity"])
        found.changed(existing)
        return ok(existing.to_json())

    async def toxic_delete(self, body: bytes, proxy: str, toxic: str) -> Response:
        found = self._proxy(proxy)
        found.remove(self._toxic(found, toxic))
        return Response(204)

    def _proxy(self, name: str) -> Proxy:
        found = self.proxies.get(name)
        if found is None:
            raise ApiError(*PROXY_NOT_FOUND)
        return found

    def _toxic(self, proxy: Proxy, name: str) -> Toxic:
        found = proxy.find(name)
        if found is None:
            raise ApiError(*TOXIC_NOT_FOUND)
        return found


def float32(value: float) -> float:
    """`value` as Toxiproxy keeps a toxicity (a Go float32), written back with the fewest digits that read
    as the same float32: 1/3 is 0.33333334, as Go prints it."""
    single = struct.unpack("f", struct.pack("f", float(value)))[0] if math.isfinite(value) else math.inf
    if math.isinf(single):  # past float32's range (JSON has no infinity)
        text = value.text if isinstance(value, GoNumber) else value
        raise bad_body(f"json: cannot unmarshal number {text} into Go struct field ToxicWrapper.toxicity of "
                       "type float32")
    for digits in range(1, 10):
        shortest = float(f"{single:.{digits}g}")
        if struct.unpack("f", struct.pack("f", shortest))[0] == single:
            return shortest
    return float(single)


def ok(payload: Any, status: int = 200) -> Response:
    return Response(status, encode(payload), {"Content-Type": JSON})


def error_response(status: int, message: str) -> Response:
    """Toxiproxy's error: JSON, but written by Go's http.Error as text/plain with a trailing newline."""
    return Response(status, encode({"error": message, "status": status}) + b"\n",
                    {"Content-Type": TEXT, "X-Content-Type-Options": "nosniff"})


def encode(payload: Any) -> bytes:
    """Compact JSON as Go writes it: integral floats as integers, <, > and & escaped."""
    text = json.dumps(_go_numbers(payload), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def _go_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _go_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_numbers(v) for v in value]
    return value


def _decode(body: bytes) -> Any:
    """The body as JSON, or Go's decoder error for it. Objects keep their keys' order and duplicates (Go
    matches each key in turn); numbers that are not int64s keep their text (Go quotes it)."""
    text = body.decode("utf-8", "replace")
    if not text.strip():
        raise bad_body("EOF")
    try:
        return json.loads(text, parse_constant=_not_json, parse_int=json_integer, parse_float=GoNumber,
                          object_pairs_hook=JsonObject)
    except RecursionError as exc:
        raise _too_deep(text) from exc
    except _NotJson as exc:
        raise bad_body(f"invalid character '{str(exc).lstrip('-')[0]}' looking for beginning of value") from exc
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise bad_body("unexpected EOF") from exc
        char = text[exc.pos]
        where = ("looking for beginning of object key string" if "property name" in exc.msg
                 else "looking for beginning of value" if "Expecting value" in exc.msg
                 else "after object key" if "':' delimiter" in exc.msg
                 else "after object key:value pair")
        raise bad_body(f"invalid character '{char}' {where}") from exc


def _too_deep(text: str) -> ApiError:
    """Nesting past what Python's parser recurses into: Go's error past its 10,000 levels, else a 400 that
    says this server stops sooner (Go would decode it)."""
    depth, in_string, escaped = 0, False, False
    for char in text:  # one pass: brackets inside strings do not nest
        if in_string:
            in_string, escaped = (escaped or char != '"'), (not escaped and char == "\\")
            continue
        in_string = char == '"'
        depth += 1 if char in "[{" else -1 if char in "]}" else 0
        if depth > MAX_DEPTH:
            return bad_body(f"invalid character '{char}' exceeded max depth")
    return bad_body(f"JSON nested deeper than this server decodes (Toxiproxy's limit is {MAX_DEPTH:,} levels, "
                    f"Python's parser stops near {sys.getrecursionlimit():,})")


class _NotJson(ValueError):
    """NaN or Infinity, which Python's parser takes and JSON (and Go) does not."""


def _not_json(name: str) -> Any:
    raise _NotJson(name)


def _object(body: bytes, go_type: str, schema: dict[str, type]) -> dict[str, Any]:
    return _fields(_decode(body), go_type, schema)


def _fields(raw: Any, go_type: str, schema: dict[str, type]) -> dict[str, Any]:
    """The known fields of a JSON object, type-checked as Go's decoder checks them; unknown ones ignored."""
    if raw is None:  # JSON null leaves Go's struct at its zero value
        return {}
    if not isinstance(raw, dict):
        raise bad_body(f"json: cannot unmarshal {json_kind(raw)} into Go value of type {go_type}")
    struct = go_type.split(".")[-1]
    out: dict[str, Any] = {}
    for key, value in go_fields(raw, schema):
        wanted = schema[key]
        if value is None:
            continue
        fits = (isinstance(value, bool) if wanted is bool else
                isinstance(value, (int, float)) and not isinstance(value, bool) if wanted is float else
                isinstance(value, wanted))
        if not fits:
            go_name = {str: "string", bool: "bool", float: "float32"}[wanted]
            raise bad_body(f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{key} "
                           f"of type {go_name}")
        out[key] = value
    return out


def _attributes(raw: Any) -> list[Any]:
    """Every value given for `attributes` (Go decodes each in turn over the toxic)."""
    return [value for _, value in go_fields(raw, ["attributes"])] if isinstance(raw, dict) else []


def _merged(kind: str, given: list[Any], attributes: dict[str, int]) -> dict[str, int]:
    try:
        for value in given:
            attributes = decode_attributes(kind, value, attributes)
    except BadAttributes as exc:
        raise bad_body(str(exc)) from exc
    return attributes


def _differs(proxy: Proxy, listen: str, upstream: str) -> bool:
    """Whether an update or populate moves the proxy (Toxiproxy compares the resolved listen address)."""
    if upstream != proxy.upstream:
        return True
    try:
        host, port = split_address(listen)
        current_host, current_port = split_address(proxy.listen)
    except (ValueError, OSError):
        return listen != proxy.listen
    return (host, port) != (current_host, current_port)
