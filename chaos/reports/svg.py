"""The SVG timelines of report.html: lanes (the nemesis, the server, a worker or a job each) on one time
axis, with each execution a span, its events as marks (hover for the event, click for its JSON) and each
fault a shaded band. Drawn as text, one element per mark, so the page needs nothing fetched or run to
show it; big runs merge the spans they cannot draw one by one per pixel."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from chaos import events
from chaos.events import Event
from chaos.reports.formatting import esc, short
from chaos.reports.run_model import NEMESIS, SERVER, Band, Run, Span, lease_deadlines, natural_key

WIDTH, LEFT, RIGHT = 1200, 132, 36
ROW, PAD, AXIS = 20, 4, 24  # effects in a row's upper half, acks and abandons in its lower half
QUIET = frozenset(("clock", "sent", "pid", "argv", "create_time", "log_tail"))  # left out of titles (JSON has them)
ENDINGS = {  # how a span ended -> words for its title
    "ack": "its ack was accepted", "ack-rejected": "its ack was rejected", "ack-unknown": "its ack (outcome unknown)",
    "abandon": "it abandoned the job", "exit": "its worker exited", "killed": "its worker was killed",
    "reclaimed": "it claimed the job again", "open": "still open at the end of the run",
}


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


def run_frame(run: Run) -> Frame:
    """The whole run, with a little room after its end for the end-of-run mark."""
    return Frame(run.origin, run.end + max((run.end - run.origin) * 0.01, 0.01))


def job_frame(run: Run, job: str) -> Frame:
    """The job's life: its executions (an open one to the end of the run), else its events, and the faults
    over them, with a margin."""
    spans = run.by_job.get(job, [])
    if spans:
        t0 = min(s.start for s in spans)
        t1 = max(max([s.until(run.end)] + [m.mono for m in s.marks]) for s in spans)
    else:
        t0, t1 = run.job_times.get(job, (run.origin, run.end))
    for band in run.bands:
        end = band.until()
        if any(band.hits(s.worker) and band.start <= s.until(run.end) and end >= s.start for s in spans):
            t0, t1 = min(t0, band.start), max(t1, band.start if band.end is None else min(end, run.end))
    margin = max((t1 - t0) * 0.06, 0.02)
    return Frame(max(run.origin, t0 - margin), min(max(run.end, t1), t1 + margin))


@dataclass
class Page:
    """What the page's parts share: the run, the verdict's facts, and the events its marks show on click."""

    run: Run
    violating: set[str]
    outcomes: dict[str, str]
    shown: dict[int, Event] = field(default_factory=dict)

    def seq(self, event: Event) -> str:
        """The attribute that makes a mark clickable; the page embeds the events named so."""
        self.shown[event.seq] = event
        return f" data-seq='{event.seq}'"

    def title(self, event: Event) -> str:
        """The event in one line, shown on hover."""
        return f"<title>{esc(_describe(event, self.run.origin))}</title>"


@dataclass
class Lane:
    """A horizontal band of the drawing: a worker's, a job's, the nemesis's or the server's."""

    name: str
    label: str
    kind: str  # worker, nemesis, server, job
    spans: list[Span] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # each span's row within the lane
    height: int = ROW + 2 * PAD
    y: int = 0
    tail: tuple[float, str] | None = None  # a stuck job: still held by the queue from then to the end of the run

    def stack(self, run_end: float) -> None:
        """Rows for spans that overlap in time (interval partitioning), and the height that holds them."""
        order = sorted(range(len(self.spans)), key=lambda i: self.spans[i].start)
        self.rows = [0] * len(self.spans)
        free: list[tuple[float, int]] = []  # (end, row) of rows in use
        count = 0
        for i in order:
            span = self.spans[i]
            if free and free[0][0] < span.start:
                _, row = heapq.heappop(free)
            else:
                row, count = count, count + 1
            self.rows[i] = row
            heapq.heappush(free, (span.until(run_end), row))
        self.height = max(count, 1) * ROW + 2 * PAD


def worker_lanes(run: Run, spans: Iterable[Span], names: Iterable[str]) -> list[Lane]:
    """The nemesis and server lanes, then one lane per worker holding its spans (stacked when they overlap)."""
    by_worker: dict[str, list[Span]] = {name: [] for name in names}
    for span in spans:
        by_worker.setdefault(span.worker, []).append(span)
    lanes = [Lane(NEMESIS, "nemesis (faults)", NEMESIS, height=ROW + 2 * PAD + 6),
             Lane(SERVER, "server", SERVER)]
    for name in sorted(by_worker, key=natural_key):
        role = run.roles.get(name, "worker")
        lane = Lane(name, name if role == "worker" else f"{name} ({role})", "worker", by_worker[name])
        lane.stack(run.end)
        lanes.append(lane)
    return lanes


def _describe(event: Event, origin: float) -> str:
    """The event as a line: its time, kind, worker and job, and its data but for the long fields in QUIET."""
    data = " ".join(f"{k}={short(v) if k == 'token' else v}" for k, v in sorted(event.data.items())
                    if k not in QUIET)
    who = " ".join(x for x in (event.worker, event.job) if x)
    return f"+{event.mono - origin:.3f}s {event.kind} {who} {data}".rstrip()


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


def draw(page: Page, frame: Frame, lanes: list[Lane], *, css: str, spans_one_by_one: set[Span] | None = None,
         marked: set[Span] | None = None, bands_over: Literal["lanes", "all"] = "lanes",
         every_deadline: bool = True) -> str:
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
        out.append(f"<g class='lane {lane.kind}' data-lane='{esc(lane.name)}'>"
                   f"<rect class='lane-bg' x='{LEFT}' y='{lane.y}' width='{WIDTH - LEFT - RIGHT}' "
                   f"height='{lane.height}'/>")
        label_css = " viol" if lane.kind == "job" and lane.name in page.violating else ""
        out.append(f"<text class='lane-label{label_css}' x='4' y='{lane.y + min(lane.height, 2 * ROW) / 2 + 4:.0f}'>"
                   f"{esc(lane.label)}</text>")
        if bands:
            out += _bands(page, frame, lane, bands)
        if lane.kind == SERVER:
            out += _server(page, frame, lane)
        out += _processes(page, frame, lane)
        if lane.tail is not None and frame.shows(lane.tail[0], run.end):
            mid = lane.y + lane.height / 2
            out.append(f"<line class='stuck' x1='{frame.x(lane.tail[0]):.1f}' x2='{frame.x(run.end):.1f}' "
                       f"y1='{mid:.1f}' y2='{mid:.1f}'><title>{esc(lane.tail[1])}</title></line>")
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
        end = band.until()
        if not band.hits(lane.name) or not frame.shows(band.start, end):
            continue
        x0, x1 = frame.x(band.start), frame.x(end)
        event = band.journal if lane.kind == NEMESIS and band.journal is not None else band.applied
        healed = f", healed at +{page.run.rel(band.end):.3f}s" if band.healed is not None and band.end else ""
        lasting = " (until the end of the run)" if band.lasting and band.healed is None else ""
        title = (f"<title>fault {esc(band.id)}: {esc(band.label())}, applied at "
                 f"+{page.run.rel(band.start):.3f}s{healed}{lasting}</title>")
        out.append(_band_mark(page, band, x0, x1, lane.y, lane.y + lane.height, event, title))
        if lane.kind == NEMESIS and x0 >= free_from:
            labels.append(f"<text class='band-label' x='{x0 + 3:.1f}' y='{lane.y + lane.height - 5}'>"
                          f"{esc(band.label())}</text>")
            free_from = x0 + 8 + 6.5 * len(band.label())
    return out + labels  # over every band


def _bands_across(page: Page, frame: Frame, top: int, bottom: int) -> list[str]:
    """Every fault over the whole height (the job rows), labelled below where there is room."""
    out = []
    free_from = 0.0
    for band in page.run.bands:
        end = band.until()
        if not frame.shows(band.start, end):
            continue
        x0, x1 = frame.x(band.start), frame.x(end)
        title = f"<title>fault {esc(band.id)}: {esc(band.label())}</title>"
        out.append(_band_mark(page, band, x0, x1, top, bottom, band.applied, title))
        if x0 >= free_from:
            out.append(f"<text class='band-label' x='{x0 + 3:.1f}' y='{bottom + 13}'>{esc(band.label())}</text>")
            free_from = x0 + 8 + 6.5 * len(band.label())
    return out


def _band_mark(page: Page, band: Band, x0: float, x1: float, top: int, bottom: int, event: Event,
               title: str) -> str:
    """A fault from top to bottom: a line for one that is over at once, else a shaded box."""
    if band.end is None:
        return (f"<line class='band-line m' x1='{x0:.1f}' x2='{x0:.1f}' y1='{top}' y2='{bottom}'"
                f"{page.seq(event)}>{title}</line>")
    return (f"<rect class='band m' x='{x0:.1f}' y='{top}' width='{max(x1 - x0, 2):.1f}' "
            f"height='{bottom - top}'{page.seq(event)}>{title}</rect>")


def _server(page: Page, frame: Frame, lane: Lane) -> list[str]:
    """The server's life: up from each start to its exit, down before each restart, and its events."""
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
    """A worker lane's process starts and exits (a kill in red)."""
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
    """The lane's spans: one element each, or merged into one path per row for those not in `one_by_one`,
    then the marks of those `marked`."""
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
        token = f", token {short(span.token)}" if span.token else ""
        out.append(f"<rect class='span {css}' x='{x0:.1f}' y='{top + 1}' width='{max(x1 - x0, 1.5):.1f}' "
                   f"height='{ROW - 2}'><title>{esc(span.job)}: {esc(span.worker)} held it from "
                   f"+{run.rel(span.start):.3f}s; {ended}{when}{esc(token)}</title></rect>")
        if lane.kind == "job":
            out.append(f"<text class='who' x='{x0 + 2:.1f}' y='{top + ROW - 4}'>{esc(span.worker)}</text>")
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
                   f"spans of {esc(lane.name)} {what}, merged at this scale</title></path>")
    for span, top in drawn:
        if marked is None or span in marked:
            out += _marks(page, frame, span, top, every_deadline)
    return out


