"""A scenario that needs what the contract does not promise is skipped with the reason, never run and
passed (issue 34, items 5 and 9): the requirement, the skipped verdict, its exit code and reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.contract import Contract
from chaos.discovery import bundled
from chaos.errors import ConfigError
from chaos.reports import write_reports
from chaos.reports.schemas import schema
from chaos.scenario import Scenario, load_scenario
from chaos.suite.cell import Cell
from chaos.suite.expect import judge_cell, worst
from chaos.suite.report import junit
from tests.history import History

NO_LEASE = Contract(recovery_bound_s=2.0)
RENEWED = Contract(recovery_bound_s=4.0, lease_s=1.0, heartbeat_s=0.25)
AGE_ONLY = Contract(recovery_bound_s=14.0, lease_s=12.0)  # a lease never renewed: rescue by age (arq)
RESERVED = Contract(recovery_bound_s=3.5, reservation_s=2.0, heartbeat_s=0.4)


def scenario(name: str) -> Scenario:
    return load_scenario(bundled("scenarios") / f"{name}.py")


def test_a_scenario_that_needs_a_lease_is_skipped_without_one() -> None:
    stale = scenario("stale_owner_completes_during_new_owner")
    reason = stale.unmet(NO_LEASE)
    assert reason is not None and "lease_s" in reason and "cannot be arranged" in reason
    assert stale.unmet(RENEWED) is None and stale.unmet(AGE_ONLY) is None and stale.unmet(RESERVED) is None


def test_a_scenario_that_needs_a_renewed_lease_is_skipped_for_a_lease_never_renewed() -> None:
    for name in ("stop_owner_then_kill_next_owner", "partition_worker_from_broker", "worker_clock_skew",
                 "kill_skewed_clock_workers"):
        reason = scenario(name).unmet(AGE_ONLY)
        assert reason is not None and "heartbeat_s" in reason and "never renewed" in reason, name
        assert scenario(name).unmet(RENEWED) is None and scenario(name).unmet(NO_LEASE) is None, name


def test_the_age_rule_is_judged_where_the_lease_is_never_renewed() -> None:
    assert scenario("lease_shorter_than_handler").unmet(AGE_ONLY) is None


# Optional contract keys a scenario's steps may depend on; reading one (or sizing a handler from the lease)
# must come with a declared REQUIRES, except where the scenario exists to judge what the key's absence means.
OPTIONAL = re.compile(r"contract\.(lease_s|heartbeat_s|reservation_s|max_attempts)\b|long_handler_s\(")
JUDGES_ITS_ABSENCE = {"lease_shorter_than_handler": "where a lease never renewed is judged by the age rule"}


def test_no_bundled_scenario_depends_on_an_optional_contract_key_without_declaring_it() -> None:
    silent = [path.stem for path in sorted(bundled("scenarios").glob("*.py"))
              if OPTIONAL.search(path.read_text()) and not scenario(path.stem).requires
              and path.stem not in JUDGES_ITS_ABSENCE]
    assert not silent, f"scenarios that read an optional contract key but declare no REQUIRES: {silent}"


@pytest.mark.parametrize("requires", ["('magic',)", "(['lease'],)", "[{}]", "'lease'"])
def test_an_unknown_requirement_is_a_config_error(tmp_path: Path, requires: str) -> None:
    path = tmp_path / "needs_magic.py"
    path.write_text(f"FAULTS = ()\nREQUIRES = {requires}\ndef run(ctx):\n    pass\n")
    with pytest.raises(ConfigError, match="REQUIRES"):
        load_scenario(path)


def skipped_ledger(why: str = "scenario s is skipped: it needs a lease") -> History:
    return History(AGE_ONLY).record(events.run_end(events.SKIPPED, why))


def test_a_skipped_run_is_its_own_verdict_with_the_reason_and_exit_5(tmp_path: Path) -> None:
    ledger = skipped_ledger().events
    verdict = judge(ledger)
    assert (verdict.verdict, verdict.exit_code) == ("skipped", 5)
    assert verdict.notes == ["scenario s is skipped: it needs a lease"]
    write_reports(tmp_path, verdict, ledger)
    document = json.loads((tmp_path / "verdict.json").read_text())
    jsonschema.validate(document, schema("verdict"))
    assert '<skipped message="scenario s is skipped' in (tmp_path / "junit.xml").read_text()
    assert "SKIPPED" in (tmp_path / "summary.md").read_text()


def test_a_run_that_ended_otherwise_is_not_skipped() -> None:  # near miss: the same ledger, run and ended
    h = History(AGE_ONLY, faults=[]).enqueue("a").start("w1").execute("a", "w1").snapshot(a="done")
    assert judge(h.events).verdict == "pass"


def cell_status(expected: str, got: str) -> str:
    verdict = {"verdict": got, "notes": ["why"], "faults": [], "violations": [], "counts": {}, "recovery": {}}
    return judge_cell(Cell("t", "s", verdict=expected), verdict, {"skipped": 5, "pass": 0}[got]).status


def test_a_suite_counts_a_cell_skipped_as_known_apart_from_passes() -> None:
    assert cell_status("skipped", "skipped") == "skipped"
    assert cell_status("pass", "skipped") == "fail"  # the known answer changed
    assert cell_status("skipped", "pass") == "fail"
    assert worst(["skipped", "pass"]) == "pass" and worst(["skipped"]) == "skipped"


def test_a_server_bug_cell_forgives_the_premise_the_bug_left_unmet() -> None:
    verdict = {"verdict": "inconclusive", "notes": ["premise not held: fault f1 (stop w1) ..."], "faults": [],
               "violations": [], "counts": {}, "recovery": {"jobs": {}}}
    bug = Cell("t", "s", server_bug="the server never expires a silent reservation")
    assert judge_cell(bug, verdict, 4).status == "xfail"
    assert judge_cell(Cell("t", "s"), verdict, 4).status == "inconclusive"  # near miss: no bug named
    other = dict(verdict, notes=["fault not exercised: a gate never matched"])
    assert judge_cell(bug, other, 4).status == "inconclusive"  # near miss: another reason


def test_the_suite_junit_marks_a_cell_skipped_as_known() -> None:
    cell = {"variant": "t", "scenario_variant": "s", "seed": 1, "repeat": 1, "duration_s": 1.0, "status": "skipped",
            "reasons": ["scenario s is skipped: it needs a lease"], "violations": []}
    document = {"cells": [cell], "duration_s": 1.0,
                "counts": {"pass": 0, "xfail": 0, "skipped": 1, "inconclusive": 0, "fail": 0, "error": 0}}
    suite = junit(document).getroot()
    assert suite is not None and suite.get("skipped") == "1"
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and skipped.get("type") == "skipped"
