"""The red-build box: what a reader of a red build needs in ten seconds, first in every report (summary.txt,
summary.md, junit.xml's failure, report.html, and the suite's reports for each red cell).

Per violation kind (duplicates grouped: "stuck ×3: job-0001, job-0004, …"): the cause in one sentence (the
proof's conclusion when the rule that fired wrote one, else the kind's rule), the usual fix, the link to
the kind's section of the docs, and the decisive events (the proof's premises, else the last witness lines
of the kinds that decide a verdict); then the provenance stamp and the reproduce line. An error or an
inconclusive run's box says its cause likewise; a pass (or a skip) gets its verdict's line and the stamp.

Built from the verdict's dict (a Verdict's to_dict(), or a verdict.json a suite read), so a run and a
suite cell say the same; labels (`w1#2`) come from the run's ledger where one is at hand.

The docs link: `CHAOS_DOCS_URL` (the built site's base URL, as mkdocs publishes docs/) gives
`<base>/reference/violations/#<kind>`; without it a page links the checkout's own
docs/reference/violations.md (a file: URL) when the suite runs from a checkout, and text reports name the
repository-relative path `docs/reference/violations.md#<kind>`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from chaos import events
from chaos.check.labels import Labels
from chaos.check.verdict import PREMISE_NOT_HELD, Verdict
from chaos.check.violation_kinds import DOCS_PAGE, VIOLATION_KINDS, doc_anchor
from chaos.reports.formatting import as_sentence, esc
from chaos.reports.lines import event_line

JOBS_NAMED = 4  # jobs a group names before "…"
DECISIVE = 5  # witness lines shown when the rule wrote no proof
# What decides a verdict: a witness's other lines (process starts, gates, enqueues) are its setting.
DECISIVE_KINDS = frozenset((events.PROBE_CLAIM, events.PROBE_EFFECT, events.PROBE_HEARTBEAT, events.PROBE_ACK,
                            events.PROBE_ABANDON, events.FAULT_APPLIED, events.FAULT_HEALED, events.PROCESS_EXIT,
                            events.SNAPSHOT, events.COMPLETION, events.BACKEND_RESTART))
CHECKOUT_PAGE = Path(__file__).resolve().parents[2] / DOCS_PAGE  # there when the suite runs from a checkout
GREEN = ("pass", events.SKIPPED)


def docs_link(kind: str, *, page: bool = False) -> str:
    """Where the docs explain `kind`, for a text report or (`page`) a link on report.html."""
    base = os.environ.get(events.ENV_DOCS_URL, "").strip()
    if base:
        return f"{base.rstrip('/')}/reference/violations/#{quote(kind)}"
    if page and CHECKOUT_PAGE.is_file():
        return f"{CHECKOUT_PAGE.as_uri()}#{quote(kind)}"
    return doc_anchor(kind)


@dataclass(frozen=True)
class Group:
    """The violations of one kind: the jobs, and the cause, fix and decisive events of the first."""

    kind: str
    jobs: tuple[str, ...]
    cause: str
    fix: str
    decisive: tuple[tuple[int | None, str], ...]  # (the event's seq where it is one, the line)

    @property
    def title(self) -> str:
        jobs = ", ".join(self.jobs[:JOBS_NAMED]) + (", …" if len(self.jobs) > JOBS_NAMED else "")
        return f"{self.kind} ×{len(self.jobs)}" + (f": {jobs}" if jobs else "")


@dataclass(frozen=True)
class Box:
    verdict: str
    headline: str  # FAIL: target t, scenario s, seed 1
    cause: str  # an error's or inconclusive run's cause ("" for fail, pass, skipped)
    groups: tuple[Group, ...]
    stamp: str  # the provenance, one line
    reproduce: str

    @property
    def green(self) -> bool:
        return self.verdict in GREEN

    @property
    def first_line(self) -> str:
        """What a CI view shows of a failure (junit's message): the first cause."""
        if self.groups:
            group = self.groups[0]
            more = f" (and {len(self.groups) - 1} more kinds)" if len(self.groups) > 1 else ""
            return f"{group.title}: {group.cause}{more}"
        return self.cause or self.headline


def to_dict(box: Box) -> dict[str, Any]:
    """The box as a suite's suite.json keeps it for a red cell."""
    return {"verdict": box.verdict, "headline": box.headline, "cause": box.cause, "stamp": box.stamp,
            "reproduce": box.reproduce,
            "groups": [{"kind": g.kind, "jobs": list(g.jobs), "cause": g.cause, "fix": g.fix,
                        "decisive": [{"seq": seq, "line": line} for seq, line in g.decisive]} for g in box.groups]}


def from_dict(found: Mapping[str, Any]) -> Box:
    groups = tuple(Group(str(g["kind"]), tuple(g["jobs"]), str(g["cause"]), str(g["fix"]),
                         tuple((d.get("seq"), str(d["line"])) for d in g["decisive"])) for g in found["groups"])
    return Box(str(found["verdict"]), str(found["headline"]), str(found["cause"]), groups, str(found["stamp"]),
               str(found["reproduce"]))


def build(verdict: Mapping[str, Any], labels: Labels | None = None) -> Box:
    """The box of a verdict's dict."""
    kind = str(verdict.get("verdict"))
    headline = (f"{kind.upper()}: target {verdict.get('target')}, scenario {verdict.get('scenario')}, "
                f"seed {verdict.get('seed')}")
    found = verdict.get("provenance")
    return Box(kind, headline, _cause(verdict), _groups(verdict.get("violations"), labels),
               stamp(found if isinstance(found, Mapping) else {}), str(verdict.get("reproduce") or ""))


def stamp(found: Mapping[str, Any]) -> str:
    """suite 0.1.0 · target pg_naive @ 1a768e962d76 · server PostgreSQL 16.4 (postgres, local) · ..."""
    parts = []
    if found.get("suite_version"):
        parts.append(f"suite {found['suite_version']}")
    if found.get("target"):
        commit = f" @ {found['target_commit']}" if found.get("target_commit") else ""
        parts.append(f"target {found['target']}{commit}")
    if found.get("server"):
        parts.append(f"server {found['server']}")
    if found.get("date"):
        parts.append(str(found["date"]))
    if found.get("duration_s") is not None:
        parts.append(f"{float(found['duration_s']):.1f} s")
    if found.get("python"):
        parts.append(f"Python {found['python']}")
    return " · ".join(parts) or "no provenance recorded"


def _cause(verdict: Mapping[str, Any]) -> str:
    """Why an error or inconclusive run proved nothing, in a sentence."""
    kind = verdict.get("verdict")
    if kind == "error":
        first = str(verdict.get("error") or "no error text recorded").strip().splitlines()
        return "harness error: " + (first[-1] if first and first[0].startswith("Traceback") else first[0])
    if kind == "inconclusive":
        unexercised = [f"fault {f.get('id')} ({f.get('kind')} {f.get('target') or ''}".rstrip() + ") was not "
                       f"exercised: {f.get('why')}" for f in _dicts(verdict.get("faults")) if not f.get("exercised")]
        notes = [str(note) for note in verdict.get("notes") or []] if isinstance(verdict.get("notes"), list) else []
        premises = [note for note in notes if note.startswith(PREMISE_NOT_HELD)]
        said = unexercised + premises or notes[:1]
        return "inconclusive: " + ("; ".join(said) if said else "the run proved nothing (see the notes)")
    if kind == events.SKIPPED:
        found = verdict.get("notes")
        return "skipped: " + "; ".join(str(note) for note in found) if isinstance(found, list) else "skipped"
    return ""


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list a verdict.json holds (one edited by hand may hold anything)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, (list, tuple)) else []