def _marks(page: Page, frame: Frame, span: Span, top: int, every_deadline: bool) -> list[str]:
    """A span's lease and its deadlines, its probes, and the exit or kill that ended it."""
    run, out = page.run, []
    upper, lower = top + 5.5, top + ROW - 6.5  # an effect and its ack a moment later do not cover each other
    if run.lease is not None and span.marks and span.marks[0].kind == events.PROBE_CLAIM:
        dues = lease_deadlines(span, run.lease, run.end, run.extensions(span.worker))
        last = max(due for due, _ in dues)
        out.append(f"<line class='lease' x1='{frame.x(span.start):.1f}' x2='{frame.x(last):.1f}' "
                   f"y1='{top + ROW - 0.5}' y2='{top + ROW - 0.5}'><title>lease of {esc(span.worker)} on "
                   f"{esc(span.job)}: claim or accepted heartbeat + lease_s {run.lease}s</title></line>")
        for due, expired in dues:
            if not frame.t0 <= due <= frame.t1 or not (every_deadline or expired or due == last):
                continue
            x = frame.x(due)
            what = "passed while it still held the job" if expired else "moved on by an extension or the end"
            out.append(f"<line class='deadline{' expired' if expired else ''}' x1='{x:.1f}' x2='{x:.1f}' "
                       f"y1='{top}' y2='{top + ROW}'><title>lease deadline of {esc(span.worker)} on "
                       f"{esc(span.job)} at +{run.rel(due):.3f}s: {what}</title></line>")
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



def legend() -> str:
    """Each kind of mark the lanes draw, drawn the same way, with what it means."""

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
