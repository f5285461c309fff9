"""Reports written for CI: verdict.json, junit.xml and summary.md agree with the verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.check.checker import judge
from chaos.reports import write_reports
from tests.history import History


def written(tmp_path: Path, history: History) -> tuple[dict, ET.Element, str]:  # type: ignore[type-arg]
    write_reports(tmp_path, judge(history.events), history.events)
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


def test_html_timeline_draws_violating_jobs_first_with_the_faults(tmp_path: Path) -> None:
    history = History().enqueue("a", "b").execute("a", "w1").claim("b", "w1").kill("w1")
    write_reports(tmp_path, judge(history.snapshot(a="done", b="claimed").events), history.events)
    page = (tmp_path / "report.html").read_text()
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text") if t.text and t.text.startswith(("a", "b"))]
    assert labels == ["b stuck", "a completed"], "the violating job comes first"
    faults = [line for line in svg.iter("{http://www.w3.org/2000/svg}line") if line.get("stroke") == "#d62728"]
    assert len(faults) == 1 and "fault.applied" in (faults[0].findtext("{http://www.w3.org/2000/svg}title") or "")
    assert page.count("<rect") == 2 and page.count("<circle") == 1, "two claims, one effect"
    assert "stuck" in page and "Reproduce" in page
