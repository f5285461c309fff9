"""The red-build box (chaos.reports.box) comes first in every report and says the cause, the fix, the docs
link, the decisive events and where the run came from; the contract shows its set keys; executions are
labelled, never 32 hex; and `chaos report --job/--worker` prints a timeline for any run."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.check.labels import of_ledger
from chaos.check.verdict import Premise, Verdict
from chaos.check.violation_kinds import VIOLATION_KINDS
from chaos.contract import Contract
from chaos.ledger import Ledger
from chaos.reports import box, timeline, write_reports
from chaos.reports.schemas import schema_text
from chaos.reports.text import markdown, summary
from chaos.suite.cell import Cell, Planned
from chaos.suite.expect import Outcome
from chaos.suite.html import render_suite
from chaos.suite.report import cell_record
from chaos.suite.report import junit as suite_junit
from chaos.suite.report import markdown as suite_markdown
from chaos.suite.runner import CellRun
from tests.history import AT_LEAST_ONCE, History

pytestmark = pytest.mark.unit

HEX = "0123456789abcdef0123456789abcdef"
LEASE = Contract(recovery_bound_s=2.0, delivery="at-least-once", lease_s=1.0, heartbeat_s=0.25)
STAMP: dict[str, Any] = {"suite_version": "0.1.0", "target_commit": "1a768e962d76", "python": "3.11.2"}
REPO = Path(__file__).resolve().parents[2]
STUCK_CAUSE = "The queue left the job unowned past its recovery bound."  # the stuck rule's conclusion, as a sentence


def stuck(jobs: int = 3) -> History:
    """Workers killed holding `jobs` jobs, nobody reclaims them: stuck each (duplicates of one kind)."""
    names = [f"job-{n:04d}" for n in range(1, jobs + 1)]
    history = History(AT_LEAST_ONCE, **STAMP).start("idle", 4343).enqueue(*names)  # a worker free to take them
    history.record(events.backend_start(provider="local", version="PostgreSQL 16.4"))
    for n, job in enumerate(names, 1):
        worker = f"w{n}"
        history.start(worker).claim(job, worker, token=f"{n:x}" + HEX[1:]).effect(job, worker, token=f"{n:x}" + HEX[1:])
        history.kill(worker, fid=f"f{n}")
    return history.snapshot(**{job: "claimed" for job in names})


def test_the_box_comes_first_in_summary_txt_with_cause_fix_docs_events_and_stamp() -> None:
    history = stuck()
    verdict = judge(history.events)
    lines = summary(verdict, None, of_ledger(history.events)).splitlines()
    assert lines[0] == "FAIL: target t, scenario s, seed 1"
    text = "\n".join(lines[:lines.index("┗━") + 1])
    assert "┃ stuck ×3: job-0001, job-0002, job-0003" in text
    assert f"cause: {STUCK_CAUSE}" in text and f"fix:   {VIOLATION_KINDS['stuck'].fix}" in text
    assert "docs:  docs/reference/violations.md#stuck" in text
    assert re.search(r"#\d+ +w1#1 claimed job-0001 at \+0\.\d{3} s", text)  # the decisive claim, labelled
    assert "derived no claim since, while a worker was free" in text
    assert "suite 0.1.0 · target t @ 1a768e962d76 · server PostgreSQL 16.4 (server, local)" in text
    assert "2023-11-14 22:13:20 UTC" in text and "Python 3.11.2" in text
    assert HEX[1:] not in summary(verdict, None, of_ledger(history.events))


def test_a_conclusion_and_premises_replace_the_rule_and_witness_lines() -> None:
    verdict = judge(stuck(1).events)
    proven = replace(verdict.violations[0], conclusion="nobody took job-0001 back",
                     proof=(Premise("w1#1 claimed job-0001", 8, 0.08), Premise("w1's lease ran out", None, 1.08)))
    found = box.build(replace(verdict, violations=[proven]).to_dict())
    assert found.groups[0].cause == "Nobody took job-0001 back."
    assert found.groups[0].decisive == ((8, "#8      w1#1 claimed job-0001"), (None, "derived w1's lease ran out"))


def test_the_markdown_and_junit_lead_with_the_box(tmp_path: Path) -> None:
    history = stuck(2)
    write_reports(tmp_path, judge(history.events), history.events)
    md = (tmp_path / "summary.md").read_text().splitlines()
    assert md[0].startswith("### FAIL") and md[2] == "> ❌ **FAIL: target t, scenario s, seed 1**"
    assert "> **stuck ×2: job-0001, job-0002**  " in md and "> docs: [stuck](docs/reference/violations.md#stuck)" in md
    assert md.index("> reproduce: `chaos run`") < md.index("| outcome | jobs |")
    failure = ET.parse(tmp_path / "junit.xml").getroot().find("testcase/failure")
    assert failure is not None
    assert failure.get("message") == f"stuck ×2: job-0001, job-0002: {STUCK_CAUSE}"
    assert (failure.text or "").startswith("FAIL: target t, scenario s, seed 1\n┃ stuck ×2")
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["provenance"]["target_commit"] == "1a768e962d76"
    assert HEX[1:] in json.dumps(verdict)  # the token stays in verdict.json


def test_the_page_opens_with_the_box_a_working_docs_link_and_the_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    history = stuck(1)
    page = timeline.render(judge(history.events), history.events)
    assert page.index("<section id='box' class='box box-fail'>") < page.index("<h2>Counts</h2>")
    assert f"href='{(REPO / 'docs/reference/violations.md').as_uri()}#stuck'" in page  # the checkout's page
    assert "<a href='logs/w1.log'>w1</a>" in page
    monkeypatch.setenv(events.ENV_DOCS_URL, "https://docs.example/queue-chaos/")
    page = timeline.render(judge(history.events), history.events)
    assert "href='https://docs.example/queue-chaos/reference/violations/#stuck'" in page


def test_the_contract_shows_only_its_set_keys() -> None:
    history = History(LEASE).enqueue("a").execute("a", "w1").snapshot(a="done")
    verdict = judge(history.events)
    assert verdict.contract["max_attempts"] is None  # unset, so no report says it
    line = next(line for line in summary(verdict).splitlines() if line.startswith("contract: "))
    assert "lease_s = 1.0" in line and "None" not in line
    page = timeline.render(verdict, history.events)
    contract = page[page.index("Contract: "):page.index("</p>", page.index("Contract: "))]
    assert "heartbeat_s = 0.25" in contract and "None" not in contract


def test_a_pass_gets_its_verdicts_line_then_its_provenance() -> None:
    history = History(AT_LEAST_ONCE, **STAMP).enqueue("a").execute("a", "w1").snapshot(a="done")
    verdict = judge(history.events)
    first, second = summary(verdict).splitlines()[:2]
    assert first == "PASS: target t, scenario s, seed 1"  # the same whenever the run is repeated
    assert second.startswith("suite 0.1.0 · target t @ 1a768e962d76")
    assert "┃" not in summary(verdict)
    assert "<section id='box' class='box green'>" in timeline.render(verdict, history.events)
    assert markdown(verdict).splitlines()[2].startswith("> ✅ **PASS** · suite 0.1.0")


def test_an_inconclusive_and_an_error_box_state_their_cause() -> None:
    history = History().enqueue("a").armed("g1", "after:effect").journal("kill", "w1", gate="g1")
    history.execute("a", "w1").snapshot(a="done")
    inconclusive = judge(history.events)
    assert inconclusive.verdict == "inconclusive"
    assert box.build(inconclusive.to_dict()).cause.startswith("inconclusive: fault f1 (kill w1) was not exercised")
    broken = Verdict("error", "t", "s", 1, {}, {}, {}, [], [], {}, error="Traceback (most recent call last):\n"
                     "  File x\nRuntimeError: the sink died")
    found = box.text(box.build(broken.to_dict()))
    assert found[1] == "┃ harness error: RuntimeError: the sink died"


def test_a_suite_shows_each_red_cells_box_first() -> None:
    verdict = judge(stuck(2).events).to_dict()
    cell = {"order": 0, "key": "k", "variant": "pg_naive", "scenario_variant": "kill", "seed": 1, "repeat": 1,
            "status": "fail", "verdict": "fail", "reasons": ["expected PASS, got FAIL with stuck"],
            "expected": {"verdict": "pass", "violation": None}, "duration_s": 1.0, "run_dir": "runs/r1",
            "reproduce": "chaos run", "violations": [], "box": box.to_dict(box.build(verdict))}
    document = {"suite": "s", "shards": [], "duration_s": 1.0, "status": "fail", "exit_code": 1, "stability": [],
                "counts": {"pass": 0, "xfail": 0, "skipped": 0, "inconclusive": 0, "fail": 1, "error": 0},
                "cells": [cell]}
    md = suite_markdown(document)
    assert "> **stuck ×2: job-0001, job-0002**  " in md.splitlines()
    failure = suite_junit(document).getroot().find("testcase/failure")  # type: ignore[union-attr]
    assert failure is not None and failure.get("message", "").startswith(f"stuck ×2: job-0001, job-0002: {STUCK_CAUSE}")
    assert (failure.text or "").startswith("FAIL: target t, scenario s, seed 1\n┃ stuck ×2")
    page = render_suite(document)
    assert page.index("<section id='box-0' class='box box-fail'>") < page.index("<h2>Matrix</h2>")
    assert "<a href='runs/r1/report.html'>the run's report</a>" in page


# -- chaos report --job / --worker -------------------------------------------------------------------------

def run_dir(tmp_path: Path, history: History) -> Path:
    """A run dir whose ledger.sqlite holds `history`, at its own times (as `chaos run` would have left it)."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for event in history.events:
        ledger.append(events.Record(event.kind, event.source, event.job, event.worker, event.data))
    ledger.close()
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        db.executemany("UPDATE events SET mono = ?, wall = ? WHERE seq = ?",
                       [(e.mono, e.wall, e.seq) for e in history.events])
    return tmp_path


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chaos", "report", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=60, check=False)


