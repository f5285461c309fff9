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
                 "watchdog", "lease_tolerance_s", "on_owner_loss", "lease_scope", "rerun_after_completion",
                 "owner_loss_counts_attempt"]
# References to a target_tomls parameter, to none, and ones that only look like one
REFERENCES = ["{param:poll_s}", "{param:n}", "{param:heartbeat}", "{param:flag}", "{param:nope}", "{param:", "{param:}"]

scalars = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6), st.booleans(),
                    st.text(max_size=12),
                    st.sampled_from(["at-least-once", "rejected", "never", "postgres", "drop", "worker", "allowed",
                                     *REFERENCES]))
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


# -- suite files -----------------------------------------------------------------------------------------

SUITE_TARGETS = ["redis_basic", "no_such_queue", "", "../outside"]  # one real target, with a fast server
ONE_JOB = "@one_job"  # stands for the path of a one-job scenario, which the test writes and puts in its place
SUITE_SCENARIOS = [ONE_JOB, "no_such_scenario", ""]
seeds_values = st.one_of(st.sampled_from([1, 0, -1, [1, 2], [], [True], "1-2", "2-1", "0-2", "x", 1.5,
                                          "1-100000000", 2**62, [2**62, 1]]), values)
repeat_values = st.one_of(st.sampled_from([1, 2, 0, -1, True, "2", 10**9]), values)
# never one real target alone: a correct target gets a cell for every bundled scenario, too many runs here
correct_values = st.one_of(st.sampled_from([["no_such_queue"], ["redis_basic", "redis_basic"], "redis_basic", [1],
                                            []]), values)
include_values = st.one_of(st.sampled_from([["missing.toml"], ["chaos.toml"], "part.toml", [1], []]), values)


SANE_SUITE = {"seeds": st.sampled_from([1, 0, [1, 2], "1-2"]), "repeat": st.sampled_from([1, 2])}
SANE_CELL = {"verdict": st.just("pass"), "counts": st.just({"lost": 0}), "params": st.just({"persistence": "none"}),
             "max_recovery_s": st.just(30)}
ODD_SUITE = {"seeds": seeds_values, "repeat": repeat_values, "correct": correct_values, "include": include_values,
             "backend": st.sampled_from(["local", "external", "nope", 5]),
             "worker_image": st.sampled_from(["", "queue-chaos/no-such-image:1", 5]), "bogus": values}
ODD_CELL = {"target": st.one_of(st.sampled_from(SUITE_TARGETS), values),
            "scenario": st.one_of(st.sampled_from(SUITE_SCENARIOS), values),
            "scenarios": st.one_of(st.lists(st.sampled_from(SUITE_SCENARIOS), max_size=2), values),
            "verdict": st.sampled_from(["fail", "inconclusive", "error", "PASS", 1]),
            "violation": st.sampled_from(["lost", "stuck", "", 5]),
            "params": st.one_of(st.sampled_from([{"persistence": "x"}, {"zz": 1}, ["a=b"], ["nokey"]]), values),
            "contract": st.one_of(st.sampled_from([{"recovery_bound_s": 2}, {"delivery": "maybe"}]), values),
            "scenario_params": st.one_of(st.sampled_from([{"mode": "x"}, ["m=1"]]), values),
            "counts": st.one_of(st.sampled_from([{"lost": 1.5}, {"completed": 2}]), values),
            "max_recovery_s": st.one_of(st.sampled_from([-1, math.nan, math.inf]), values),
            "witness_order": values, "anomalies": values, "rule": values, "server_bug": values,
            "backend": ODD_SUITE["backend"], "worker_image": ODD_SUITE["worker_image"],
            "instead_of_default": values, "bogus": values}


def _settings(draw: st.DrawFn, sane: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    return {key: draw(strategy) for key, strategy in sane.items() if draw(st.booleans())}


@st.composite
def suite_files(draw: st.DrawFn) -> bytes:
    """A suite file (bytes: some are no UTF-8, some nest too deep). It starts sane and small (one or two
    cells of a one-job run, two seeds and two repeats at most) and gets up to two odd values or missing
    keys, so that some suites run and the rest are refused in every way a file can be wrong."""
    odd = draw(st.sampled_from(["none"] * 8 + ["latin1", "deep", "garbage"]))
    if odd == "deep":
        return b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n"
    if odd == "garbage":
        return draw(st.binary(max_size=64))
    top = _settings(draw, SANE_SUITE)
    cells = [{"target": "redis_basic", "scenario": ONE_JOB, **_settings(draw, SANE_CELL)}
             for _ in range(draw(st.integers(1, 2)))]
    for _ in range(draw(st.integers(0, 2))):
        table = draw(st.sampled_from([top, *cells]))
        key = draw(st.sampled_from(sorted(ODD_SUITE if table is top else ODD_CELL)))
        if key in table and draw(st.booleans()):
            del table[key]
        else:
            table[key] = draw((ODD_SUITE if table is top else ODD_CELL)[key])
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items()]
    for cell in cells:
        lines.append("[[cell]]")
        lines += [f"{key} = {toml_value(value)}" for key, value in cell.items()]
    text = "\n".join(lines) + "\n"
    return text.encode("latin-1", "replace") + b"# \xe9\xff\n" if odd == "latin1" else text.encode()


# -- chaos explore's arguments -----------------------------------------------------------------------------

EXPLORE_OPTIONS = {  # each option's values, the odd among the sane
    "--target": ["pg_lease", "no_such_queue", "", "../outside"],
    "--faults": ["kill", "stop", "kill,stop", ",", "", " , ", "kill,,kill", "nuke", "pause", "KILL"],
    "--shard": ["1/1", "1/2", "2/2", "0/1", "2/1", "1/0", "a/b", "", "-1/2"],
    "--mode": ["guided", "random", "nope"],
    "--seed": ["0", "-5", str(2**70), "x", "1.5"],
    "--time": ["0", "-1", "nan", "inf", "20", "x"],
    "--backend": ["local", "external", "nope"],
    "--worker-image": ["queue-chaos/no-such-image:1", ""],
    "-j": ["1", "0", "x"],
    "-p": ["reclaim=early", "reclaim=sometimes", "reclaim", "=", "zz=1", "heartbeat="],
    "-c": ["watchdog=true", "watchdog=maybe", "lease_s=nan", "x"],
    "--budget": ["1", "0", "-1", "x"],
    "--replays": ["1", "0"],
}


COUNTS = ("--budget", "--replays", "-j")  # never any text: a larger count would be a longer test, not an odder one


@st.composite
def explore_arguments(draw: st.DrawFn) -> list[str]:
    """`chaos explore` arguments: a search of one run and one replay, with up to three options added or
    changed (any of them odd), so that some searches run and the rest are refused."""
    chosen: dict[str, list[str]] = {"--target": ["pg_lease"], "--budget": ["1"], "--replays": ["1"]}
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(sorted(EXPLORE_OPTIONS)))
        values = st.sampled_from(EXPLORE_OPTIONS[name])
        if name not in COUNTS:
            values = st.one_of(values, st.text("kilstop,=/1 ", max_size=8))
        chosen[name] = [*chosen.get(name, []), draw(values)] if name in ("-p", "-c") else [draw(values)]
    args = [arg for name, values in chosen.items() for value in values for arg in (name, value)]
    return args + (["--fresh"] if draw(st.booleans()) else [])