def _groups(violations: Any, labels: Labels | None) -> tuple[Group, ...]:
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for violation in _dicts(violations):
        by_kind.setdefault(str(violation.get("kind")), []).append(violation)
    groups = []
    for kind, found in by_kind.items():
        first = found[0]
        known = VIOLATION_KINDS.get(kind)
        conclusion = str(first.get("conclusion") or "")
        cause = as_sentence(conclusion) if conclusion else str(known.rule if known else first.get("message"))
        groups.append(Group(kind, tuple(str(v.get("job")) for v in found if v.get("job")), cause,
                            known.fix if known else "", _decisive(first, labels)))
    return tuple(groups)


def _decisive(violation: Mapping[str, Any], labels: Labels | None) -> tuple[tuple[int | None, str], ...]:
    """The proof's premises, else the last witness lines of the kinds that decide."""
    premises = _dicts(violation.get("proof"))
    if premises:
        return tuple((_seq(p.get("seq")), f"{_cited(p.get('seq')):<8}{p.get('says')}") for p in premises)
    witness = [entry for entry in _dicts(violation.get("witness")) if str(entry.get("kind")) in DECISIVE_KINDS]
    return tuple((_seq(entry.get("seq")), event_line(entry, labels, seq=False)) for entry in witness[-DECISIVE:])


