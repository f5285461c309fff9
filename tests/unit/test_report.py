"""Reports written for CI: verdict.json, junit.xml and summary.md agree with the verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.checker import judge
from chaos.report import write_reports
from tests.history import History


def written(tmp_path: Path, history: History) -> tuple[dict, ET.Element, str]:  # type: ignore[type-arg]
    write_reports(tmp_path, judge(history.events))
    return (json.loads((tmp_path / "verdict.json").read_text()), ET.parse(tmp_path / "junit.xml").getroot(),
            (tmp_path / "summary.md").read_text())


def test_failed_run_is_a_junit_failure_naming_the_violation(tmp_path: Path) -> None:
    verdict, suite, md = written(tmp_path, History().enqueue("a", "b").execute("a", "w1").snapshot(a="done", b="done"))
    assert verdict["verdict"] == "fail" and verdict["violations"][0]["kind"] == "lost"
    failure = suite.find("testcase/failure")
    assert suite.get("failures") == "1" and failure is not None and "lost" in failure.get("message", "")
    assert "**lost** `b`" in md and md.startswith("### FAIL")


def test_passing_run_has_no_failure(tmp_path: Path) -> None:
    verdict, suite, md = written(tmp_path, History().enqueue("a").execute("a", "w1").snapshot(a="done"))
    assert verdict["verdict"] == "pass"
    assert suite.find("testcase/failure") is None and suite.find("testcase/skipped") is None
    assert "| completed | 1 |" in md


def test_inconclusive_run_is_skipped_not_passed(tmp_path: Path) -> None:
    history = History().enqueue("a").add("gate.armed", "a", gate="g1", spec="after:effect")
    _, suite, _ = written(tmp_path, history.execute("a", "w1").snapshot(a="done"))
    assert suite.get("skipped") == "1" and suite.find("testcase/skipped") is not None
