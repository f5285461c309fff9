"""report.html: one self-contained page with a timeline per job (claims, heartbeats, lease deadlines,
effects, acks, abandons) against the faults, so a reader sees *when* ownership moved and why.

Violating jobs come first; the page stays small on big runs by drawing at most MAX_JOBS rows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from chaos import events
from chaos.check.verdict import Verdict
from chaos.events import Event

MAX_JOBS = 200
WIDTH = 900
ROW = 22
LEFT = 160  # room for "job-0001 dead_lettered"
MARKS = {  # probe kind -> (shape, colour, label)
    events.PROBE_CLAIM: ("rect", "#1f77b4", "claim"),
    events.PROBE_HEARTBEAT: ("tick", "#7f7f7f", "heartbeat"),
    events.PROBE_EFFECT: ("circle", "#2ca02c", "effect"),
    events.PROBE_ACK: ("diamond", "#9467bd", "ack"),
    events.PROBE_ABANDON: ("cross", "#ff7f0e", "abandon"),
}
STYLE = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}.pass{color:#2ca02c}.fail{color:#d62728}
.inconclusive,.error{color:#ff7f0e}svg{display:block}code{font-size:12px}"""


def render(verdict: Verdict, ledger: Sequence[Event]) -> str:
    by_job: dict[str, list[Event]] = {}
    for event in ledger:
        if event.job is not None and event.kind in MARKS:
            by_job.setdefault(event.job, []).append(event)
    marked = [e.mono for marks in by_job.values() for e in marks]
    origin = min(marked, default=ledger[0].mono if ledger else 0.0)  # the server's start-up is not drawn
    applied = [e for e in ledger if e.kind == events.FAULT_APPLIED]
    span = max(marked + [e.mono for e in applied], default=origin) - origin or 1.0
    scale = (WIDTH - LEFT - 10) / span
    faults = [e for e in applied if e.mono >= origin]
    violating = [v.job for v in verdict.violations if v.job]
    order = list(dict.fromkeys(violating + sorted(verdict.jobs)))[:MAX_JOBS]
    lease = verdict.contract.get("lease_s")
    parts = [f"<!doctype html><meta charset=utf-8><title>queue-chaos {html.escape(verdict.target)} x "
             f"{html.escape(verdict.scenario)}</title><style>{STYLE}</style>",
             f"<h1 class='{verdict.verdict}'>{verdict.verdict.upper()}: {html.escape(verdict.target)} x "
             f"{html.escape(verdict.scenario)} (seed {verdict.seed})</h1>", _tables(verdict),
             "<h2>Timeline</h2><p>Red lines: faults. Dashed: the lease deadline after a claim or a successful "
             "heartbeat. Colours and shapes: " + ", ".join(f"<span style=color:{c}>{label}</span>"
                                                          for _, c, label in MARKS.values()) + ".</p>"]
    height = ROW * (len(order) + 1)
    svg = [f"<svg width='{WIDTH}' height='{height}' xmlns='http://www.w3.org/2000/svg' font-size='11'>"]
    step = max(0.5, round(span / 8, 1))
    for i in range(int(span / step) + 1):
        x = LEFT + i * step * scale
        svg.append(f"<text x='{x:.1f}' y='10' fill='#888'>+{i * step:.1f}s</text>")
    for fault in faults:
        x = LEFT + (fault.mono - origin) * scale
        svg.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{height}' stroke='#d62728'>"
                   f"<title>{html.escape(_label(fault, origin))}</title></line>")
    for row, job in enumerate(order):
        y = ROW * (row + 1)
        outcome = verdict.jobs.get(job, "")
        colour = "#d62728" if job in violating else "#222"
        svg.append(f"<text x='0' y='{y + 4}' fill='{colour}'>{html.escape(job)} {html.escape(outcome)}</text>")
        svg.append(f"<line x1='{LEFT}' x2='{WIDTH}' y1='{y}' y2='{y}' stroke='#eee'/>")
        marks = by_job.get(job, [])
        for event in marks:
            x = LEFT + (event.mono - origin) * scale
            svg.append(_mark(event, x, y, origin))
        for deadline in _open_deadlines(marks, lease) if lease else []:
            x = LEFT + (deadline - origin) * scale
            svg.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y - 7}' y2='{y + 7}' stroke='#1f77b4' "
                       "stroke-dasharray='2,2'/>")
    svg.append("</svg>")
    if len(verdict.jobs) > len(order):
        svg.append(f"<p>{len(verdict.jobs) - len(order)} more jobs not drawn; verdict.json has them all.</p>")
    return "\n".join(parts + svg)


