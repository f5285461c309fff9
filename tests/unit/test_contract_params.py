"""Contract values tied to the queue's own settings (issue 34): `lease_s = "{param:NAME}"` is the [params]
value it names after -p, `-c` on a tied key retunes the parameter too, a -p and a -c that disagree are
refused naming both, `-c key=` unsets a key, and a bad reference is one paragraph."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos import ConfigError, find_target
from chaos.target import Target, load_target
from tests.fuzz_inputs import REFERENCES, scalars, toml_value

TOML = """backend = "postgres"
worker = ["x"]
[params]
rescue_after_s = 1.5
tries = 3
mode = "fast"
[choices]
rescue_after_s = [1.5, 3.0, 6.0]
[contract]
recovery_bound_s = 2.5
lease_s = {lease}
"""


def lifeline(tmp_path: Path, lease: str = '"{param:rescue_after_s}"') -> Target:
    """A target whose contract ties lease_s to its rescue age, as a rescuer by age promises."""
    folder = tmp_path / "lifeline"
    folder.mkdir(exist_ok=True)
    (folder / "target.toml").write_text(TOML.format(lease=lease))
    return load_target(folder)


def refused(call: object, *phrases: str) -> str:
    with pytest.raises(ConfigError) as caught:
        assert callable(call)
        call()
    message = str(caught.value)
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message, message
    return message


def test_a_tied_value_is_its_parameters_and_follows_p(tmp_path: Path) -> None:
    target = lifeline(tmp_path)
    assert target.ties == {"lease_s": "rescue_after_s"}
    assert target.contract.lease_s == 1.5 and target.contract.reclaim_tolerance_s == pytest.approx(0.375)
    moved = target.with_params({"rescue_after_s": "6"})
    assert moved.contract.lease_s == 6.0, "-p moves the judge's lease with the queue's"
    assert moved.contract.reclaim_tolerance_s == pytest.approx(1.5), "derived values follow"


def test_c_on_a_tied_key_retunes_the_parameter(tmp_path: Path) -> None:
    moved = lifeline(tmp_path).with_contract({"lease_s": "3"})
    assert moved.params["rescue_after_s"] == 3.0 and moved.contract.lease_s == 3.0
    same = lifeline(tmp_path).with_overrides({"rescue_after_s": "3.0"}, {"lease_s": "3"})
    assert same.contract.lease_s == 3.0, "a -p and a -c that agree are one setting given twice"


def test_a_p_and_a_c_that_disagree_are_refused_naming_both(tmp_path: Path) -> None:
    target = lifeline(tmp_path)
    refused(lambda: target.with_overrides({"rescue_after_s": "6"}, {"lease_s": "3"}),
            "-p rescue_after_s=6 and -c lease_s=3 contradict each other",
            'lease_s = "{param:rescue_after_s}"', "one setting")


def test_a_c_value_the_parameter_cannot_take_is_refused_saying_it_retunes(tmp_path: Path) -> None:
    refused(lambda: lifeline(tmp_path).with_contract({"lease_s": "2"}),
            "-c lease_s=2 sets the parameter rescue_after_s too", "is not one of 1.5, 3.0, 6.0")


def test_c_unsets_ties_and_unties_keys(tmp_path: Path) -> None:
    target = lifeline(tmp_path)
    unset = target.with_contract({"lease_s": ""})
    assert unset.contract.lease_s is None and unset.ties == {} and unset.params == target.params
    fixed = target.with_contract({"lease_s": ""}).with_contract({"lease_s": "4"})
    assert fixed.contract.lease_s == 4.0 and fixed.params["rescue_after_s"] == 1.5, "an untied key is the judge's alone"
    retied = lifeline(tmp_path, "1.5").with_contract({"lease_s": "{param:rescue_after_s}"})
    assert retied.ties == {"lease_s": "rescue_after_s"}
    assert retied.with_params({"rescue_after_s": "3"}).contract.lease_s == 3.0
    refused(lambda: target.with_contract({"recovery_bound_s": ""}), "needs recovery_bound_s")
    refused(lambda: target.with_contract({"lease": ""}), "-c lease= unsets no contract key", "lease_s")


def test_an_untied_contract_key_is_untouched_by_p(tmp_path: Path) -> None:
    target = lifeline(tmp_path, "1.5")
    assert target.ties == {} and target.with_params({"rescue_after_s": "6"}).contract.lease_s == 1.5


@pytest.mark.parametrize("lease, phrases", [
    ('"{param:rescue_age}"', ['lease_s = "{param:rescue_age}" names no parameter', "mode, rescue_after_s, tries"]),
    ('"{param:mode}"', ["names the parameter mode = 'fast', which is not a number of seconds as lease_s must be"]),
    ('"{param:}"', ["lease_s = '{param:}' is no parameter reference", 'lease_s = "{param:NAME}"']),
    ('"{params:rescue_after_s}"', ["is no parameter reference"]),
])
def test_a_bad_reference_in_target_toml_is_one_paragraph(tmp_path: Path, lease: str, phrases: list[str]) -> None:
    refused(lambda: lifeline(tmp_path, lease), "target.toml", *phrases)


def test_a_tied_value_out_of_range_names_the_tie(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "target.toml").write_text('backend = "postgres"\nworker = ["x"]\n[params]\nn = 0\n'
                                        '[contract]\nrecovery_bound_s = 1\nmax_attempts = "{param:n}"\n')
    refused(lambda: load_target(folder), "tied to [params]: max_attempts = n", "max_attempts = 0")
    (folder / "target.toml").write_text('backend = "postgres"\nworker = ["x"]\n[params]\nn = 0.5\n'
                                        '[contract]\nrecovery_bound_s = 1\nmax_attempts = "{param:n}"\n')
    refused(lambda: load_target(folder), "names the parameter n = 0.5, which is not an integer")


def test_the_bundled_targets_that_copied_a_param_are_tied() -> None:
    beanstalkd = find_target("beanstalkd_ttr")
    assert beanstalkd.ties == {"reservation_s": "ttr"}
    assert beanstalkd.with_params({"ttr": "5"}).contract.reservation_s == 5
    pgqueuer = find_target("pgqueuer_pg")
    assert pgqueuer.ties == {"lease_s": "heartbeat_timeout_s"} and pgqueuer.contract.lease_s == 10.0


TIED_KEYS = ["recovery_bound_s", "lease_s", "max_attempts", "overlap", "watchdog", "owner_loss_counts_attempt"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["poll_s", "n", "heartbeat", "flag"]),
                      st.one_of(st.floats(0.01, 100), st.integers(1, 10), scalars), max_size=4),
       st.dictionaries(st.sampled_from(TIED_KEYS), st.one_of(st.sampled_from(REFERENCES), scalars), max_size=2),
       st.dictionaries(st.sampled_from(["poll_s", "n"]), st.text(max_size=6), max_size=2),
       st.dictionaries(st.sampled_from(TIED_KEYS), st.one_of(st.sampled_from(["", *REFERENCES]), st.text(max_size=6)),
                       max_size=2))
def test_any_ties_and_overrides_resolve_or_are_refused(params: dict[str, Any], contract: dict[str, Any],
                                                       p: dict[str, str], c: dict[str, str]) -> None:
    """Well-formed target.toml files whose contract refers to its params at random, with -p and -c."""
    contract = {"recovery_bound_s": 1.0, **contract}
    lines = ['backend = "postgres"', 'worker = ["x"]', "[params]",
             *(f"{k} = {toml_value(v)}" for k, v in params.items()),
             "[contract]", *(f"{k} = {toml_value(v)}" for k, v in contract.items())]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "target.toml").write_text("\n".join(lines) + "\n")
        try:
            target = load_target(Path(folder)).with_overrides(p, c)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            return
    for key, name in target.ties.items():
        assert getattr(target.contract, key) == target.params[name]
    assert all(math.isfinite(v) and v > 0 for v in (target.contract.recovery_bound_s, target.contract.lease_s or 1))
