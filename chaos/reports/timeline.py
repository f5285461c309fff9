"""report.html: one self-contained page (inline CSS, SVG and script; nothing fetched) that shows a run at a
glance, built from the verdict and the ledger alone.

- the verdict, then tables (counts, faults, violations, anomalies, exits) with header rows;
- violating jobs first: a section per violation, with that job's own timeline (zoomed to its life) and
  its witness written out as a proof in words, one sentence per witness entry;
- the run: one lane per worker, one for the nemesis (faults) and one for the server, on one time axis.
  Each execution (claim to its ack or abandon, or its worker's exit or kill, keyed by job, worker and
  token) is a span in the lane of the worker that held it, with its lease deadlines (claim or accepted
  heartbeat + lease_s), extensions, effects, acks (accepted, rejected, unknown) and abandons; faults are
  shaded bands over the lanes they hit (applied to healed) or a line (a kill), labelled; a span still
  open at the end reaches the end-of-run mark;
- a row per job (violating jobs, then the first MAX_JOBS others) on the same axis.

Every mark has an SVG <title> (hover), and a click shows its event's whole JSON in a panel.

Big runs stay small and quick: the worker lanes draw every span, but at most SPAN_CAP of them one by one
(violating jobs first, then spans that did not end in an accepted ack); the others are merged per pixel
into one path per lane row, and the event marks of at most MARKED_SPANS spans are drawn in the lanes.
"""

from __future__ import annotations

import bisect
import heapq
import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos import events
from chaos.check.verdict import Verdict, Violation
from chaos.events import Event
from chaos.faults import fault_kind

MAX_JOBS = 100  # job rows drawn besides the violating jobs'
MAX_SECTIONS = 40  # violation sections (the table lists every violation)
SPAN_CAP = 1000  # spans drawn one by one in the run's lanes; the rest are merged per pixel
MARKED_SPANS = 200  # spans whose event marks are drawn in the run's lanes (violating jobs first)
PROOF_HEAD, PROOF_TAIL = 12, 48  # a witness longer than both is shown as its head, a gap, its tail
WIDTH, LEFT, RIGHT = 1200, 132, 36
ROW, PAD, AXIS = 20, 4, 24  # effects in a row's upper half, acks and abandons in its lower half
QUIET = frozenset(("clock", "sent", "pid", "argv", "create_time", "log_tail"))  # left out of titles (JSON has them)
SERVER, NEMESIS = "server", "nemesis"
PROBES = frozenset((events.PROBE_CLAIM, events.PROBE_HEARTBEAT, events.PROBE_EFFECT, events.PROBE_ACK,
                    events.PROBE_ABANDON))
