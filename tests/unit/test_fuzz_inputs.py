"""Whatever a user or a worker hands the suite (contract values, target.toml, `-p` values, probe bodies,
the shard outputs a merge reads) ends as a value the checker can judge or as the suite's own error:
never another exception, never a non-finite number, never a merge that passes a failing run."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos import events
from chaos.contract import Contract
from chaos.errors import ConfigError
from chaos.runtime import probe_schema
from chaos.suite.cell import Cell
from chaos.suite.merge import merge
from chaos.target import load_target
from tests.fuzz_inputs import CONTRACT_KEYS, REFERENCES, contracts, edited_file, probe_bodies, target_tomls
from tests.suite_shards import losing, write_shards

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def finite_numbers(contract: Contract) -> bool:
    numbers = [contract.recovery_bound_s, contract.lease_s, contract.heartbeat_s, contract.lease_tolerance_s]
    return all(n is None or (math.isfinite(n) and n > 0) for n in numbers)


@FAST
@given(contracts)
def test_a_contract_is_finite_and_positive_or_refused(raw: dict[str, Any]) -> None:
    try:
        contract = Contract.from_dict(raw, "fuzz")
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert finite_numbers(contract)
    json.dumps(contract.to_dict(), allow_nan=False)


@FAST
@given(target_tomls(), st.lists(st.tuples(st.sampled_from(["heartbeat", "poll_s", "flag", "n", "zz"]),
                                          st.text(max_size=8)), max_size=3),
       st.lists(st.tuples(st.sampled_from([*CONTRACT_KEYS, "zz"]),
                          st.one_of(st.sampled_from(["", "3", "0", "-1", "nan", "true", *REFERENCES]),
                                    st.text(max_size=8))), max_size=3))
def test_a_target_toml_and_its_p_and_c_values_load_or_are_refused(toml: str, overrides: list[tuple[str, str]],
                                                                 contract: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "target.toml").write_text(toml)
        try:
            target = load_target(Path(folder)).with_overrides(dict(overrides), dict(contract))
        except ConfigError as exc:
            assert str(exc)
            return
    assert finite_numbers(target.contract) and math.isfinite(target.shutdown_grace_s)
    for key, name in target.ties.items():
        assert getattr(target.contract, key) == target.params[name], "a tied value is its parameter's"
    for value in target.params.values():
        assert isinstance(value, (str, int, bool)) or math.isfinite(value)
    json.dumps([target.params, target.choices, target.contract.to_dict()], allow_nan=False)


@FAST
@given(st.sampled_from([*events.POINTS, "teleport", ""]), probe_bodies)
def test_a_probe_body_parses_into_judgeable_fields_or_is_refused(point: str, body: bytes) -> None:
    try:
        probe = probe_schema.parse(point, body)
    except probe_schema.BadProbe as exc:
        assert str(exc)
        return
    assert isinstance(probe["job"], str) and probe["job"]
    json.dumps(probe, allow_nan=False)


SHARDED = (Cell("a", "s"), Cell("b", "s", counts={"lost": 0}), Cell("c", "s", "fail", "stuck", max_recovery_s=2.0),
           Cell("d", "s"))
LOSES = SHARDED[0]  # its runs lose a job where they must pass (and c's pass where they must show stuck)
MERGES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # files each


def merged_or_refused(shards: list[Path], out: Path) -> dict[str, Any] | None:
    """The merged document, or None where the merge refused with one paragraph (exit 2)."""
    try:
        return merge(shards, out)
    except ConfigError as exc:
        assert str(exc).startswith("chaos merge: ") and "\n" not in str(exc), str(exc)
        return None


@MERGES
@given(st.data())
def test_no_edit_of_a_shards_suite_json_merges_a_failing_run_to_a_pass(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        shards = write_shards(Path(folder), SHARDED, 2, losing(LOSES), seeds=(1, 2))
        shard = data.draw(st.sampled_from(shards))
        document = json.loads((shard / "suite.json").read_text())
        (shard / "suite.json").write_bytes(data.draw(edited_file(document)))
        merged = merged_or_refused(shards, Path(folder) / "merged")
    assert merged is None or merged["exit_code"] != 0, "a failing run hidden by an edit"


@MERGES
@given(st.data())
def test_an_edited_verdict_json_is_judged_as_recorded_or_refused(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        shards = write_shards(Path(folder), SHARDED, 2, losing(LOSES), seeds=(1, 2))
        written = [json.loads((shard / "suite.json").read_text()) for shard in shards]
        recorded = {cell["key"]: cell["status"] for document in written for cell in document["cells"]}
        run = data.draw(st.sampled_from([shard / cell["run_dir"] / "verdict.json"
                                         for shard, document in zip(shards, written, strict=True)
                                         for cell in document["cells"]]))
        run.write_bytes(data.draw(edited_file(json.loads(run.read_text()))))
        merged = merged_or_refused(shards, Path(folder) / "merged")
    assert merged is None or {cell["key"]: cell["status"] for cell in merged["cells"]} == recorded