def redelivered() -> History:
    """A passing run whose job-0001 ran twice: w1 was killed after its effect, w2 took it after w1's lease."""
    history = History(LEASE).enqueue("job-0001", "job-0002").start("w1").start("w2")
    history.claim("job-0001", "w1", token=HEX).effect("job-0001", "w1", token=HEX).kill("w1")
    history.claim("job-0001", "w2", token="f" * 32, dt=1.2).effect("job-0001", "w2", token="f" * 32)
    history.ack("job-0001", "w2", token="f" * 32).execute("job-0002", "w2")
    return history.snapshot(**{"job-0001": "done", "job-0002": "done"})


def test_a_jobs_timeline_for_a_passing_run(tmp_path: Path) -> None:
    history = redelivered()
    assert judge(history.events).verdict == "pass"
    done = report(str(run_dir(tmp_path, history)), "--job", "job-0001")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "job-0001: redelivered; executions w1#1, w2#1"
    assert any("probe.claim" in line and "w1#1" in line for line in lines)
    assert any("fault.applied" in line and "worker=w1" in line for line in lines)  # the kill of a worker that held it
    assert any(line.strip().startswith("~ w1's lease on job-0001 ran out at") for line in lines)
    assert any("probe.ack" in line and "w2#1" in line and "ok=True" in line for line in lines)
    assert HEX not in done.stdout and "job-0002" not in done.stdout
    assert not (tmp_path / "regenerated").exists() and not (tmp_path / "verdict.json").exists()