def _tables(verdict: Verdict) -> str:
    counts = "".join(f"<tr><td>{html.escape(k)}<td>{v}" for k, v in verdict.counts.items() if v)
    faults = "".join(f"<tr><td>{html.escape(f.kind)}<td>{html.escape(str(f.target))}<td>"
                     f"{'exercised' if f.exercised else 'NOT exercised'}<td>{html.escape(f.why)}"
                     for f in verdict.faults)
    violations = "".join(f"<tr><td>{html.escape(v.kind)}<td>{html.escape(v.job or '')}<td>{html.escape(v.message)}"
                         for v in verdict.violations)
    return (f"<table>{counts}</table><h2>Faults</h2><table>{faults}</table>"
            f"<h2>Violations</h2><table>{violations or '<tr><td>none'}</table>"
            f"<p>Reproduce: <code>{html.escape(verdict.reproduce)}</code></p>")


def _open_deadlines(marks: list[Event], lease: float) -> list[float]:
    """Lease deadlines (claim or successful heartbeat + lease) that passed before that claim ended."""
    deadlines: dict[object, float] = {}
    expired: list[float] = []
    for event in marks:
        token = event.data.get("token")
        due = deadlines.get(token)
        if due is not None and event.mono > due:
            expired.append(due)
            del deadlines[token]
        if event.kind == events.PROBE_CLAIM or (event.kind == events.PROBE_HEARTBEAT and event.data.get("ok")):
            deadlines[token] = event.mono + float(lease)
        elif event.kind in (events.PROBE_ACK, events.PROBE_ABANDON):
            deadlines.pop(token, None)
    return expired + list(deadlines.values())


def _label(event: Event, origin: float) -> str:
    data = " ".join(f"{k}={v}" for k, v in sorted(event.data.items()) if k not in ("clock", "pid"))
    return f"+{event.mono - origin:.3f}s {event.kind} {event.worker or ''} {data}"


def _mark(event: Event, x: float, y: int, origin: float) -> str:
    shape, colour, _ = MARKS[event.kind]
    if event.kind in (events.PROBE_HEARTBEAT, events.PROBE_ACK) and not event.data.get("ok", True):
        colour = "#d62728"  # a failed extension, a refused ack
    title = f"<title>{html.escape(_label(event, origin))}</title>"
    if shape == "rect":
        return f"<rect x='{x - 3:.1f}' y='{y - 6}' width='6' height='12' fill='{colour}'>{title}</rect>"
    if shape == "circle":
        return f"<circle cx='{x:.1f}' cy='{y}' r='5' fill='{colour}'>{title}</circle>"
    if shape == "diamond":
        return (f"<polygon points='{x:.1f},{y - 6} {x + 5:.1f},{y} {x:.1f},{y + 6} {x - 5:.1f},{y}' "
                f"fill='{colour}'>{title}</polygon>")
    if shape == "cross":
        return (f"<path d='M{x - 4:.1f},{y - 4}L{x + 4:.1f},{y + 4}M{x + 4:.1f},{y - 4}L{x - 4:.1f},{y + 4}' "
                f"stroke='{colour}' stroke-width='2'>{title}</path>")
    return f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y - 4}' y2='{y + 4}' stroke='{colour}'>{title}</line>"