SERVER_KINDS = frozenset((events.BACKEND_START, events.BACKEND_RESTART, events.BACKEND_EXIT))
ENDINGS = {  # how a span ended -> words for its title
    "ack": "its ack was accepted", "ack-rejected": "its ack was rejected", "ack-unknown": "its ack (outcome unknown)",
    "abandon": "it abandoned the job", "exit": "its worker exited", "killed": "its worker was killed",
    "reclaimed": "it claimed the job again", "open": "still open at the end of the run",
}

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:20px 24px 120px;color:#222;max-width:1260px}
h1{margin:0 0 4px}h2{margin:28px 0 8px;border-bottom:1px solid #ddd}h3{margin:16px 0 4px}
.pass{color:#2a8a2a}.fail{color:#c62828}.inconclusive,.error{color:#c66a00}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;
vertical-align:top}thead th{background:#f3f3f3}td.n{text-align:right}.tables{display:flex;gap:24px;flex-wrap:wrap}
.scroll{max-height:340px;overflow-y:auto}
code{font-size:12px}nav a{margin-right:12px}.note{color:#666}
section.violation{border-left:4px solid #c62828;padding:2px 0 8px 12px;margin:12px 0 20px}
ol.proof{margin:4px 0;padding-left:28px}ol.proof li{cursor:pointer}ol.proof li:hover{background:#f5f5ff}
ol.proof li.derived{color:#555;font-style:italic;list-style:circle}ol.proof li.gap{list-style:none;color:#888}
.wide{overflow-x:auto}svg.timeline{display:block;font:11px system-ui,sans-serif}
.lane-bg{fill:#fafafa;stroke:#e4e4e4}.nemesis .lane-bg{fill:#fdf3f3}.server .lane-bg{fill:#f3f8f3}
.lane-label{fill:#333}.lane-label.viol{fill:#c62828;font-weight:bold}.grid{stroke:#eee}.tick{fill:#777}
.span{fill:#bcd3ee;stroke:#5b8cc4;stroke-width:.6}.span.viol{stroke:#c62828;stroke-width:1.4}
.span.e-ack-rejected,.span.e-abandon,.span.e-ack-unknown{fill:#f8d9b0}.span.e-killed,.span.e-exit{fill:#e8c6c6}
.span.e-open{fill:url(#open-hatch);stroke:#c62828}.span.merged{fill:#9dbbe0;stroke:none}
.span.merged.odd{fill:#e8b9a0}.who{fill:#445;font-size:9px}
.m{cursor:pointer}.m:hover,.selected{stroke:#000!important;stroke-width:2!important}
.claim{fill:#1f5fa8}.hb{stroke:#777;stroke-width:2}.hb.failed{stroke:#c62828;stroke-width:2.5;stroke-dasharray:2,1}
.effect{fill:#2a8a2a}.effect.refused{fill:#fff;stroke:#2a8a2a;stroke-width:1.5}
.ack{fill:#7b3fb0}.ack.rejected{fill:#fff;stroke:#c62828;stroke-width:2}
.ack.unknown{fill:#fff;stroke:#7b3fb0;stroke-width:1.5;stroke-dasharray:2,1}
.abandon{stroke:#e07000;stroke-width:2.2;fill:none}.lease{stroke:#1f5fa8;stroke-width:1;stroke-dasharray:3,2}
.deadline{stroke:#1f5fa8;stroke-width:1.5;stroke-dasharray:2,2}.deadline.expired{stroke:#c62828;stroke-width:2}
.pstart{fill:#666}.pexit{fill:#333}.pexit.killed{fill:#c62828}.up{fill:#cfe6cf}.down{fill:#e8a0a0}
.sstart{fill:#2a8a2a}.srestart{fill:#c62828}.sexit{fill:#333}
.band{fill:#e53935;fill-opacity:.16;stroke:#e53935;stroke-opacity:.5}.band-line{stroke:#e53935;stroke-width:2}
.band-label{fill:#b71c1c;font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:3px}.end-line{stroke:#000;stroke-width:1.5;stroke-dasharray:6,3}
.end-label{fill:#000;font-weight:bold}.stuck{stroke:#c62828;stroke-width:3;stroke-dasharray:5,3}
#details{position:fixed;right:12px;bottom:12px;width:520px;max-height:60vh;overflow:auto;background:#fff;
border:1px solid #888;box-shadow:0 2px 12px rgba(0,0,0,.25);padding:8px 12px;z-index:9}
#details pre{font-size:12px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
#details-close{float:right}.legend svg{vertical-align:middle}.legend span{margin-right:14px;white-space:nowrap}
"""

SCRIPT = """(function(){
var data=JSON.parse(document.getElementById('chaos-events').textContent);
var panel=document.getElementById('details'),pre=document.getElementById('event-json'),
head=document.getElementById('details-title'),also=document.getElementById('details-also'),chosen=null;
function show(seq,here){var e=data[seq];if(!e)return;
head.textContent='#'+e.seq+' '+e.kind+' at +'+e.t.toFixed(3)+' s'+(e.worker?' ('+e.worker+')':'');
pre.textContent=JSON.stringify(e,null,2);panel.hidden=false;also.textContent='';
if(here.length>1){also.append(here.length+' events here: ');here.forEach(function(s){
var b=document.createElement('button');b.type='button';b.setAttribute('data-pick',s);
b.textContent='#'+s+' '+data[s].kind+(data[s].worker?' '+data[s].worker:'');b.disabled=s===seq;
b.onclick=function(){show(s,here);};also.append(b,' ');});}}
document.addEventListener('click',function(ev){var t=ev.target;if(!(t instanceof Element))return;
if(t.id==='details-close'){panel.hidden=true;return;}if(t.closest('#details'))return;
var el=t.closest('[data-seq]');if(!el)return;
var here=[];document.elementsFromPoint(ev.clientX,ev.clientY).forEach(function(h){
var s=h.getAttribute&&h.getAttribute('data-seq');if(s&&data[s]&&here.indexOf(s)<0)here.push(s);});
var seq=el.getAttribute('data-seq');if(here.indexOf(seq)<0)here.unshift(seq);
if(chosen)chosen.classList.remove('selected');chosen=el;el.classList.add('selected');show(seq,here);});
document.addEventListener('keydown',function(ev){if(ev.key==='Escape')panel.hidden=true;});
})();"""

DEFS = ("<defs><pattern id='open-hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
        "patternTransform='rotate(45)'><rect width='6' height='6' fill='#f6d4d4'/>"
        "<line x1='0' y1='0' x2='0' y2='6' stroke='#c62828' stroke-width='2'/></pattern></defs>")


# -- the run, as spans, bands and points ------------------------------------------------------------------


@dataclass(eq=False)
class Span:
    """One execution: a claim to its ack or abandon, or its worker's exit or kill (None: open at the end)."""

    job: str
    worker: str
    token: str | None
    start: float
    marks: list[Event]  # its probes in order, the claim first (when there was one)
    end: float | None = None
    how: str = "open"
    closer: Event | None = None  # the event that ended it (an ack, an abandon, a process exit, a kill)

    def until(self, run_end: float) -> float:
        return run_end if self.end is None else max(self.end, self.start)


@dataclass(eq=False)
class Band:
    """A fault from its application to its healing (or a line, for one that is over at once)."""

    id: str
    kind: str
    target: str
    applied: Event
    journal: Event | None
    start: float
    end: float | None = None  # None: instantaneous (a kill), else healed or the end of the run
    healed: Event | None = None
    lasting: bool = False  # a kind that is healed (stop, partition, toxics) or lasts (a clock shift)
    everyone: bool = False  # it reaches every worker (the backend is shared)

    def label(self) -> str:
        return f"{self.kind} {self.target}"

    def hits(self, lane: str) -> bool:
        if lane == NEMESIS:
            return True
        if lane == SERVER:
            return self.target == events.BACKEND
        return self.everyone or lane == self.target


@dataclass
class Run:
    origin: float
    end: float  # the end of the run: its run.end event, else its last event
    end_event: Event | None
    lease: float | None
    spans: list[Span] = field(default_factory=list)
    by_job: dict[str, list[Span]] = field(default_factory=dict)
    lanes: list[str] = field(default_factory=list)  # every process the supervisor ran and every prober
    roles: dict[str, str] = field(default_factory=dict)
    bands: list[Band] = field(default_factory=list)
    journal: dict[str, Event] = field(default_factory=dict)  # fault id -> its journal entry
    server: list[Event] = field(default_factory=list)
    processes: dict[str, list[Event]] = field(default_factory=dict)
    job_times: dict[str, tuple[float, float]] = field(default_factory=dict)
    by_seq: dict[int, Event] = field(default_factory=dict)
    beats: dict[str, list[float]] | None = None  # lease_scope = worker: each worker's accepted heartbeats

    def extensions(self, worker: str) -> list[float] | None:
        return None if self.beats is None else self.beats.get(worker, [])

    def rel(self, mono: float) -> float:
        return mono - self.origin


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def build(ledger: Sequence[Event], lease: float | None, worker_leases: bool = False) -> Run:
    """One pass over the ledger: spans by (job, worker, token), fault bands, server and process events.
    `worker_leases`: a heartbeat extends every job its worker holds (lease_scope = worker)."""
    origin = ledger[0].mono if ledger else 0.0
    run = Run(origin, ledger[-1].mono if ledger else 0.0, None, lease, beats={} if worker_leases else None)
    open_by_worker: dict[str, dict[tuple[str, str | None], Span]] = {}
    job_times = run.job_times
    seen: dict[str, None] = {}
    healing: dict[str, Band] = {}

    def close(span: Span, event: Event, how: str) -> None:
        span.end, span.how, span.closer = event.mono, how, event
        del open_by_worker[span.worker][(span.job, span.token)]

    def close_worker(worker: str | None, event: Event, how: str) -> None:
        for span in list(open_by_worker.get(worker or "", {}).values()):
            close(span, event, how)

    for event in ledger:
        kind, job, worker = event.kind, event.job, event.worker
        run.by_seq[event.seq] = event
        if job is not None:
            first_last = job_times.get(job)
            job_times[job] = (event.mono, event.mono) if first_last is None else (first_last[0], event.mono)
            if kind in PROBES and worker is not None:
                token = event.data.get("token")
                key = (job, token if isinstance(token, str) else None)
                held = open_by_worker.setdefault(worker, {})
                span = held.get(key)
                if kind == events.PROBE_CLAIM:
                    if span is not None:
                        close(span, event, "reclaimed")
                    span = Span(job, worker, key[1], event.mono, [event])
                    held[key] = span
                    run.spans.append(span)
                    seen.setdefault(worker)
                    continue
                if span is None:  # a probe of an execution whose claim the ledger lacks
                    span = Span(job, worker, key[1], event.mono, [])
                    held[key] = span
                    run.spans.append(span)
                    seen.setdefault(worker)
                span.marks.append(event)
                if run.beats is not None and kind == events.PROBE_HEARTBEAT and event.data.get("ok"):
                    run.beats.setdefault(worker, []).append(event.mono)
                if kind == events.PROBE_ACK:
                    ok = event.data.get("ok")
                    close(span, event, "ack" if ok is True else "ack-rejected" if ok is False else "ack-unknown")
                elif kind == events.PROBE_ABANDON:
                    close(span, event, "abandon")
            continue
        if kind == events.PROCESS_EXIT:
            run.processes.setdefault(worker or "?", []).append(event)
            close_worker(worker, event, "killed" if event.data.get("signal") else "exit")
        elif kind == events.PROCESS_START:
            run.processes.setdefault(worker or "?", []).append(event)
            run.roles.setdefault(worker or "?", str(event.data.get("role") or "worker"))
            seen.setdefault(worker or "?")
        elif kind == events.FAULT:
            run.journal[str(event.data.get("id"))] = event
        elif kind == events.FAULT_APPLIED:
            fid = str(event.data.get("id"))
            journal = run.journal.get(fid)
            fkind = str(journal.data.get("kind")) if journal is not None else "fault"
            target = str(journal.data.get("target") if journal is not None else worker)
            spec = fault_kind(fkind)
            band = Band(fid, fkind, target, event, journal, event.mono, lasting=spec.heal is not None or
                        fkind == "clock", everyone=spec.reach == "everyone")
            run.bands.append(band)
            if band.lasting:
                healing[fid] = band
            if spec.ends_executions:
                close_worker(target, event, "killed")
        elif kind == events.FAULT_HEALED:
            band_healed = healing.pop(str(event.data.get("id")), None)
            if band_healed is not None:
                band_healed.end, band_healed.healed = event.mono, event
        elif kind in SERVER_KINDS:
            run.server.append(event)
        elif kind == events.RUN_END:
            run.end, run.end_event = event.mono, event
    for band in healing.values():
        band.end = run.end
    for span in run.spans:
        run.by_job.setdefault(span.job, []).append(span)
    run.lanes = sorted(seen, key=_natural)
    return run


def deadlines(span: Span, lease: float, run_end: float, beats: list[float] | None = None) -> list[tuple[float, bool]]:
    """Each lease deadline of the span (claim or accepted heartbeat + lease) and whether it passed while the
    execution still held the job (before its next extension and before its end). `beats`: under lease_scope
    = worker, the times of every accepted heartbeat of the span's worker (each extends all it holds)."""
    end = span.until(run_end)
    claim = span.marks[0].mono if span.marks and span.marks[0].kind == events.PROBE_CLAIM else None
    if beats is None:
        extensions = [m.mono for m in span.marks if m.kind == events.PROBE_CLAIM
                      or (m.kind == events.PROBE_HEARTBEAT and m.data.get("ok"))]
    else:
        extensions = ([] if claim is None else [claim]) + beats[bisect.bisect_right(beats, span.start):
                                                               bisect.bisect_right(beats, end)]
    out: list[tuple[float, bool]] = []
    due: float | None = None
    for at in extensions:
        if due is not None:
            out.append((due, at > due))
        due = at + lease
    if due is not None:
        out.append((due, due < end))
    return out


# -- drawing -------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """A time window drawn across [LEFT, WIDTH - RIGHT]."""

    t0: float
    t1: float

    @property
    def scale(self) -> float:
        return (WIDTH - LEFT - RIGHT) / max(self.t1 - self.t0, 1e-6)

    def x(self, mono: float) -> float:
        return LEFT + (min(max(mono, self.t0), self.t1) - self.t0) * self.scale

    def shows(self, start: float, end: float) -> bool:
        return end >= self.t0 and start <= self.t1


@dataclass
class Page:
    """What the page's parts share: the run, the verdict's facts, and the events its marks show on click."""

    run: Run
    violating: set[str]
    outcomes: dict[str, str]
    shown: dict[int, Event] = field(default_factory=dict)

    def seq(self, event: Event) -> str:
        self.shown[event.seq] = event
        return f" data-seq='{event.seq}'"

    def title(self, event: Event) -> str:
        return f"<title>{_esc(_describe(event, self.run.origin))}</title>"


@dataclass
class Lane:
    name: str
    label: str
    kind: str  # worker, nemesis, server, job
    spans: list[Span] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # each span's row within the lane
    height: int = ROW + 2 * PAD
    y: int = 0
    tail: tuple[float, str] | None = None  # a stuck job: still held by the queue from then to the end of the run


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _short(value: object) -> str:
    text = str(value)
    return text[:8] + "…" if len(text) > 12 else text


def _describe(event: Event, origin: float) -> str:
    data = " ".join(f"{k}={_short(v) if k == 'token' else v}" for k, v in sorted(event.data.items())
                    if k not in QUIET)
    who = " ".join(x for x in (event.worker, event.job) if x)
    return f"+{event.mono - origin:.3f}s {event.kind} {who} {data}".rstrip()


def _stack(spans: list[Span], run_end: float) -> tuple[list[int], int]:
    """Rows for spans that overlap in time (interval partitioning): each span's row, and how many rows."""
    order = sorted(range(len(spans)), key=lambda i: spans[i].start)
    rows = [0] * len(spans)
    free: list[tuple[float, int]] = []  # (end, row) of rows in use
    count = 0
    for i in order:
        span = spans[i]
        if free and free[0][0] < span.start:
            _, row = heapq.heappop(free)
        else:
            row, count = count, count + 1
        rows[i] = row
        heapq.heappush(free, (span.until(run_end), row))
    return rows, max(count, 1)


def _axis(frame: Frame, height: int, origin: float) -> list[str]:
    """Labelled ticks (+0.0s ...) at a round step, with grid lines through every lane."""
    span = frame.t1 - frame.t0
    raw = span / 10 if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    decimals = max(0, min(4, -math.floor(math.log10(step))))
    first = math.ceil((frame.t0 - origin) / step - 1e-9)
    out = []
    tick = first
    while origin + tick * step <= frame.t1 + 1e-9:
        x = frame.x(origin + tick * step)
        out.append(f"<line class='grid' x1='{x:.1f}' x2='{x:.1f}' y1='{AXIS - 6}' y2='{height}'/>"
                   f"<text class='tick' x='{x:.1f}' y='{AXIS - 9}' text-anchor='middle'>"
                   f"+{tick * step:.{decimals}f}s</text>")
        tick += 1
    return out


def _svg(page: Page, frame: Frame, lanes: list[Lane], *, css: str, spans_one_by_one: set[Span] | None = None,
         marked: set[Span] | None = None, bands_over: str = "lanes", every_deadline: bool = True) -> str:
    """Lanes on one time axis. `spans_one_by_one`: the spans drawn as their own element (None: all of them;
    the others are merged per pixel); `marked`: the spans whose event marks are drawn (None: every one).
    `bands_over`: "lanes" shades each lane a fault hit, "all" the whole height (job rows); `every_deadline`:
    draw each lease deadline, else only those that passed while held and the last."""
    run = page.run
    y = AXIS
    for lane in lanes:
        lane.y, y = y, y + lane.height
    height = y + 18
    out = [f"<svg class='timeline {css}' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
           f"viewBox='0 0 {WIDTH} {height}'>"]
    out += _axis(frame, y, run.origin)
    others = [lane.name for lane in lanes if lane.kind != NEMESIS]
    bands = [band for band in run.bands if any(band.hits(name) for name in others)] if bands_over == "lanes" else []
    for lane in lanes:
        out.append(f"<g class='lane {lane.kind}' data-lane='{_esc(lane.name)}'>"
                   f"<rect class='lane-bg' x='{LEFT}' y='{lane.y}' width='{WIDTH - LEFT - RIGHT}' "
                   f"height='{lane.height}'/>")
        label_css = " viol" if lane.kind == "job" and lane.name in page.violating else ""
        out.append(f"<text class='lane-label{label_css}' x='4' y='{lane.y + min(lane.height, 2 * ROW) / 2 + 4:.0f}'>"
                   f"{_esc(lane.label)}</text>")
        if bands:
            out += _bands(page, frame, lane, bands)
        if lane.kind == SERVER:
            out += _server(page, frame, lane)
        out += _processes(page, frame, lane)
        if lane.tail is not None and frame.shows(lane.tail[0], run.end):
            mid = lane.y + lane.height / 2
            out.append(f"<line class='stuck' x1='{frame.x(lane.tail[0]):.1f}' x2='{frame.x(run.end):.1f}' "
                       f"y1='{mid:.1f}' y2='{mid:.1f}'><title>{_esc(lane.tail[1])}</title></line>")
        out += _spans(page, frame, lane, spans_one_by_one, marked, every_deadline)
        out.append("</g>")
    if bands_over == "all":
        out += _bands_across(page, frame, AXIS, y)
    if frame.t0 <= run.end <= frame.t1:
        x = frame.x(run.end)
        seq = page.seq(run.end_event) if run.end_event is not None else ""
        out.append(f"<g class='end'{seq}><line class='end-line' x1='{x:.1f}' x2='{x:.1f}' y1='{AXIS - 4}' "
                   f"y2='{y + 4}'/><text class='end-label' x='{x - 2:.1f}' y='{y + 15}' text-anchor='end'>"
                   f"end of run +{run.rel(run.end):.3f}s</text><title>the end of the run, "
                   f"+{run.rel(run.end):.3f}s</title></g>")
    out.append("</svg>")
    return "".join(out)


def _bands(page: Page, frame: Frame, lane: Lane, bands: list[Band]) -> list[str]:
    """The faults that hit this lane (the nemesis lane: every fault drawn, labelled where there is room)."""
    out: list[str] = []
    labels: list[str] = []
    free_from = 0.0  # where the next label may start without overlapping the last one
    for band in bands:
        end = band.start if band.end is None else band.end
        if not band.hits(lane.name) or not frame.shows(band.start, end):
            continue
        x0, x1 = frame.x(band.start), frame.x(end)
        event = band.journal if lane.kind == NEMESIS and band.journal is not None else band.applied
        healed = f", healed at +{page.run.rel(band.end):.3f}s" if band.healed is not None and band.end else ""
        lasting = " (until the end of the run)" if band.lasting and band.healed is None else ""
        title = (f"<title>fault {_esc(band.id)}: {_esc(band.label())}, applied at "
                 f"+{page.run.rel(band.start):.3f}s{healed}{lasting}</title>")
        if band.end is None:
            out.append(f"<line class='band-line m' x1='{x0:.1f}' x2='{x0:.1f}' y1='{lane.y}' "
                       f"y2='{lane.y + lane.height}'{page.seq(event)}>{title}</line>")
        else:
            out.append(f"<rect class='band m' x='{x0:.1f}' y='{lane.y}' width='{max(x1 - x0, 2):.1f}' "
                       f"height='{lane.height}'{page.seq(event)}>{title}</rect>")
        if lane.kind == NEMESIS and x0 >= free_from:
            labels.append(f"<text class='band-label' x='{x0 + 3:.1f}' y='{lane.y + lane.height - 5}'>"
                          f"{_esc(band.label())}</text>")
            free_from = x0 + 8 + 6.5 * len(band.label())
    return out + labels  # over every band


def _bands_across(page: Page, frame: Frame, top: int, bottom: int) -> list[str]:
    out = []
    free_from = 0.0
    for band in page.run.bands:
        end = band.start if band.end is None else band.end
        if not frame.shows(band.start, end):
            continue
        x0, x1 = frame.x(band.start), frame.x(end)
        title = f"<title>fault {_esc(band.id)}: {_esc(band.label())}</title>"
        if band.end is None:
            out.append(f"<line class='band-line m' x1='{x0:.1f}' x2='{x0:.1f}' y1='{top}' y2='{bottom}'"
                       f"{page.seq(band.applied)}>{title}</line>")
        else:
            out.append(f"<rect class='band m' x='{x0:.1f}' y='{top}' width='{max(x1 - x0, 2):.1f}' "
                       f"height='{bottom - top}'{page.seq(band.applied)}>{title}</rect>")
        if x0 >= free_from:
            out.append(f"<text class='band-label' x='{x0 + 3:.1f}' y='{bottom + 13}'>{_esc(band.label())}</text>")
            free_from = x0 + 8 + 6.5 * len(band.label())
    return out


def _server(page: Page, frame: Frame, lane: Lane) -> list[str]:
    run, out = page.run, []
    mid = lane.y + lane.height / 2
    up: float | None = None
    for event in run.server:
        if event.kind == events.BACKEND_START:
            up = event.mono
        elif event.kind == events.BACKEND_EXIT and up is not None:
            if frame.shows(up, event.mono):
                out.append(f"<rect class='up' x='{frame.x(up):.1f}' y='{mid - 3:.1f}' "
                           f"width='{max(frame.x(event.mono) - frame.x(up), 1):.1f}' height='6'/>")
            up = None
    if up is not None and frame.shows(up, run.end):
        out.append(f"<rect class='up' x='{frame.x(up):.1f}' y='{mid - 3:.1f}' "
                   f"width='{max(frame.x(run.end) - frame.x(up), 1):.1f}' height='6'/>")
    for event in run.server:
        if not frame.t0 <= event.mono <= frame.t1:
            continue
        x = frame.x(event.mono)
        if event.kind == events.BACKEND_RESTART:
            down = float(event.data.get("down_s") or 0.0)
            x0 = frame.x(event.mono - down)
            out.append(f"<rect class='down' x='{x0:.1f}' y='{mid - 5:.1f}' width='{max(x - x0, 1):.1f}' height='10'/>")
            out.append(f"<rect class='m srestart' x='{x - 2:.1f}' y='{lane.y + 2}' width='4' "
                       f"height='{lane.height - 4}'{page.seq(event)}>{page.title(event)}</rect>")
        elif event.kind == events.BACKEND_START:
            out.append(f"<path class='m sstart' d='M{x:.1f},{mid - 6:.1f}l8,6l-8,6z'{page.seq(event)}>"
                       f"{page.title(event)}</path>")
        else:
            out.append(f"<rect class='m sexit' x='{x - 2:.1f}' y='{mid - 6:.1f}' width='4' height='12'"
                       f"{page.seq(event)}>{page.title(event)}</rect>")
    return out


def _processes(page: Page, frame: Frame, lane: Lane) -> list[str]:
    if lane.kind != "worker":
        return []
    out = []
    for event in page.run.processes.get(lane.name, []):
        if not frame.t0 <= event.mono <= frame.t1:
            continue
        x = frame.x(event.mono)
        if event.kind == events.PROCESS_START:
            out.append(f"<path class='m pstart' d='M{x:.1f},{lane.y + 1}l6,5l-6,5z'{page.seq(event)}>"
                       f"{page.title(event)}</path>")
        else:
            killed = " killed" if event.data.get("signal") else ""
            out.append(f"<rect class='m pexit{killed}' x='{x - 1.5:.1f}' y='{lane.y}' width='3' "
                       f"height='{lane.height}'{page.seq(event)}>{page.title(event)}</rect>")
    return out


def _spans(page: Page, frame: Frame, lane: Lane, one_by_one: set[Span] | None, marked: set[Span] | None,
           every_deadline: bool) -> list[str]:
    run, out = page.run, []
    merged: dict[tuple[int, bool], list[tuple[float, float]]] = {}
    drawn: list[tuple[Span, int]] = []
    for span, row in zip(lane.spans, lane.rows, strict=True):
        end = span.until(run.end)
        if not frame.shows(span.start, end):
            continue
        top = lane.y + PAD + row * ROW
        x0, x1 = frame.x(span.start), frame.x(end)
        if one_by_one is not None and span not in one_by_one:
            merged.setdefault((row, span.how != "ack"), []).append((x0, max(x1, x0 + 1)))
            continue
        css = "e-" + span.how + (" viol" if span.job in page.violating else "")
        ended = ENDINGS.get(span.how, span.how)
        when = f" at +{run.rel(span.end):.3f}s" if span.end is not None else ""
        token = f", token {_short(span.token)}" if span.token else ""
        out.append(f"<rect class='span {css}' x='{x0:.1f}' y='{top + 1}' width='{max(x1 - x0, 1.5):.1f}' "
                   f"height='{ROW - 2}'><title>{_esc(span.job)}: {_esc(span.worker)} held it from "
                   f"+{run.rel(span.start):.3f}s; {ended}{when}{_esc(token)}</title></rect>")
        if lane.kind == "job":
            out.append(f"<text class='who' x='{x0 + 2:.1f}' y='{top + ROW - 4}'>{_esc(span.worker)}</text>")
        drawn.append((span, top))
    for (row, odd), intervals in merged.items():
        intervals.sort()
        y = lane.y + PAD + row * ROW + 1
        path, (a, b) = [], intervals[0]
        for c, d in intervals[1:]:
            if c <= b + 0.5:
                b = max(b, d)
                continue
            path.append(f"M{a:.1f} {y}h{b - a:.1f}v{ROW - 2}h{a - b:.1f}z")
            a, b = c, d
        path.append(f"M{a:.1f} {y}h{b - a:.1f}v{ROW - 2}h{a - b:.1f}z")
        what = "that did not end in an accepted ack" if odd else "ended by an accepted ack"
        out.append(f"<path class='span merged{' odd' if odd else ''}' d='{''.join(path)}'><title>{len(intervals)} "
                   f"spans of {_esc(lane.name)} {what}, merged at this scale</title></path>")
    for span, top in drawn:
        if marked is None or span in marked:
            out += _marks(page, frame, span, top, every_deadline)
    return out


def _marks(page: Page, frame: Frame, span: Span, top: int, every_deadline: bool) -> list[str]:
    run, out = page.run, []
    upper, lower = top + 5.5, top + ROW - 6.5  # an effect and its ack a moment later do not cover each other
    if run.lease is not None and span.marks and span.marks[0].kind == events.PROBE_CLAIM:
        dues = deadlines(span, run.lease, run.end, run.extensions(span.worker))
        last = max(due for due, _ in dues)
        out.append(f"<line class='lease' x1='{frame.x(span.start):.1f}' x2='{frame.x(last):.1f}' "
                   f"y1='{top + ROW - 0.5}' y2='{top + ROW - 0.5}'><title>lease of {_esc(span.worker)} on "
                   f"{_esc(span.job)}: claim or accepted heartbeat + lease_s {run.lease}s</title></line>")
        for due, expired in dues:
            if not frame.t0 <= due <= frame.t1 or not (every_deadline or expired or due == last):
                continue
            x = frame.x(due)
            what = "passed while it still held the job" if expired else "moved on by an extension or the end"
            out.append(f"<line class='deadline{' expired' if expired else ''}' x1='{x:.1f}' x2='{x:.1f}' "
                       f"y1='{top}' y2='{top + ROW}'><title>lease deadline of {_esc(span.worker)} on "
                       f"{_esc(span.job)} at +{run.rel(due):.3f}s: {what}</title></line>")
    for event in span.marks:
        if not frame.t0 <= event.mono <= frame.t1:
            continue
        x = frame.x(event.mono)
        seq, title, kind = page.seq(event), page.title(event), event.kind
        if kind == events.PROBE_CLAIM:
            out.append(f"<rect class='m claim' x='{x - 1.5:.1f}' y='{top}' width='3' height='{ROW}'{seq}>"
                       f"{title}</rect>")
        elif kind == events.PROBE_HEARTBEAT:
            failed = " failed" if not event.data.get("ok") else ""
            out.append(f"<line class='m hb{failed}' x1='{x:.1f}' x2='{x:.1f}' y1='{top - (2 if failed else 0)}' "
                       f"y2='{top + ROW + (2 if failed else 0)}'{seq}>{title}</line>")
        elif kind == events.PROBE_EFFECT:
            refused = " refused" if event.data.get("accepted") is False else ""
            out.append(f"<circle class='m effect{refused}' cx='{x:.1f}' cy='{upper:.1f}' r='4.5'{seq}>{title}</circle>")
        elif kind == events.PROBE_ACK:
            ok = event.data.get("ok")
            how = "" if ok is True else " rejected" if ok is False else " unknown"
            out.append(f"<path class='m ack{how}' d='M{x:.1f},{lower - 5:.1f}l5,5l-5,5l-5,-5z'{seq}>{title}</path>")
        elif kind == events.PROBE_ABANDON:
            out.append(f"<path class='m abandon' d='M{x - 4:.1f},{lower - 4:.1f}l8,8m0,-8l-8,8'{seq}>{title}</path>")
    closer = span.closer
    if closer is not None and closer.kind in (events.PROCESS_EXIT, events.FAULT_APPLIED):
        x = frame.x(closer.mono)
        out.append(f"<path class='m abandon' d='M{x - 3:.1f},{top:.1f}v{ROW}'{page.seq(closer)}>"
                   f"{page.title(closer)}</path>")
    return out


# -- the page's parts ----------------------------------------------------------------------------------


def _window(run: Run, job: str) -> Frame:
    """The job's life: its executions (an open one to the end of the run), else its events, and the faults
    over them, with a margin."""
    spans = run.by_job.get(job, [])
    if spans:
        t0 = min(s.start for s in spans)
        t1 = max(max([s.until(run.end)] + [m.mono for m in s.marks]) for s in spans)
    else:
        t0, t1 = run.job_times.get(job, (run.origin, run.end))
    for band in run.bands:
        end = band.start if band.end is None else band.end
        if any(band.hits(s.worker) and band.start <= s.until(run.end) and end >= s.start for s in spans):
            t0, t1 = min(t0, band.start), max(t1, band.start if band.end is None else min(end, run.end))
    margin = max((t1 - t0) * 0.06, 0.02)
    return Frame(max(run.origin, t0 - margin), min(max(run.end, t1), t1 + margin))


def _stuck_since(run: Run, job: str, outcome: str) -> float | None:
    """For a stuck job, since when nothing was doing it: its last execution's end, else its first event."""
    if outcome != "stuck":
        return None
    spans = run.by_job.get(job, [])
    if spans:
        return max(s.until(run.end) for s in spans)
    return run.job_times.get(job, (run.origin, run.end))[0]


def _worker_lanes(run: Run, spans: Iterable[Span], names: Iterable[str]) -> list[Lane]:
    """The nemesis and server lanes, then one lane per worker holding its spans (stacked when they overlap)."""
    by_worker: dict[str, list[Span]] = {name: [] for name in names}
    for span in spans:
        by_worker.setdefault(span.worker, []).append(span)
    lanes = [Lane(NEMESIS, "nemesis (faults)", NEMESIS, height=ROW + 2 * PAD + 6),
             Lane(SERVER, "server", SERVER)]
    for name in sorted(by_worker, key=_natural):
        role = run.roles.get(name, "worker")
        lane = Lane(name, name if role == "worker" else f"{name} ({role})", "worker", by_worker[name])
        lane.rows, count = _stack(lane.spans, run.end)
        lane.height = count * ROW + 2 * PAD
        lanes.append(lane)
    return lanes


def _run_section(page: Page) -> str:
    run = page.run
    lanes = _worker_lanes(run, run.spans, run.lanes)
    frame = Frame(run.origin, run.end + max((run.end - run.origin) * 0.01, 0.01))
    one_by_one: set[Span] | None = None
    marked: set[Span] | None = None
    notes = []
    if len(run.spans) > MARKED_SPANS:
        ranked = sorted(run.spans, key=lambda s: (s.job not in page.violating, s.how == "ack", s.start))
        marked = set(ranked[:MARKED_SPANS])
        if len(run.spans) > SPAN_CAP:
            one_by_one = set(ranked[:SPAN_CAP])
            notes.append(f"{SPAN_CAP:,} of them on their own (violating jobs first, then those that did not end in "
                         "an accepted ack), the others merged at this scale")
        notes.append(f"the event marks of {MARKED_SPANS:,} of them (chosen the same way)")
    note = (f"<p class='note'>{len(run.spans):,} executions, every one in its worker's lane: "
            f"{'; '.join(notes)}. The job rows below and each violation's timeline draw every mark.</p>"
            if notes else "")
    svg = _svg(page, frame, lanes, css="lanes", spans_one_by_one=one_by_one, marked=marked,
               every_deadline=marked is None)
    return (f"<section id='run'><h2>Run timeline</h2>{_legend()}{note}<div class='wide'>{svg}</div></section>")


def _jobs_section(page: Page, order: list[str], total: int) -> str:
    run = page.run
    lanes = []
    for job in order:
        lane = Lane(job, f"{job} {page.outcomes.get(job, '')}".rstrip(), "job", run.by_job.get(job, []))
        lane.rows, count = _stack(lane.spans, run.end)
        lane.height = count * ROW + 2 * PAD
        since = _stuck_since(run, job, page.outcomes.get(job, ""))
        if since is not None:
            lane.tail = (since, f"{job} is stuck: the queue still held it at the end of the run")
        lanes.append(lane)
    frame = Frame(run.origin, run.end + max((run.end - run.origin) * 0.01, 0.01))
    svg = _svg(page, frame, lanes, css="jobs", bands_over="all", every_deadline=False) if lanes else "<p>No jobs.</p>"
    more = (f"<p class='note'>{total - len(order):,} more jobs are not drawn as rows (their executions are in the "
            "worker lanes above); verdict.json lists every job's outcome.</p>" if total > len(order) else "")
    return f"<section id='jobs'><h2>Jobs</h2><div class='wide'>{svg}</div>{more}</section>"


def _legend() -> str:
    def icon(body: str) -> str:
        return f"<svg width='18' height='16' viewBox='-9 -8 18 16'>{body}</svg>"

    items = [
        ("<rect class='span' x='-8' y='-5' width='16' height='10'/>", "execution (claim to its end)"),
        ("<rect class='span e-open' x='-8' y='-5' width='16' height='10'/>", "still open at the end"),
        ("<rect class='claim' x='-1.5' y='-7' width='3' height='14'/>", "claim"),
        ("<line class='hb' x1='0' x2='0' y1='-7' y2='7'/>", "heartbeat"),
        ("<line class='hb failed' x1='0' x2='0' y1='-8' y2='8'/>", "failed heartbeat"),
        ("<line class='deadline' x1='0' x2='0' y1='-7' y2='7'/>", "lease deadline"),
        ("<line class='deadline expired' x1='0' x2='0' y1='-7' y2='7'/>", "deadline passed while held"),
        ("<circle class='effect' r='4.5'/>", "effect"),
        ("<circle class='effect refused' r='4'/>", "refused effect"),
        ("<path class='ack' d='M0,-5l5,5l-5,5l-5,-5z'/>", "ack accepted"),
        ("<path class='ack rejected' d='M0,-5l5,5l-5,5l-5,-5z'/>", "ack rejected"),
        ("<path class='ack unknown' d='M0,-5l5,5l-5,5l-5,-5z'/>", "ack, outcome unknown"),
        ("<path class='abandon' d='M-4,-4l8,8m0,-8l-8,8'/>", "abandon"),
        ("<rect class='band' x='-8' y='-7' width='16' height='14'/>", "fault"),
        ("<rect class='pexit killed' x='-1.5' y='-7' width='3' height='14'/>", "worker killed"),
        ("<line class='stuck' x1='-8' x2='8' y1='0' y2='0'/>", "stuck: the queue held it to the end"),
    ]
    return ("<p class='legend'>" + "".join(f"<span>{icon(body)} {label}</span>" for body, label in items)
            + "<br>Hover a mark for its event; click it for the whole event.</p>")


def _tables(verdict: Verdict, anchors: dict[int, str]) -> str:
    counts = "".join(f"<tr><td>{_esc(k)}<td class='n'>{v}" for k, v in verdict.counts.items()
                     if v or k in ("enqueued", "completed", "lost", "stuck"))
    faults = "".join(f"<tr><td>{_esc(f.id)}<td>{_esc(f.kind)}<td>{_esc(f.target or '')}<td>{_esc(f.gate or '')}"
                     f"<td class='{'pass' if f.exercised else 'fail'}'>{'yes' if f.exercised else 'NO'}"
                     f"<td>{_esc(f.why)}"
                     for f in verdict.faults)
    rows = []
    for i, violation in enumerate(verdict.violations):
        anchor = anchors.get(i)
        job = _esc(violation.job or "")
        rows.append(f"<tr><td>{_esc(violation.kind)}<td>{f'<a href=#{anchor}>{job}</a>' if anchor else job}"
                    f"<td>{_esc(violation.message)}")
    parts = [
        "<div class='tables'><div><h2>Counts</h2><table class='counts'><thead><tr><th>outcome<th>jobs</thead>"
        f"<tbody>{counts}</tbody></table></div>",
        "<div><h2>Faults</h2><div class='scroll'><table class='faults'><thead><tr><th>id<th>kind<th>target<th>gate"
        "<th>exercised<th>why"
        f"</thead><tbody>{faults or '<tr><td colspan=6>none'}</tbody></table></div></div></div>",
        "<h2>Violations</h2><div class='scroll'><table class='violations'><thead><tr><th>kind<th>job<th>message</thead>"
        f"<tbody>{''.join(rows) or '<tr><td colspan=3>none'}</tbody></table></div>",
    ]
    if verdict.anomalies:
        parts.append("<h2>Anomalies (allowed by the contract)</h2><table class='anomalies'><thead><tr><th>kind<th>job"
                     "<th>exposure<th>message</thead><tbody>" + "".join(
                         f"<tr><td>{_esc(a.get('kind'))}<td>{_esc(a.get('job') or '')}<td>{_esc(a.get('exposure_s'))}s"
                         f"<td>{_esc(a.get('message'))}" for a in verdict.anomalies) + "</tbody></table>")
    if verdict.exits:
        parts.append("<h2>Exits without the suite's doing</h2><table class='exits'><thead><tr><th>worker<th>pid"
                     "<th>how<th>log</thead><tbody>" + "".join(
                         f"<tr><td>{_esc(e.get('worker'))}<td>{_esc(e.get('pid'))}<td>{_esc(_how(e))}"
                         f"<td><code>{_esc(e.get('log') or '')}</code>" for e in verdict.exits) + "</tbody></table>")
    return "".join(parts)


def _how(exit: dict[str, Any]) -> str:
    return f"signal {exit['signal']}" if exit.get("signal") else f"exit code {exit.get('returncode')}"


# -- the proof in words --------------------------------------------------------------------------------


def _at(t: float) -> str:
    return f"+{t:.3f} s"


def _fault_words(kind: str, target: str, data: dict[str, Any], healed: bool) -> str:
    who = "the server" if target == events.BACKEND else target
    if healed:
        return {"stop": f"{who} was resumed (SIGCONT)", "partition": f"{who}'s link to the server was restored"
                }.get(kind, f"the {kind} fault on {who} was healed")
    pids = f" (pids {', '.join(str(p) for p in data.get('pids') or [])})" if data.get("pids") else ""
    words = {
        "kill": f"{who} was killed (SIGKILL){pids}",
        "stop": f"{who} was stopped (SIGSTOP){pids}",
        "restart": f"{who} was killed and started again (new pid {data.get('new_pid')})",
        "backend_restart": f"the server was restarted ({data.get('mode', '')}, down {data.get('down_s', '?')} s)",
        "partition": f"{who} was cut off from the server ({data.get('mode', 'disable')})",
        "clock": f"{who} ran with its clock shifted by {data.get('offset_s')} s",
    }
    return words.get(kind, f"a {kind} fault took hold of {who}")


def _sentence(entry: dict[str, Any], job: str | None, journal: dict[str, Event]) -> str:
    kind, worker, data = str(entry.get("kind")), entry.get("worker") or "?", entry.get("data") or {}
    what = entry.get("job") or job or "the job"
    at = _at(float(entry.get("t") or 0.0))
    token = f" (token {_short(data['token'])})" if data.get("token") else ""
    if kind == events.PROBE_CLAIM:
        return f"{worker} claimed {what} at {at}{token}."
    if kind == events.PROBE_HEARTBEAT:
        if data.get("ok"):
            return f"{worker} extended its lease on {what} at {at} (heartbeat accepted)."
        return f"{worker}'s heartbeat on {what} failed at {at}: the queue no longer granted it the job."
    if kind == events.PROBE_EFFECT:
        refused = " and the effect boundary refused it" if data.get("accepted") is False else ""
        return f"{worker} made its effect for {what} at {at}{refused}."
    if kind == events.PROBE_ACK:
        ok = data.get("ok")
        outcome = ("the queue accepted it" if ok is True else "the queue rejected it" if ok is False
                   else "whether the queue took it is unknown")
        return f"{worker} acknowledged {what} at {at}, and {outcome}."
    if kind == events.PROBE_ABANDON:
        reason = f" ({data['reason']})" if data.get("reason") else ""
        return f"{worker} abandoned {what} at {at}{reason}."
    if kind in (events.FAULT, events.FAULT_APPLIED, events.FAULT_HEALED):
        fid = str(data.get("id"))
        fault = journal.get(fid)
        fkind = str(data.get("kind") or (fault.data.get("kind") if fault else "fault"))
        target = str(data.get("target") or (fault.data.get("target") if fault else worker))
        if kind == events.FAULT:
            gate = f" at gate {data['gate']}" if data.get("gate") else ""
            return f"The nemesis set out to {fkind} {target} (fault {fid}{gate}) at {at}."
        return f"{_fault_words(fkind, target, data, kind == events.FAULT_HEALED)} at {at} (fault {fid})."
    if kind == events.PROCESS_START:
        return f"{worker} started (pid {data.get('pid')}) at {at}."
    if kind == events.PROCESS_EXIT:
        how = f"killed by {data['signal']}" if data.get("signal") else f"with code {data.get('returncode')}"
        why = "" if data.get("expected", True) else ", on its own"
        return f"{worker} exited ({how}{why}) at {at}."
    if kind == events.ENQUEUE:
        return f"{what} was enqueued at {at}."
    if kind == events.GATE_ARMED:
        return f"Gate {data.get('gate')} was armed ({data.get('spec')}) at {at}."
    if kind == events.GATE_MATCHED:
        return f"{worker} was held at its {data.get('point')} of {what} (gate {data.get('gate')}) at {at}."
    if kind == events.GATE_RELEASED:
        return f"Gate {data.get('gate')} was released at {at}."
    if kind == events.SNAPSHOT:
        owner = f", claimed by {data['owner']}" if data.get("owner") else ""
        attempts = f", after {data['attempts']} attempt(s)" if data.get("attempts") is not None else ""
        return f"The final snapshot found {what} {data.get('state')}{owner}{attempts} at {at}."
    if kind.startswith(events.QUEUE_PREFIX):
        verb = {events.QUEUE_CLAIM: f"a claim of {what} by {worker}",
                events.QUEUE_COMPLETE: f"a completion of {what} by {worker}",
                events.QUEUE_RELEASE: f"{what} taken back from {worker}",
                events.QUEUE_FAIL: f"{what} recorded failed ({worker})"}.get(kind, kind)
        order = f" (its order {data['order']})" if data.get("order") is not None else ""
        return f"The queue's own record shows {verb}{order}, read at {at}."
    if kind == events.COMPLETION:
        return f"The control answered that {worker}'s completion of {what} was {data.get('outcome')}, at {at}."
    if kind == events.BACKEND_RESTART:
        return f"The server restarted ({data.get('mode')}, down {data.get('down_s')} s) at {at}."
    if kind == events.BACKEND_START:
        return f"The server started at {at}."
    if kind == events.BACKEND_EXIT:
        return f"The server exited ({data.get('reason')}) at {at}."
    if kind == events.PROBE_DROPPED:
        return f"A {data.get('point')} probe of {worker} for {what} was dropped ({data.get('reason')}) at {at}."
    if kind == events.DRAINED:
        return f"Every job had settled (drained) at {at}."
    if kind == events.DRAIN_TIMEOUT:
        return f"The run stopped waiting for jobs to settle at {at}."
    who = f" ({worker})" if entry.get("worker") else ""
    return f"{kind}{who} at {at}."


def proof(witness: list[dict[str, Any]], job: str | None, lease: float | None,
          journal: dict[str, Event]) -> list[tuple[int | None, str]]:
    """The witness as sentences (its seq, the sentence), with the lease ends it implies written in where
    they fall: an execution's lease ran out when its claim or last accepted heartbeat + lease_s passed
    before its next extension, ack or abandon (a killed worker's lease runs out all the same)."""
    out: list[tuple[int | None, str]] = []
    due: dict[tuple[str, str | None], float] = {}
    for entry in witness:
        t = float(entry.get("t") or 0.0)
        for key, when in sorted(due.items(), key=lambda item: item[1]):
            if when < t:
                out.append((None, f"{key[0]}'s lease on {job} ran out at {_at(when)} (its claim or last accepted "
                                  f"heartbeat + lease_s {lease} s)."))
                del due[key]
        out.append((entry.get("seq"), _sentence(entry, job, journal)))
        kind, worker, data = entry.get("kind"), str(entry.get("worker") or "?"), entry.get("data") or {}
        if lease is None or entry.get("job") not in (job, None):
            continue
        key = (worker, data.get("token"))
        if kind == events.PROBE_CLAIM or (kind == events.PROBE_HEARTBEAT and data.get("ok")):
            due[key] = t + lease
        elif kind in (events.PROBE_ACK, events.PROBE_ABANDON):
            due.pop(key, None)  # released: a worker's exit is no release, its lease runs on in the queue
    return out


def _violation_section(page: Page, violation: Violation, anchor: str, lease: float | None) -> str:
    run = page.run
    job = violation.job
    parts = [f"<section class='violation' id='{anchor}' data-job='{_esc(job or '')}' "
             f"data-kind='{_esc(violation.kind)}'>"
             f"<h3>{_esc(violation.kind)}: {_esc(job or '(no job)')} <span class='note'>"
             f"({_esc(page.outcomes.get(job or '', ''))})</span></h3><p class='message'>{_esc(violation.message)}</p>"]
    if job is not None:
        spans = run.by_job.get(job, [])
        workers = {s.worker for s in spans} | {str(e["worker"]) for e in violation.witness
                                                if e.get("worker") and e.get("worker") in run.roles}
        frame = _window(run, job)
        lanes = _worker_lanes(run, spans, workers)
        since = _stuck_since(run, job, page.outcomes.get(job, ""))
        if since is not None:
            frame.t1 = run.end + max((run.end - frame.t0) * 0.04, 0.02)
            owner = max(spans, key=lambda s: s.start).worker if spans else NEMESIS
            for lane in lanes:
                if lane.name == owner:
                    lane.tail = (since, f"{job} is stuck: the queue still held it at the end of the run")
        parts.append(f"<div class='wide'>{_svg(page, frame, lanes, css='job-timeline')}</div>")
    sentences = proof(violation.witness, job, lease, run.journal)
    if len(sentences) > PROOF_HEAD + PROOF_TAIL + 1:
        gap = len(sentences) - PROOF_HEAD - PROOF_TAIL
        sentences = sentences[:PROOF_HEAD] + [(-1, f"… {gap} more steps (verdict.json has the whole witness) …")] \
            + sentences[-PROOF_TAIL:]
    items = []
    for seq, text in sentences:
        if seq == -1:
            items.append(f"<li class='gap'>{_esc(text)}")
        elif seq is None:
            items.append(f"<li class='derived'>{_esc(text)}")
        else:
            event = run.by_seq.get(seq)
            items.append(f"<li{page.seq(event) if event is not None else ''}>{_esc(text)}")
    parts.append("<h4>Witness, in words</h4><ol class='proof'>" + "".join(items) + "</ol></section>")
    return "".join(parts)


# -- the page ------------------------------------------------------------------------------------------


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _events_json(page: Page) -> str:
    shown = {str(seq): {"seq": e.seq, "t": round(e.mono - page.run.origin, 6), "mono": e.mono, "wall": e.wall,
                        "source": e.source, "kind": e.kind, "job": e.job, "worker": e.worker, "data": e.data}
             for seq, e in sorted(page.shown.items())}
    text = json.dumps(_finite(shown), default=str, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(verdict: Verdict, ledger: Sequence[Event]) -> str:
    lease = verdict.contract.get("lease_s")
    lease_s = float(lease) if isinstance(lease, (int, float)) and not isinstance(lease, bool) and lease > 0 else None
    run = build(ledger, lease_s, verdict.contract.get("lease_scope") == "worker")
    violating = [v.job for v in verdict.violations if v.job]
    page = Page(run, set(violating), dict(verdict.jobs))
    title = f"{verdict.verdict.upper()}: {verdict.target} x {verdict.scenario} (seed {verdict.seed})"
    anchors: dict[int, str] = {}
    sections = []
    for i, violation in enumerate(verdict.violations[:MAX_SECTIONS]):
        anchors[i] = f"v{i + 1}"
        sections.append(_violation_section(page, violation, anchors[i], lease_s))
    if len(verdict.violations) > MAX_SECTIONS:
        sections.append(f"<p class='note'>{len(verdict.violations) - MAX_SECTIONS} more violations are in the table "
                        "above and in verdict.json.</p>")
    others = [job for job in sorted(verdict.jobs, key=_natural) if job not in page.violating][:MAX_JOBS]
    order = list(dict.fromkeys(violating + others))
    head = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>queue-chaos {_esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>",
            f"<svg width='0' height='0' style='position:absolute' aria-hidden='true'>{DEFS}</svg>",
            f"<h1 class='{_esc(verdict.verdict)}'>{_esc(title)}</h1>"]
    if verdict.reproduce:
        head.append(f"<p>Reproduce: <code>{_esc(verdict.reproduce)}</code></p>")
    if verdict.error:
        head.append(f"<p class='error'>Error: {_esc(verdict.error.splitlines()[0] if verdict.error else '')}</p>")
    head += [f"<p class='note'>note: {_esc(note)}</p>" for note in verdict.notes]
    head.append(f"<p class='note'>Contract: {_esc(', '.join(f'{k} = {v}' for k, v in verdict.contract.items()))}</p>"
                "<nav><a href='#violations'>violations</a><a href='#run'>run timeline</a>"
                "<a href='#jobs'>jobs</a></nav>")
    body = [_tables(verdict, anchors),
            "<section id='violations'><h2>Violating jobs</h2>"
            + ("".join(sections) or "<p>None: every job kept the contract.</p>") + "</section>",
            _run_section(page), _jobs_section(page, order, len(verdict.jobs))]
    tail = ["<aside id='details' hidden><button id='details-close' type='button'>close</button>"
            "<b id='details-title'></b><div id='details-also'></div><pre id='event-json'></pre></aside>",
            f"<script type='application/json' id='chaos-events'>{_events_json(page)}</script>",
            f"<script>{SCRIPT}</script></body></html>"]
    return "".join(head + body + tail)
