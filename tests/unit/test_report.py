"""Reports written for CI: verdict.json, junit.xml and summary.md agree with the verdict; report.html draws
the run (lanes, spans, faults, the violations' proofs) from the verdict and the ledger alone, and the
suite's report.html links each cell to its run's page."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaos.check.checker import judge
from chaos.contract import Contract
from chaos.reports import proof, timeline, write_reports
from chaos.suite.html import render_suite
from chaos.suite.report import suite_document, write_suite_reports
from tests.history import History

SVG = "{http://www.w3.org/2000/svg}"
LEASE = Contract(recovery_bound_s=2.0, delivery="at-least-once", lease_s=1.0, heartbeat_s=0.25,
                 stale_ack="rejected", overlap="after-lease-loss", max_attempts=3)


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


def page_of(history: History) -> str:
    return timeline.render(judge(history.events), history.events)


def svgs(page: str, view: str = "warped") -> list[ET.Element]:
    """Every SVG of the page on one axis (a drawing with breaks has a linear twin), parsed as XML (they
    must be well-formed)."""
    other = "linear" if view == "warped" else "warped"
    page = re.sub(rf"<div class='wide view {other}'>.*?</svg>(?:</svg>)?</div>", "", page, flags=re.S)
    return [ET.fromstring(m.group(0)) for m in re.finditer(r"<svg class='timeline.*?</svg>(?:</svg>)?", page, re.S)]


def lanes(svg: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-lane", ""): g for g in svg.iter(f"{SVG}g") if "lane" in (g.get("class") or "").split()}


def classes(element: ET.Element) -> list[str]:
    return [c for e in element.iter() for c in (e.get("class") or "").split()]


def section(page: str, ident: str) -> str:
    start = page.index(f"<section id='{ident}'")
    return page[start:page.index("</section>", start)]


def test_html_report_draws_violating_jobs_first_with_the_faults(tmp_path: Path) -> None:
    history = History().enqueue("a", "b").start("w1").start("w2", 4343).execute("a", "w1").claim("b", "w1").kill("w1")
    write_reports(tmp_path, judge(history.snapshot(a="done", b="claimed").events), history.events)
    page = (tmp_path / "report.html").read_text()
    assert page.index("<section class='violation' id='v1' data-job='b'") < page.index("<section id='run'")
    job_view, run_view, rows = svgs(page)
    assert set(lanes(job_view)) == {"nemesis", "server", "w1"}
    (kill,) = [e for e in lanes(run_view)["nemesis"] if "band-line" in (e.get("class") or "")]
    assert "kill w1" in (kill.findtext(f"{SVG}title") or "")
    assert "kill w1" in [t.text for t in lanes(run_view)["nemesis"].iter(f"{SVG}text")], "the fault is labelled"
    assert "band-line" in classes(lanes(run_view)["w1"]), "the kill is drawn over the lane of the worker it hit"
    labels = [t.text for t in rows.iter(f"{SVG}text") if "lane-label" in (t.get("class") or "")]
    assert labels == ["b stuck", "a completed"], "the violating job comes first"
    assert classes(rows).count("claim") == 2 and classes(rows).count("effect") == 1, "two claims, one effect"
    assert "stuck" in classes(lanes(rows)["b"]), "the queue still held b to the end of the run"
    assert "Reproduce" in page


def test_every_drawn_mark_opens_its_event_and_the_page_fetches_nothing() -> None:
    page = page_of(History().enqueue("a").start("w1").execute("a", "w1").snapshot(a="done"))
    embedded = re.search(r"<script type='application/json' id='chaos-events'>(.*?)</script>", page)
    assert embedded is not None
    shown = json.loads(embedded.group(1))
    seqs = set(re.findall(r"data-seq='(\d+)'", page))
    assert seqs and seqs == set(shown), "every clickable mark has its event's JSON in the page"
    assert {e["kind"] for e in shown.values()} >= {"probe.claim", "probe.effect", "probe.ack", "process.start"}
    assert "addEventListener('click'" in page and "id='event-json'" in page
    assert not re.search(r"<link|\ssrc=|url\((?!#)|@import", page), "inline CSS, script and SVG only"
    assert set(re.findall(r"https?://[^'\" )]+", page)) == {"http://www.w3.org/2000/svg"}


def test_tables_have_header_rows() -> None:
    page = page_of(History().enqueue("a", "b").execute("a", "w1").kill("w1").snapshot(a="done", b="done"))
    for table in ("counts", "faults", "violations"):
        start = page.index(f"<table class='{table}'>")
        table_html = page[start:page.index("</table>", start)]
        assert table_html.startswith(f"<table class='{table}'><thead><tr><th>") and table_html.count("<th>") >= 2


def test_a_span_open_at_the_end_reaches_the_end_of_the_run() -> None:
    page = page_of(History().enqueue("a").start("w1").start("w2", 4343).claim("a", "w1").snapshot(a="claimed"))
    run_view = svgs(page)[1]
    (span,) = [e for e in lanes(run_view)["w1"] if "span" in (e.get("class") or "").split()]
    assert "e-open" in (span.get("class") or "") and "still open" in (span.findtext(f"{SVG}title") or "")
    end = next(e for e in run_view.iter(f"{SVG}line") if e.get("class") == "end-line")
    assert abs(float(span.get("x", 0)) + float(span.get("width", 0)) - float(end.get("x1", 0))) < 0.2


def test_lease_deadlines_extensions_acks_and_abandons_are_told_apart() -> None:
    h = History(LEASE).enqueue("a", "b", "c").start("w1").start("w2")
    h.claim("a", "w1").heartbeat("a", "w1").heartbeat("a", "w1", ok=False, dt=1.5).abandon("a", "w1")
    h.claim("a", "w2").effect("a", "w2").ack("a", "w2", ok=False).claim("a", "w2", "again").effect("a", "w2", "again")
    h.ack("a", "w2", "again").claim("b", "w1").effect("b", "w1").ack("b", "w1", ok=None).execute("c", "w2")
    marks = classes(svgs(page_of(h.snapshot(a="done", b="done", c="done")))[1])
    assert marks.count("claim") == 5 and marks.count("hb") == 2 and marks.count("failed") == 1
    assert marks.count("ack") == 4 and marks.count("rejected") == 1 and marks.count("unknown") == 1
    assert marks.count("abandon") >= 1 and marks.count("expired") == 1, "a's first lease ran out before its failed beat"
    assert "deadline" in marks and "lease" in marks and "e-abandon" in marks and "e-ack-rejected" in marks


def test_under_worker_leases_one_heartbeat_extends_every_job_of_its_worker() -> None:
    def expired(contract: Contract) -> int:
        h = History(contract).enqueue("a", "b").start("w1").claim("a", "w1").claim("b", "w1")
        for _ in range(3):
            h.heartbeat("a", "w1", dt=0.6)
        h.effect("a", "w1").ack("a", "w1").effect("b", "w1").ack("b", "w1")
        return classes(svgs(section(page_of(h.snapshot(a="done", b="done")), "run"))[0]).count("expired")

    assert expired(LEASE) == 1, "b's own lease (job scope) ran out: its claim had no extension"
    assert expired(replace(LEASE, lease_scope="worker")) == 0, "a's heartbeats extended b too"


def test_the_proof_tells_the_witness_in_words() -> None:
    witness = [
        {"seq": 1, "t": 0.2, "kind": "probe.claim", "job": "job-3", "worker": "w1", "data": {"token": "t1"}},
        {"seq": 2, "t": 0.21, "kind": "fault.applied", "job": None, "worker": "w1", "data": {"id": "f1", "pids": [7]}},
        {"seq": 3, "t": 1.25, "kind": "probe.claim", "job": "job-3", "worker": "w2", "data": {"token": "t2"}},
        {"seq": 4, "t": 3.0, "kind": "fault.healed", "job": None, "worker": "w1", "data": {"id": "f1"}},
        {"seq": 5, "t": 3.1, "kind": "probe.ack", "job": "job-3", "worker": "w1", "data": {"token": "t1", "ok": True}},
    ]
    journal = {"f1": History().journal("stop", "w1").events[-1]}
    sentences = [text for _, text in proof.in_words(witness, "job-3", 1.0, journal)]
    assert sentences == [
        "w1 claimed job-3 at +0.200 s (token t1).",
        "w1 was stopped (SIGSTOP) (pids 7) at +0.210 s (fault f1).",
        "w1's lease on job-3 ran out at +1.200 s (its claim or last accepted heartbeat + lease_s 1.0 s).",
        "w2 claimed job-3 at +1.250 s (token t2).",
        "w2's lease on job-3 ran out at +2.250 s (its claim or last accepted heartbeat + lease_s 1.0 s).",
        "w1 was resumed (SIGCONT) at +3.000 s (fault f1).",
        "w1 acknowledged job-3 at +3.100 s, and the queue accepted it.",
    ]


def test_a_stale_ack_section_names_both_owners_in_their_lanes() -> None:
    h = History(LEASE).enqueue("a").start("w1").start("w2").claim("a", "w1").stop("w1")
    h.claim("a", "w2", dt=1.2).heal("w1").effect("a", "w1").effect("a", "w2").ack("a", "w1").ack("a", "w2")
    page = page_of(h.snapshot(a="done"))
    violation = page[page.index("<section class='violation'"):page.index("<section id='run'")]
    assert "data-kind='stale_ack_accepted'" in violation
    job_view = svgs(violation)[0]
    by_lane = lanes(job_view)
    assert "band" in classes(by_lane["w1"]) and "band" not in classes(by_lane["w2"]), "w1 was stopped, not w2"
    assert classes(by_lane["w1"]).count("effect") == 1 and classes(by_lane["w2"]).count("effect") == 1
    assert "stop w1" in [t.text for t in by_lane["nemesis"].iter(f"{SVG}text")]
    sentences = re.findall(r"<li data-seq='\d+'>([^<]*)", violation)
    assert any(line.startswith("w1 claimed a at") for line in sentences)
    assert any(line.startswith("w2 claimed a at") for line in sentences)
    assert any(line.startswith("w1 was stopped (SIGSTOP)") for line in sentences)
    assert any(line.startswith("w1 acknowledged a at") and "accepted it" in line for line in sentences)


def test_ten_thousand_jobs_make_a_small_page_quickly() -> None:
    h = History(LEASE).start("w1").start("w2").start("w3")
    for n in range(10_000):
        job = f"job-{n:05d}"
        h.enqueue(job).execute(job, f"w{n % 3 + 1}", dt=0.001)
        if n == 5000:
            h.claim("stuck", "w2").stop("w3").heal("w3", dt=0.5)
    h.enqueue("stuck")
    ledger = h.snapshot(stuck="claimed").events
    verdict = judge(ledger)
    assert [v.job for v in verdict.violations] == ["stuck"]
    start = time.perf_counter()
    page = timeline.render(verdict, ledger)
    took = time.perf_counter() - start
    assert took < 5, f"{took:.2f}s"
    assert len(page) < 2_000_000, f"{len(page):,} bytes"
    run_view = svgs(page)[1]
    drawn = [e for e in run_view.iter() if "span" in (e.get("class") or "").split()]
    assert len(drawn) <= timeline.SPAN_CAP + 12 and any("merged" in (e.get("class") or "") for e in drawn)
    assert page.count("<title>") < 10_000
    rows = [t.text for t in svgs(page)[2].iter(f"{SVG}text") if "lane-label" in (t.get("class") or "")]
    assert rows[0] == "stuck stuck" and len(rows) == timeline.MAX_JOBS + 1
    assert f"{9_999 - timeline.MAX_JOBS + 1:,} more jobs are not drawn as rows" in page


def test_an_empty_ledger_still_renders() -> None:
    verdict = judge([])
    assert verdict.verdict == "error"
    page = timeline.render(verdict, [])
    assert page.startswith("<!doctype html>") and "ERROR" in page and page.rstrip().endswith("</html>")


# -- the suite's page --------------------------------------------------------------------------------------


def cell(variant: str, scenario: str, status: str, run_dir: str | None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "key": f"{variant}-{scenario}-seed1", "run_key": f"{variant}-{scenario}-seed1-x", "target": variant,
        "variant": variant, "params": [], "contract": [], "scenario": scenario, "scenario_variant": scenario,
        "scenario_params": [], "seed": 1, "repeat": 1, "expected": {"verdict": "pass", "violation": None},
        "verdict": "pass", "status": status, "reasons": [], "exit_code": 0, "duration_s": 1.0, "run_dir": run_dir,
        "shared_server": False, "reproduce": f"chaos run --target {variant} --scenario {scenario} --seed 1",
        "violations": [], "recovery": {}}
    record.update(extra)
    return record


def test_suite_page_links_each_cell_to_its_run_and_lists_what_went_wrong(tmp_path: Path) -> None:
    cells = [cell("q_ok", "no_faults", "pass", "cells/q_ok-no_faults/runs/r 1"),
             cell("q_bad", "no_faults", "fail", "cells/q_bad-no_faults/runs/r2", verdict="fail", exit_code=1,
                  reasons=["expected PASS, got FAIL (exit code 1) with lost"],
                  violations=[{"kind": "lost", "job": "job-1", "message": "enqueued but <never> effected"}]),
             cell("q_bad", "kill", "error", None, verdict=None, reasons=["the run never started"])]
    document = suite_document(cells, suite="chaos.toml", shards=[], duration_s=3.0, plan={})  # no merge reads it
    write_suite_reports(tmp_path, document)
    page = (tmp_path / "report.html").read_text()
    assert page == render_suite(document)
    matrix = page[page.index("<table class='matrix'>"):page.index("</table>", page.index("<table class='matrix'>"))]
    assert re.findall(r"href='([^']+)'", matrix) == ["cells/q_ok-no_faults/runs/r%201/report.html",
                                                      "cells/q_bad-no_faults/runs/r2/report.html"]
    assert "<thead><tr><th>scenario" in matrix and matrix.count("<th scope='col'>") == 2
    wrong = page[page.index("<h2>Not as expected</h2>"):]
    assert "expected PASS, got FAIL (exit code 1) with lost" in wrong and "the run never started" in wrong
    assert "enqueued but &lt;never&gt; effected" in wrong and "no run dir" in wrong
    assert "<thead><tr><th>status" in wrong
    assert "<h1 class='error'>queue-chaos suite: ERROR (exit 3)</h1>" in page
    assert not re.search(r"<link|<script|\ssrc=", page), "self-contained"
