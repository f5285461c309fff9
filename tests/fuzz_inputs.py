"""Hypothesis strategies for what users and workers hand the suite: contract values, target.toml
files, `-p` values, probe bodies and the shard outputs a merge reads, including the odd ones (NaN,
infinity, wrong types, deep nesting, a value moved or dropped)."""

from __future__ import annotations

import copy
import json
import math
from functools import reduce
from typing import Any

from hypothesis import strategies as st

CONTRACT_KEYS = ["recovery_bound_s", "delivery", "lease_s", "heartbeat_s", "stale_ack", "overlap", "max_attempts",
                 "watchdog", "lease_tolerance_s", "on_owner_loss", "lease_scope"]

scalars = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.booleans(),
                    st.text(max_size=12),
                    st.sampled_from(["at-least-once", "rejected", "never", "postgres", "drop", "worker"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=6), inner, max_size=3), max_leaves=6)
contracts = st.dictionaries(st.sampled_from([*CONTRACT_KEYS, "bogus"]), values, max_size=8)


def toml_value(value: Any) -> str:
    """TOML text for a value (TOML has nan and inf too)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


@st.composite
def target_tomls(draw: st.DrawFn) -> str:
    """A target.toml, mostly well-formed, with any of its values replaced by something odd."""
    sane: dict[str, Any] = {"backend": "postgres", "worker": ["{python}", "{target_dir}/worker.py"],
                            "control": "control:Control", "shutdown_grace_s": 3.0}
    top = {key: draw(st.one_of(st.just(value), values)) for key, value in sane.items()}
    if draw(st.booleans()):
        top["worker"] = draw(st.lists(st.sampled_from(["{python}", "{target_dir}", "{nope}", "{", "x}", "w.py"]),
                                      max_size=3))
    contract = draw(contracts) if draw(st.booleans()) else {"recovery_bound_s": draw(values)}
    params = draw(st.dictionaries(st.sampled_from(["heartbeat", "poll_s", "flag", "n"]), values, max_size=3))
    choices = draw(st.one_of(st.none(), values, st.dictionaries(st.sampled_from(["heartbeat", "poll_s", "zz"]),
                                                                   values, max_size=2)))
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items()]
    if choices is not None and not isinstance(choices, dict):
        lines.append(f"choices = {toml_value(choices)}")
    for table, content in (("params", params), ("contract", contract), ("choices", choices)):
        if isinstance(content, dict):
            lines.append(f"[{table}]")
            lines += [f"{key} = {toml_value(value)}" for key, value in content.items()]
    return "\n".join(lines) + "\n"


probe_bodies = st.one_of(
    st.binary(max_size=64),
    st.builds(lambda value: json.dumps(value, allow_nan=True).encode(), values),
    st.builds(lambda fields: json.dumps(fields, allow_nan=True).encode(), st.dictionaries(
        st.sampled_from(["job", "worker", "pid", "token", "ok", "clock", "key", "fence", "reason", "attempt"]),
        values, max_size=6)),
    st.integers(1, 5000).map(lambda depth: b'{"job": "j", "x": ' + b"[" * depth + b"]" * depth + b"}"),
)


# -- merge inputs: a shard's suite.json or a run's verdict.json, edited ---------------------------------

Place = tuple[str | int, ...]  # the keys and indexes that lead to a value in a JSON document
report_values = st.one_of(values, st.sampled_from(["pass", "xfail", "fail", "error", "inconclusive", "1/2", "2/2",
                                                    "3/2", "cells/x/runs/r", "../elsewhere", "sha256:0", 0, 1, 3]))


def places(document: Any, at: Place = ()) -> list[Place]:
    """Every place in a JSON document, the document itself first."""
    found = [at]
    items = document.items() if isinstance(document, dict) else enumerate(document) if isinstance(
        document, list) else []
    for step, value in items:
        found += places(value, (*at, step))
    return found


@st.composite
def edited_json(draw: st.DrawFn, document: Any) -> Any:
    """`document` with one to three of its places changed as a hand, a tool or a damaged disk might: a value
    replaced by an odd one or by one a report could hold, or a key or an item dropped."""
    changed = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(places(changed)))
        dropping = bool(place) and draw(st.booleans())
        value = None if dropping else draw(report_values)
        if not place:
            changed = value
            continue
        parent = reduce(lambda node, step: node[step], place[:-1], changed)
        if dropping:
            del parent[place[-1]]
        else:
            parent[place[-1]] = value
    return changed


def edited_file(document: Any) -> st.SearchStrategy[bytes]:
    """A JSON file of `document` as a merge may find it: edited, or not JSON at all (bytes that are not
    UTF-8, nesting past any parser's depth)."""
    return st.one_of(edited_json(document).map(lambda changed: json.dumps(changed, allow_nan=True).encode()),
                     st.binary(max_size=64), st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth))
