"""The text reports: verdict.json for CI to gate on, junit.xml for CI test views, summary.md for a CI
step summary, and the short human summary the CLI prints. All from the verdict (and ledger) alone."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos import events
from chaos.check.labels import Labels, of_ledger
from chaos.check.verdict import Verdict
from chaos.errors import ConfigError
from chaos.events import Event
from chaos.reports import box, timeline
from chaos.reports.formatting import contract_words, finite, how_it_exited
from chaos.reports.lines import event_line

WITNESS_LINES = 40


def write_reports(run_dir: Path, verdict: Verdict, events: Sequence[Event]) -> None:
    """Every report of the verdict into `run_dir`; a directory that cannot take them (a full disk, a
    read-only copy) is the machine's problem, said in one paragraph."""
    document = verdict.to_dict()
    verdict_json = json.dumps(finite(document), indent=2, default=str, allow_nan=False)
    labels = of_ledger(events)
    built = box.build(document, labels)  # once: every report shows it
    try:
        run_dir.mkdir(exist_ok=True)
        (run_dir / "verdict.json").write_text(verdict_json + "\n")
        (run_dir / "summary.txt").write_text(summary(verdict, run_dir, labels, built) + "\n")
        (run_dir / "summary.md").write_text(markdown(verdict, labels, built) + "\n")
        junit(verdict, labels, built).write(run_dir / "junit.xml", encoding="utf-8", xml_declaration=True)
        (run_dir / "report.html").write_text(timeline.render(verdict, events, built) + "\n")
    except OSError as exc:
        raise ConfigError(f"Cannot write the reports into {run_dir} ({exc.strerror or exc}); the verdict was "
                          f"{verdict.verdict.upper()}, and the ledger beside it keeps the whole run. Make room or "
                          "make it writable, or copy the run dir somewhere writable, then `chaos report` on it "
                          "writes them.") from exc


def junit(verdict: Verdict, labels: Labels | None = None, built: box.Box | None = None) -> ET.ElementTree:
    """One test case per run: failed with each violation (the message is the box's first cause, the text
    begins with the box), skipped when inconclusive or skipped, errored on a crash."""
    suite = ET.Element("testsuite", name="queue-chaos", tests="1")
    case = ET.SubElement(suite, "testcase", classname=f"chaos.{verdict.target}", name=verdict.scenario)
    built = box.of_verdict(verdict, labels, built)
    text = summary(verdict, labels=labels, built=built)
    if verdict.verdict == "fail":
        suite.set("failures", "1")
        ET.SubElement(case, "failure", message=built.first_line).text = text
    elif verdict.verdict == "error":
        suite.set("errors", "1")
        ET.SubElement(case, "error", message=(verdict.error or "error").splitlines()[0][:200]).text = text
    elif verdict.verdict in ("inconclusive", "skipped"):
        suite.set("skipped", "1")
        ET.SubElement(case, "skipped", message="; ".join(verdict.notes) or verdict.verdict).text = text
    ET.SubElement(case, "system-out").text = text
    return ET.ElementTree(suite)


def markdown(verdict: Verdict, labels: Labels | None = None, built: box.Box | None = None) -> str:
    """A few lines that fit a CI step summary, the box first; the details stay in verdict.json."""
    lines = [f"### {verdict.verdict.upper()}: `{verdict.target}` x `{verdict.scenario}` (seed {verdict.seed})", ""]
    lines += box.markdown(box.of_verdict(verdict, labels, built)) + [""]
    lines += ["| outcome | jobs |", "|---|---|"]
    lines += [f"| {name} | {count} |" for name, count in verdict.counts.items() if count] + [""]
    for fault in verdict.faults:
        lines.append(f"- fault `{fault.kind}` on `{fault.target}`: "
                     f"{'exercised' if fault.exercised else '**not exercised**'} ({fault.why})")
    for exit in verdict.exits:
        lines.append(f"- worker `{exit['worker']}` exited on its own ({how_it_exited(exit)}); log `{exit.get('log')}`")
    for violation in verdict.violations:
        lines.append(f"- **{violation.kind}** `{violation.job or ''}`: {violation.message}")
    if verdict.error:
        lines += ["", f"**Error**: {verdict.error.splitlines()[0]}"]
    if verdict.reproduce:
        lines += ["", f"Reproduce: `{verdict.reproduce}`"]
    return "\n".join(lines)


def witness_line(entry: dict[str, Any], labels: Labels | None = None) -> str:
    """One witness entry; its execution named by its label (the token's head without a ledger)."""
    return event_line(entry, labels)


def summary(verdict: Verdict, run_dir: Path | None = None, labels: Labels | None = None,
            built: box.Box | None = None) -> str:
    """The box first (it holds the verdict's line), then the counts, faults, notes and each violation's
    witness; `labels` (from the run's ledger) name executions w1#2."""
    lines = box.text(box.of_verdict(verdict, labels, built))
    if verdict.contract:
        lines.append("contract: " + contract_words(verdict.contract))
    if verdict.counts:
        shown = [f"{name} {count}" for name, count in verdict.counts.items() if count or name in
                 ("enqueued", "completed", "redelivered", "lost", "stuck")]
        lines.append("jobs: " + ", ".join(shown))
    for fault in verdict.faults:
        state = "exercised" if fault.exercised else "NOT exercised"
        gate = f" at gate {fault.gate}" if fault.gate else ""
        lines.append(f"fault {fault.id}: {fault.kind} {fault.target}{gate}: {state} ({fault.why})")
    if verdict.recovery.get("jobs"):
        rec = verdict.recovery
        lines.append(f"recovery: min {rec['min_s']}s, median {rec['median_s']}s, max {rec['max_s']}s "
                     f"(bound {verdict.contract.get('recovery_bound_s')}s)")
    if verdict.evidence.get("completions") == "queue":
        lines.append("evidence: claims and completions as the queue's own record shows them (the target's observer), "
                     "beside the workers' probes")
    elif verdict.evidence.get("completions") == "probes and control":
        lines.append("evidence: completions the workers could not vouch for (ack ok null) as the target's control "
                     "answered them (Control.completion)")
    if verdict.evidence.get("acks") not in (None, events.WORKER_REPORT):
        lines.append(f"evidence: acks accepted or refused by the word of: {verdict.evidence['acks']}")
    for anomaly in verdict.anomalies:
        lines.append(f"anomaly {anomaly['kind']} {anomaly.get('job') or ''}: {anomaly['message']}")
    for note in verdict.notes:
        lines.append(f"note: {note}")
    for exit in verdict.exits:
        lines.append(f"worker {exit['worker']} (pid {exit['pid']}) exited on its own, {how_it_exited(exit)}; "
                     f"log: {exit.get('log')}")
        lines += [f"    | {line}" for line in exit.get("log_tail", [])]
    for violation in verdict.violations:
        lines.append(f"violation {violation.kind} {violation.job or ''}: {violation.message} "
                     f"[{box.docs_link(violation.kind)}]")
        witness = violation.witness[-WITNESS_LINES:]
        if len(violation.witness) > len(witness):
            lines.append(f"    ... {len(violation.witness) - len(witness)} earlier events in verdict.json")
        lines += ["    " + witness_line(entry, labels) for entry in witness]
    if verdict.error:
        lines.append("error: " + verdict.error)
    if run_dir is not None:
        lines.append(f"run dir: {run_dir}")
    if verdict.reproduce:
        lines.append(f"reproduce: {verdict.reproduce}")
    return "\n".join(lines)
