"""Hypothesis strategies for what users and workers hand the suite: contract values, target.toml
files, `-p` values and probe bodies, including the odd ones (NaN, infinity, wrong types, deep nesting)."""

from __future__ import annotations

import json
import math
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