def test_a_workers_timeline(tmp_path: Path) -> None:
    done = report(str(run_dir(tmp_path, redelivered())), "--worker", "w2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "w2: 2 executions of 2 jobs (w2#1, w2#2)"
    assert any("process.start" in line for line in lines) and any("job=job-0002" in line and "w2#2" in line
                                                                 for line in lines)
    assert "w1#1" not in done.stdout


def test_an_unknown_job_or_worker_or_a_missing_ledger_is_a_usage_error(tmp_path: Path) -> None:
    directory = run_dir(tmp_path, redelivered())
    job = report(str(directory), "--job", "job-9")
    assert job.returncode == 2 and "No job 'job-9'" in job.stderr and "such as job-0001, job-0002" in job.stderr
    worker = report(str(directory), "--worker", "w9")
    assert worker.returncode == 2 and "Its processes were w1, w2." in worker.stderr
    missing = report(str(tmp_path / "nowhere"), "--job", "job-0001")
    assert missing.returncode == 2 and "No ledger at" in missing.stderr


def test_a_red_cells_record_keeps_its_box_and_both_schemas_hold(tmp_path: Path) -> None:
    verdict = judge(stuck(1).events).to_dict()
    red = CellRun(Planned(Cell("pg_naive", "kill"), 1, 1), Outcome("fail", ["expected PASS, got FAIL"]), 1, 1.0,
                  "cells/r1", verdict, False)
    green = replace(red, outcome=Outcome("pass", []))
    record, passed = cell_record(red, 0), cell_record(green, 1)
    assert record["box"]["groups"][0]["kind"] == "stuck" and passed["box"] is None
    assert box.from_dict(record["box"]) == box.build(verdict)
    cells = json.loads(schema_text("suite"))["properties"]["cells"]["items"]
    for cell in (record, passed):
        jsonschema.validate(json.loads(json.dumps(cell)), cells)
    jsonschema.validate(json.loads(json.dumps(verdict)), json.loads(schema_text("verdict")))
