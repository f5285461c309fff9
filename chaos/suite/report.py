"""A suite's reports, from its runs alone (so `chaos merge` writes them again from the shards' runs):

- suite.json: every run with its cell, expectation, verdict, status, reasons, duration and run dir, the
  counts, and the exit code (the worst cell's); with --repeat, whether each cell's verdicts agreed; and
  the whole suite's plan (chaos.suite.plan), which a merge checks its shards against;
- junit.xml: one test case per run. A wrong answer is a <failure> naming each reason, violation and the
  reproduce line; a harness error is an <error type="harness">, an inconclusive run an
  <error type="inconclusive"> (never a pass); a forgiven server bug is <skipped type="xfail">, a cell
  skipped as it must be (its scenario's REQUIRES) <skipped type="skipped">;
- summary.md: the matrix (target variants x scenarios) and every run that did not give its known answer,
  trimmed under GitHub's 1 MiB step-summary cap (saying what it left out); appended to
  $GITHUB_STEP_SUMMARY when that is set;
- report.html: the matrix, each run's mark linking to that run's own report.html (chaos.suite.html).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from chaos.errors import ConfigError
from chaos.reports import box
from chaos.suite.expect import STATUS_EXIT_CODES, STATUSES, worst
from chaos.suite.html import render_suite
from chaos.suite.runner import CellRun

SCHEMA = "queue-chaos/suite/2"
STEP_SUMMARY_CAP = 1024 * 1024  # GitHub refuses a step summary over 1 MiB
RED = ("fail", "error", "inconclusive")  # the statuses of a cell that did not give its known answer
MARKS = {"pass": "✅", "xfail": "☑️", "skipped": "⏭️", "inconclusive": "⚠️", "fail": "❌", "error": "💥"}


def cell_record(run: CellRun, order: int) -> dict[str, Any]:
    """One run as suite.json keeps it; `order`: its place in the whole suite's plan, which a merge of shards
    restores."""
    cell, verdict = run.planned.cell, run.verdict or {}
    return {
        "order": order, "key": run.planned.key, "run_key": run.planned.run_key, "target": cell.target,
        "variant": cell.variant,
        "params": list(cell.params), "contract": list(cell.contract), "scenario": cell.scenario,
        "scenario_variant": cell.scenario_variant, "scenario_params": list(cell.scenario_params),
        "seed": run.planned.seed, "repeat": run.planned.repeat,
        "expected": {"verdict": cell.verdict, "violation": cell.violation},
        "verdict": verdict.get("verdict"), "status": run.outcome.status, "reasons": run.outcome.reasons,
        "exit_code": run.exit_code, "duration_s": round(run.duration_s, 3), "run_dir": run.run_dir,
        "shared_server": run.shared_server, "left_behind": list(run.left_behind),
        "reproduce": verdict.get("reproduce"),
        "violations": [{"kind": v.get("kind"), "job": v.get("job"), "message": v.get("message")}
                       for v in verdict.get("violations") or []],
        "recovery": {k: v for k, v in (verdict.get("recovery") or {}).items() if k != "jobs"},
        # A red cell's box (chaos.reports.box), which every suite report shows first for it.
        "box": box.to_dict(box.build(verdict)) if run.verdict and run.outcome.status in RED else None,
    }


def suite_document(cells: list[dict[str, Any]], *, suite: str, shards: list[str], duration_s: float,
                   plan: dict[str, Any]) -> dict[str, Any]:
    """suite.json's content: the runs, their counts, the worst status and its exit code, and the plan."""
    status = worst([str(cell["status"]) for cell in cells])
    counts = Counter(str(cell["status"]) for cell in cells)
    return {
        "schema": SCHEMA, "suite": suite, "shards": shards, "duration_s": round(duration_s, 3),
        "status": status, "exit_code": STATUS_EXIT_CODES[status],
        "counts": {name: counts.get(name, 0) for name in STATUSES}, "stability": stability(cells), "cells": cells,
        "plan": plan,
    }