def _cited(seq: Any) -> str:
    """Where a premise's event is (its seq, as witness lines number them); a derived one has none. Its
    sentence already says when."""
    return f"#{seq}" if _seq(seq) is not None else "derived"


def _seq(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- text ------------------------------------------------------------------------------------------------

def text(box: Box) -> list[str]:
    """The box as lines for summary.txt and junit.xml: the headline, then the rest framed on the left."""
    if box.green:  # the verdict's line as every run prints it (scripts compare it), then the stamp
        why = f" ({box.cause})" if box.cause else ""
        return [f"{box.headline}{why}", box.stamp]
    lines = [box.headline]
    if box.cause:
        lines.append(box.cause)
    for group in box.groups:
        lines += [group.title, f"  cause: {group.cause}"]
        if group.fix:
            lines.append(f"  fix:   {group.fix}")
        lines.append(f"  docs:  {docs_link(group.kind)}")
        if group.decisive:
            lines.append("  decisive events:")
            lines += [f"    {line}" for _, line in group.decisive]
    lines.append(box.stamp)
    if box.reproduce:
        lines.append(f"reproduce: {box.reproduce}")
    # The first line stays bare: it begins with the verdict, where scripts and CI logs look for it.
    return [lines[0]] + ["┃ " + line for line in lines[1:]] + ["┗━"]


def markdown(box: Box) -> list[str]:
    """The box for a CI step summary (summary.md): a quote block, so it stands out above the tables."""
    if box.green:
        why = f" ({box.cause})" if box.cause else ""
        return [f"> ✅ **{box.verdict.upper()}**{why} · {box.stamp}"]
    lines = [f"> ❌ **{box.headline}**", ">"]
    if box.cause:
        lines += [f"> **{box.cause}**", ">"]
    for group in box.groups:
        lines += [f"> **{group.title}**  ", f"> cause: {group.cause}  "]
        if group.fix:
            lines.append(f"> fix: {group.fix}  ")
        lines.append(f"> docs: [{group.kind}]({docs_link(group.kind)})")
        if group.decisive:
            lines += [">", "> ```text"] + [f"> {line}" for _, line in group.decisive] + ["> ```"]
        lines.append(">")
    lines.append(f"> {box.stamp}  ")
    if box.reproduce:
        lines.append(f"> reproduce: `{box.reproduce}`")
    return lines


# -- html ------------------------------------------------------------------------------------------------

STYLE = """
.box{border:2px solid #c62828;border-radius:6px;background:#fff6f6;padding:8px 14px;margin:10px 0 16px}
.box{color:#222}.box.green{border-color:#2a8a2a;background:#f4fbf4;padding:4px 12px}.box.box-inconclusive,
.box.box-error{border-color:#c66a00;background:#fff8ee}.box h2.red{color:#c62828}.box .cause{color:#8e1b1b}
.box h2{margin:2px 0 6px;border:0;font-size:17px}.box .group{margin:6px 0 10px}
.box .group h3{margin:4px 0}.box .cause{font-weight:600}.box dl{display:grid;grid-template-columns:max-content 1fr;
gap:2px 10px;margin:2px 0}.box dt{color:#555}.box dd{margin:0}.box ol.decisive{margin:2px 0;padding-left:24px;
font:12px ui-monospace,monospace}.box ol.decisive li[data-seq]{cursor:pointer}.box .stamp{color:#444;font-size:12px}
.box .logs a{margin-right:10px}
"""


def html(box: Box, workers: Sequence[str] = (), *, run_dir: str = "", anchor: str = "box") -> str:
    """The box as a page fragment (STYLE is its CSS); `workers`: the processes whose logs it links,
    `run_dir/logs/<name>.log` (run_dir "" on the run's own page; a suite's page passes the cell's)."""
    prefix = f"{quote(run_dir)}/" if run_dir else ""
    logs = ("<p class='logs'>Logs: " + "".join(f"<a href='{prefix}logs/{quote(name)}.log'>{esc(name)}</a>"
                                               for name in workers) + "</p>") if workers else ""
    reproduce = f"<p>Reproduce: <code>{esc(box.reproduce)}</code></p>" if box.reproduce else ""
    report = f"<p><a href='{prefix}report.html'>the run's report</a></p>" if run_dir else ""
    if box.green:
        why = f" ({esc(box.cause)})" if box.cause else ""
        return (f"<section id='{esc(anchor)}' class='box green'><p><b class='pass'>{esc(box.headline)}</b>{why} · "
                f"<span class='stamp'>{esc(box.stamp)}</span></p>{reproduce}{logs}{report}</section>")
    # The box's own classes: a page's `.fail` colours all it holds. Its headline only where no h1 says it.
    parts = [f"<section id='{esc(anchor)}' class='box box-{esc(box.verdict)}'>"
             + (f"<h2 class='red'>{esc(box.headline)}</h2>" if run_dir else "")]
    if box.cause:
        parts.append(f"<p class='cause'>{esc(box.cause)}</p>")
    for group in box.groups:
        items = "".join((f"<li data-seq='{seq}'>" if seq is not None else "<li>") + esc(line)
                        for seq, line in group.decisive)
        fix = f"<dt>fix<dd>{esc(group.fix)}" if group.fix else ""
        parts.append(f"<div class='group' data-kind='{esc(group.kind)}'><h3>{esc(group.title)}</h3><dl>"
                     f"<dt>cause<dd class='cause'>{esc(group.cause)}{fix}"
                     f"<dt>docs<dd><a class='doc' href='{esc(docs_link(group.kind, page=True))}'>"
                     f"{esc(group.kind)} in the violations reference</a>"
                     + (f"<dt>decisive<dd><ol class='decisive'>{items}</ol>" if items else "") + "</dl></div>")
    parts.append(f"<p class='stamp'>{esc(box.stamp)}</p>{reproduce}{logs}{report}</section>")
    return "".join(parts)


def workers_of(ledger: Sequence[events.Event]) -> list[str]:
    """Every process the supervisor started (workers, reconcilers), in order: each has logs/<name>.log."""
    return list(dict.fromkeys(e.worker for e in ledger if e.kind == events.PROCESS_START and e.worker))


def page_box(built: Box, ledger: Sequence[events.Event]) -> str:
    """report.html's box, linking the logs of the run's workers (from its ledger)."""
    return f"<style>{STYLE}</style>" + html(built, workers_of(ledger))


def of_verdict(verdict: Verdict, labels: Labels | None, built: Box | None = None) -> Box:
    """The box a report shows: `built` where the caller has it (write_reports builds it once, from the
    verdict's dict it writes anyway), else built now."""
    return built if built is not None else build(verdict.to_dict(), labels)