def stability(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each key run more than once: the verdicts seen, and whether they agreed."""
    seen: dict[str, list[str]] = {}
    for cell in cells:
        seen.setdefault(str(cell["key"]), []).append(str(cell["verdict"]))
    return [{"key": key, "runs": len(verdicts), "verdicts": dict(Counter(verdicts)), "stable": len(set(verdicts)) == 1}
            for key, verdicts in seen.items() if len(verdicts) > 1]


def fresh_output(out: Path, fix: str) -> None:
    """Make `out` for a suite's reports, refusing one that holds another suite's (or is a file): neither a
    suite nor a merge ever writes over reports. `fix` says what to do instead."""
    if (out / "suite.json").exists():
        raise ConfigError(f"{out} already holds a suite's reports (suite.json); a suite never writes over another's. "
                          f"{fix}")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is a file; expected a directory to write the suite's reports into (made if "
                          f"missing). {fix}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Cannot create {out} ({exc.strerror or exc}); it must be a writable directory. "
                          f"{fix}") from exc


def write_suite_reports(out: Path, document: dict[str, Any]) -> None:
    try:
        (out / "suite.json").write_text(json.dumps(document, indent=2) + "\n")
        junit(document).write(out / "junit.xml", encoding="utf-8", xml_declaration=True)
        text = markdown(document)
        (out / "summary.md").write_text(text)
        (out / "report.html").write_text(render_suite(document))
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as stream:
                stream.write(text)
    except OSError as exc:
        raise ConfigError(f"Cannot write the suite's reports into {out} ({exc.strerror or exc}); every run's own "
                          "reports are in its run dir. Make room or pick another --out.") from exc


def junit(document: dict[str, Any]) -> ET.ElementTree:
    cells = document["cells"]
    counts = document["counts"]
    suite = ET.Element("testsuite", name="queue-chaos suite", tests=str(len(cells)), failures=str(counts["fail"]),
                       errors=str(counts["error"] + counts["inconclusive"]),
                       skipped=str(counts["xfail"] + counts["skipped"]),
                       time=f"{document['duration_s']:.3f}")
    for cell in cells:
        repeat = f" repeat {cell['repeat']}" if cell["repeat"] > 1 else ""
        case = ET.SubElement(suite, "testcase", classname=f"chaos.{cell['variant']}",
                             name=f"{cell['scenario_variant']} [seed {cell['seed']}{repeat}]",
                             time=f"{cell['duration_s']:.3f}")
        status, first = cell["status"], (cell["reasons"] or [""])[0]
        found = cell.get("box")
        if found and not box.from_dict(found).green:  # the box's first cause, with what the cell expected
            first = f"{box.from_dict(found).first_line} ({first})" if first else box.from_dict(found).first_line
        if status == "fail":
            ET.SubElement(case, "failure", message=first).text = _details(cell)
        elif status in ("error", "inconclusive"):
            ET.SubElement(case, "error", type="harness" if status == "error" else "inconclusive",
                          message=first).text = _details(cell)
        elif status in ("xfail", "skipped"):
            ET.SubElement(case, "skipped", type=status, message=first)
    return ET.ElementTree(suite)


def _details(cell: dict[str, Any]) -> str:
    lines = box.text(box.from_dict(cell["box"])) if cell.get("box") else []
    lines += [*cell["reasons"]]
    lines += [f"violation {v['kind']} {v['job'] or ''}: {v['message']}" for v in cell["violations"]]
    lines.append(f"expected: {cell['expected']['verdict']}"
                 + (f" naming {cell['expected']['violation']}" if cell["expected"]["violation"] else ""))
    if cell["reproduce"]:
        lines.append(f"reproduce: {cell['reproduce']}")
    if cell["run_dir"]:
        lines.append(f"run dir: {cell['run_dir']}")
    return "\n".join(lines)


def markdown(document: dict[str, Any], cap: int = STEP_SUMMARY_CAP) -> str:
    """The summary, and as much detail as fits under `cap` bytes (what was left out is said)."""
    head = _head(document)
    details = [_detail(cell) for cell in document["cells"] if cell["status"] not in ("pass", "xfail", "skipped")]
    parts = [head, _matrix(document["cells"])]
    body = "\n".join(parts)
    if len(body.encode()) > cap:  # a matrix too wide for the cap: the counts and the list must still fit
        parts = [head, "_The matrix is left out: it does not fit GitHub's 1 MiB step summary._\n"]
    kept: list[str] = []
    size = len("\n".join(parts).encode()) + 200
    for detail in details:
        if size + len(detail.encode()) > cap:
            break
        kept.append(detail)
        size += len(detail.encode()) + 1
    if details:
        parts.append("### Not as expected\n")
        parts += kept
        if len(kept) < len(details):
            parts.append(f"_{len(details) - len(kept)} more left out to stay under GitHub's 1 MiB step summary; "
                         "suite.json has every one._\n")
    return "\n".join(parts)


def _head(document: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {name}" for name, n in document["counts"].items() if n)
    shards = f" (shards {', '.join(document['shards'])})" if document["shards"] else ""
    unstable = [s["key"] for s in document["stability"] if not s["stable"]]
    lines = [f"## queue-chaos suite: {document['status'].upper()} (exit {document['exit_code']})\n",
             f"{len(document['cells'])} runs of {document['suite']}{shards} in {document['duration_s']:.0f}s: "
             f"{counts or 'none'}.\n"]
    if document["stability"]:
        lines.append(f"Repeated: {len(document['stability']) - len(unstable)} of {len(document['stability'])} "
                     "cells gave the same verdict every time" + (f"; unstable: {', '.join(unstable)}" if unstable
                                                                 else "") + ".\n")
    legend = ", ".join(f"{mark} {name}" for name, mark in MARKS.items())
    lines.append(f"Each mark is whether the run gave its known answer ({legend}); a failing cell that must fail "
                 "shows ✅ with the violation it names.\n")
    return "\n".join(lines)


def _matrix(cells: list[dict[str, Any]]) -> str:
    variants = list(dict.fromkeys(str(cell["variant"]) for cell in cells))
    scenarios = sorted({str(cell["scenario_variant"]) for cell in cells})
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in cells:
        grouped.setdefault((cell["variant"], cell["scenario_variant"]), []).append(cell)
    rows = ["| scenario | " + " | ".join(f"`{v}`" for v in variants) + " |",
            "|---|" + "---|" * len(variants)]
    for scenario in scenarios:
        marks = [_mark(grouped.get((variant, scenario), [])) for variant in variants]
        rows.append(f"| `{scenario}` | " + " | ".join(marks) + " |")
    return "\n".join(rows) + "\n"


def _mark(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return ""
    status = worst([str(run["status"]) for run in runs])
    kinds = sorted({str(v["kind"]) for run in runs for v in run["violations"]})
    bad = sum(run["status"] not in ("pass", "xfail", "skipped") for run in runs)
    share = f" {bad}/{len(runs)}" if len(runs) > 1 and bad else ""
    return MARKS[status] + share + (f" {', '.join(kinds)}" if kinds else "")


def _detail(cell: dict[str, Any]) -> str:
    """The cell's line (what it expected), then its box."""
    reproduce = f"\n  `{cell['reproduce']}`" if cell["reproduce"] else ""
    found = "\n\n" + "\n".join(box.markdown(box.from_dict(cell["box"]))) + "\n" if cell.get("box") else ""
    return (f"- {MARKS[cell['status']]} **{cell['variant']}** x **{cell['scenario_variant']}** seed {cell['seed']}: "
            f"{'; '.join(cell['reasons'])}{reproduce}{found}")
