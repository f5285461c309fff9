"""The SVG timelines of report.html: lanes (the nemesis, the server, a worker or a job each, and under a
worker the queue's own record of it) on one time axis, with each execution a span, its events as marks
(hover for the event, click for its JSON) and each fault a shaded band. Drawn as text, one element per
mark, so the page needs nothing fetched or run to show it; big runs merge the spans they cannot draw one
by one per pixel.

The time axis is warped by collapsing idle stretches into marked breaks (`warp`), not by Porcupine's
monotone warp with a minimum gap between distinct events. A run's events come in bursts (server boot,
then a fault and its recovery within a few hundred milliseconds, then the wait for the end): collapsing
only the stretches in which nothing happened keeps every other stretch linear, so distances inside a
burst (a lease's length, how long after a stop an ack came) still read true against the ticks, and each
break says how much time it hides. A minimum-gap warp would make every neighbouring pair of events look
equally far apart, which is exactly what a lease proof must not do. Ticks are placed through the warp
and labelled with real times, per linear stretch. Marks closer than FAN_PX in one lane row fan out
vertically, so coincident events stay one click each.
"""

from __future__ import annotations

import bisect
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
BREAK_SHARE = 0.05  # an idle stretch longer than this share of the time drawn linearly becomes a break
BREAK_PX = 16  # a break's width
BREAK_RATIO = 8.0  # and longer than this many times the first quartile of the stretches between times drawn
MAX_BREAKS = 12
FAN_PX = 4.0  # point marks of one lane row closer than this fan out vertically
FAN = (0.0, -4.0, 4.0, -8.0, 8.0)  # the offsets of the first, second, ... mark at one place
QROW = 14  # the height of a queue lane's row
QUIET = frozenset(("clock", "sent", "pid", "argv", "create_time", "log_tail"))  # left out of titles (JSON has them)
ENDINGS = {  # how a span ended -> words for its title
    "ack": "its ack was accepted", "ack-rejected": "its ack was rejected", "ack-unknown": "its ack (outcome unknown)",
    "abandon": "it abandoned the job", "exit": "its worker exited", "killed": "its worker was killed",
    "reclaimed": "it claimed the job again", "open": "still open at the end of the run",
}


@dataclass
class Frame:
    """A time window drawn across [LEFT, WIDTH - RIGHT]: linear, or warped through `knots` (times and their
    x, piecewise linear), with `breaks` the idle stretches each drawn BREAK_PX wide."""

    t0: float
    t1: float
    knots: tuple[list[float], list[float]] | None = None
    breaks: list[tuple[float, float]] = field(default_factory=list)

    @property
    def scale(self) -> float:
        return (WIDTH - LEFT - RIGHT) / max(self.t1 - self.t0, 1e-6)

    def x(self, mono: float) -> float:
        t = min(max(mono, self.t0), self.t1)
        if self.knots is None:
            return LEFT + (t - self.t0) * self.scale
        times, xs = self.knots
        i = min(max(bisect.bisect_right(times, t), 1), len(times) - 1)
        a, b = times[i - 1], times[i]
        return xs[i - 1] if b <= a else xs[i - 1] + (t - a) * (xs[i] - xs[i - 1]) / (b - a)

    def shows(self, start: float, end: float) -> bool:
        return end >= self.t0 and start <= self.t1

    def stretches(self) -> list[tuple[float, float]]:
        """The linear stretches between the breaks."""
        out, at = [], self.t0
        for a, b in self.breaks:
            if a > at:
                out.append((at, a))
            at = b
        if self.t1 > at:
            out.append((at, self.t1))
        return out


def warp(frame: Frame, times: Iterable[float]) -> Frame:
    """The frame with its idle stretches collapsed into breaks, or the frame itself when it has none. A
    stretch with no time of `times` inside it is idle when it is longer than BREAK_RATIO times the first
    quartile of the stretches (events evenly spread over a run have no idle stretch) and than BREAK_SHARE
    of the time still drawn linearly once the longer ones are collapsed (so a short wait beside a burst
    is collapsed too); at most MAX_BREAKS, the longest."""
    inside = sorted({t for t in times if frame.t0 < t < frame.t1} | {frame.t0, frame.t1})
    gaps = list(zip(inside, inside[1:], strict=False))
    lengths = sorted(b - a for a, b in gaps)
    total = frame.t1 - frame.t0
    least = BREAK_RATIO * lengths[len(lengths) // 4] if lengths else total
    chosen: list[tuple[float, float]] = []
    for a, b in sorted(gaps, key=lambda g: g[0] - g[1])[:MAX_BREAKS]:  # longest first: each lowers the bar
        if b - a <= max(least, BREAK_SHARE * (total - sum(d - c for c, d in chosen))):
            break
        chosen.append((a, b))
    chosen.sort()
    if not chosen:
        return frame
    scale = (WIDTH - LEFT - RIGHT - BREAK_PX * len(chosen)) / max(total - sum(b - a for a, b in chosen), 1e-6)
    times_, xs, at, x = [frame.t0], [float(LEFT)], frame.t0, float(LEFT)
    for a, b in chosen:
        x += (a - at) * scale
        times_ += [a, b]
        xs += [x, x + BREAK_PX]
        x, at = x + BREAK_PX, b
    times_.append(frame.t1)
    xs.append(x + (frame.t1 - at) * scale)
    return Frame(frame.t0, frame.t1, (times_, xs), chosen)


def _dues(run: Run, span: Span) -> list[float]:
    """The span's lease deadlines (none without a lease or a claim)."""
    if run.lease is None or not span.marks or span.marks[0].kind != events.PROBE_CLAIM:
        return []
    return [due for due, _ in lease_deadlines(span, run.lease, run.end, run.extensions(span.worker))]


def times_of(run: Run, spans: Iterable[Span], lanes: Iterable[Lane]) -> list[float]:
    """The times a drawing of `lanes` marks: its spans' ends and events, the faults, the server's events
    (with a server lane), the process events of its worker lanes, its queue lanes' records, and the end
    of the run; the stretches between them are what `warp` may collapse."""
    out = [run.end] + [t for band in run.bands for t in (band.start, band.until())]
    for span in spans:
        out += [span.start, span.until(run.end)] + [m.mono for m in span.marks] + _dues(run, span)
    for lane in lanes:
        if lane.kind == SERVER:
            out += [e.mono for e in run.server]
        elif lane.kind == "worker":
            out += [e.mono for e in run.processes.get(lane.name, [])]
        out += [e.mono for e in lane.events]
    return out


def run_frame(run: Run) -> Frame:
    """The whole run, with a little room after its end for the end-of-run mark."""
    return Frame(run.origin, run.end + max((run.end - run.origin) * 0.01, 0.01))


def job_frame(run: Run, job: str) -> Frame:
    """The job's life: its executions (an open one to the end of the run) and their lease deadlines, else
    its events, and the faults over them, with a margin."""
    spans = run.by_job.get(job, [])
    if spans:  # with each lease deadline: a proof of a lease rule points at one
        t0 = min(s.start for s in spans)
        t1 = max(max([s.until(run.end)] + [m.mono for m in s.marks] + [min(d, run.end) for d in _dues(run, s)])
                 for s in spans)
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
        """The event in one line, shown on hover, with the label of the execution it belongs to."""
        label = self.run.names.of_event(event)
        return f"<title>{esc(_describe(event, self.run.origin))}{esc(f' [{label}]' if label else '')}</title>"


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
    tails: list[tuple[float, str]] = field(default_factory=list)  # stuck jobs: held by the queue from then on
    events: list[Event] = field(default_factory=list)  # a queue lane's records
    placed: dict[float, list[float]] = field(default_factory=dict)  # a row's point marks' x, to fan them out

    def fan(self, y: float, x: float) -> float:
        """The vertical offset of a point mark at (x, y): 0 for the first there, then up and down in turn."""
        near = self.placed.setdefault(y, [])
        n = sum(1 for other in near if abs(other - x) < FAN_PX)
        near.append(x)
        return FAN[n % len(FAN)]

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


def worker_lanes(run: Run, spans: Iterable[Span], names: Iterable[str], job: str | None = None) -> list[Lane]:
    """The nemesis and server lanes, then one lane per worker holding its spans (stacked when they overlap),
    each followed by a thin lane of the queue's own record of that worker (`job`: of that job only), when
    the run has one."""
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
        records = [e for e in run.queue.get(name, []) if job is None or e.job == job]
        if records:
            lanes.append(Lane(f"{name} · queue", f"{name} · queue", "queue", height=QROW + 2, events=records))
    return lanes


def _describe(event: Event, origin: float) -> str:
    """The event as a line: its time, kind, worker and job, and its data but for the long fields in QUIET."""
    data = " ".join(f"{k}={short(v) if k == 'token' else v}" for k, v in sorted(event.data.items())
                    if k not in QUIET)
    who = " ".join(x for x in (event.worker, event.job) if x)
    return f"+{event.mono - origin:.3f}s {event.kind} {who} {data}".rstrip()


def _axis(frame: Frame, height: int, origin: float) -> list[str]:
    """Labelled ticks (+0.0s ...) true to the clock: in each linear stretch at a round step about 90 px
    apart, placed through the warp; grid lines through every lane; each break shaded, with what it hides."""
    out = []
    last_x = -1e9
    for a, b in frame.stretches():
        width = frame.x(b) - frame.x(a)
        if width < 60:  # a sliver between two breaks: the breaks' titles say where it is
            continue
        raw = max((b - a) * 90 / width, 0.001)  # labels in milliseconds at most
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
        decimals = max(0, min(3, -math.floor(math.log10(step))))
        tick = math.ceil((a - origin) / step - 1e-9)
        while origin + tick * step <= b + 1e-9:
            x = frame.x(origin + tick * step)
            if x - last_x >= 56:
                out.append(f"<line class='grid' x1='{x:.1f}' x2='{x:.1f}' y1='{AXIS - 6}' y2='{height}'/>"
                           f"<text class='tick' x='{x:.1f}' y='{AXIS - 9}' text-anchor='middle' data-x='{x:.1f}'>"
                           f"+{tick * step:.{decimals}f}s</text>")
                last_x = x
            tick += 1
    for a, b in frame.breaks:
        x0, x1 = frame.x(a), frame.x(b)
        out.append(f"<g class='brk'><rect x='{x0:.1f}' y='{AXIS - 6}' width='{x1 - x0:.1f}' "
                   f"height='{height - AXIS + 6}'/>"
                   f"<path d='M{x0 + 2:.1f},{AXIS + 1}l4,-9M{x1 - 6:.1f},{AXIS + 1}l4,-9'/>"
                   f"<title>{b - a:.3f} s with no event (+{a - origin:.3f}s to +{b - origin:.3f}s), collapsed to "
                   f"{BREAK_PX} px</title></g>")
    return out


def draw(page: Page, frame: Frame, lanes: list[Lane], *, css: str, spans_one_by_one: set[Span] | None = None,
         marked: set[Span] | None = None, bands_over: Literal["lanes", "all"] = "lanes",
         every_deadline: bool = True, home: tuple[float, float] | None = None) -> str:
    """Lanes on one time axis. `spans_one_by_one`: the spans drawn as their own element (None: all of them;
    the others are merged per pixel); `marked`: the spans whose event marks are drawn (None: every one).
    `bands_over`: "lanes" shades each lane a fault hit, "all" the whole height (job rows); `every_deadline`:
    draw each lease deadline, else only those that passed while held and the last. `home`: the drawing can
    be zoomed and panned (the page's script): its lanes go into an inner <svg class='plot'> whose viewBox
    opens on the times [home[0], home[1]], the lane labels stay put beside it."""
    run = page.run
    y = AXIS
    for lane in lanes:
        lane.y, y = y, y + lane.height
        lane.placed = {}
    height = y + 18
    out = [f"<svg class='timeline {css}' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
           f"viewBox='0 0 {WIDTH} {height}'>"]
    labels = []
    for lane in lanes:
        label_css = " viol" if lane.kind == "job" and lane.name in page.violating else ""
        label_css += " q" if lane.kind == "queue" else ""
        labels.append(f"<text class='lane-label{label_css}' x='4' data-lane='{esc(lane.name)}' "
                      f"y='{lane.y + min(lane.height, 2 * ROW) / 2 + 4:.0f}'>{esc(lane.label)}</text>")
    if home is not None:
        x0 = max(float(LEFT), frame.x(home[0]) - 12)
        x1 = min(float(WIDTH), frame.x(home[1]) + 12)
        out += labels
        out.append(f"<svg class='plot' x='{LEFT}' y='0' width='{WIDTH - LEFT}' height='{height}' "
                   f"viewBox='{x0:.1f} 0 {x1 - x0:.1f} {height}' preserveAspectRatio='none' "
                   f"data-full='{LEFT} {WIDTH - LEFT}' data-home='{x0:.1f} {x1 - x0:.1f}'>"
                   f"<rect class='plot-bg' x='{LEFT}' y='0' width='{WIDTH - LEFT}' height='{height}'/>")
    out += _axis(frame, y, run.origin)
    others = [lane.name for lane in lanes if lane.kind != NEMESIS]
    bands = [band for band in run.bands if any(band.hits(name) for name in others)] if bands_over == "lanes" else []
    for lane in lanes:
        out.append(f"<g class='lane {lane.kind}' data-lane='{esc(lane.name)}' data-y='{lane.y}' "
                   f"data-h='{lane.height}'><rect class='lane-bg' x='{LEFT}' y='{lane.y}' "
                   f"width='{WIDTH - LEFT - RIGHT}' height='{lane.height}'/>")
        if home is None:
            out.append(labels.pop(0))
        if bands:
            out += _bands(page, frame, lane, bands)
        if lane.kind == SERVER:
            out += _server(page, frame, lane)
        if lane.kind == "queue":
            out += _queue(page, frame, lane)
        out += _processes(page, frame, lane)
        for since, words in lane.tails:
            if frame.shows(since, run.end):
                mid = lane.y + lane.height / 2
                out.append(f"<line class='stuck' x1='{frame.x(since):.1f}' x2='{frame.x(run.end):.1f}' "
                           f"y1='{mid:.1f}' y2='{mid:.1f}'><title>{esc(words)}</title></line>")
        out += _spans(page, frame, lane, spans_one_by_one, marked, every_deadline)
        out.append("</g>")
    if bands_over == "all":
        out += _bands_across(page, frame, AXIS, y)
    if frame.t0 <= run.end <= frame.t1:
        x = frame.x(run.end)
        seq = page.seq(run.end_event) if run.end_event is not None else ""
        out.append(f"<g class='end'{seq}><line class='end-line' x1='{x:.1f}' x2='{x:.1f}' y1='{AXIS - 4}' "
                   f"y2='{y + 4}'/><text class='end-label' x='{x - 2:.1f}' y='{y + 15}' text-anchor='end' "
                   f"data-x='{x - 2:.1f}'>end of run +{run.rel(run.end):.3f}s</text><title>the end of the run, "
                   f"+{run.rel(run.end):.3f}s</title></g>")
    out.append("</svg></svg>" if home is not None else "</svg>")
    return "".join(out)


def _queue(page: Page, frame: Frame, lane: Lane) -> list[str]:
    """The queue's own record of one worker: its claims, completions, releases and failures, as committed."""
    out = []
    mid = lane.y + lane.height / 2
    shapes = {events.QUEUE_CLAIM: "m{x:.1f},{y:.1f}m-1.5,-5h3v10h-3z",
              events.QUEUE_COMPLETE: "m{x:.1f},{y:.1f}m0,-5l5,5l-5,5l-5,-5z",
              events.QUEUE_RELEASE: "m{x:.1f},{y:.1f}m-4,-4l8,8m0,-8l-8,8",
              events.QUEUE_FAIL: "m{x:.1f},{y:.1f}m-4,-4h8v8h-8z"}
    for event in lane.events:
        if not frame.t0 <= event.mono <= frame.t1:
            continue
        x = frame.x(event.mono)
        shape = shapes.get(event.kind, shapes[events.QUEUE_FAIL]).format(x=x, y=mid + lane.fan(mid, x))
        css = event.kind.removeprefix(events.QUEUE_PREFIX)
        out.append(f"<path class='m q-{css}' d='M0,0{shape}' data-x='{x:.1f}'{page.seq(event)}>"
                   f"{page.title(event)}</path>")
    return out


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
            labels.append(f"<text class='band-label' x='{x0 + 3:.1f}' y='{lane.y + lane.height - 5}' "
                          f"data-x='{x0 + 3:.1f}'>"
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
            out.append(f"<rect class='m srestart' x='{x - 2:.1f}' y='{lane.y + 2}' width='4' data-x='{x:.1f}' "
                       f"height='{lane.height - 4}'{page.seq(event)}>{page.title(event)}</rect>")
        elif event.kind == events.BACKEND_START:
            out.append(f"<path class='m sstart' d='M{x:.1f},{mid - 6:.1f}l8,6l-8,6z' data-x='{x:.1f}'{page.seq(event)}>"
                       f"{page.title(event)}</path>")
        else:
            out.append(f"<rect class='m sexit' x='{x - 2:.1f}' y='{mid - 6:.1f}' width='4' height='12' data-x='{x:.1f}'"
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
            out.append(f"<path class='m pstart' d='M{x:.1f},{lane.y + 1}l6,5l-6,5z' data-x='{x:.1f}'{page.seq(event)}>"
                       f"{page.title(event)}</path>")
        else:
            killed = " killed" if event.data.get("signal") else ""
            out.append(f"<rect class='m pexit{killed}' x='{x - 1.5:.1f}' y='{lane.y}' width='3' data-x='{x:.1f}' "
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
        token = f", token {span.token}" if span.token else ""
        label = run.labels.get(span)
        named = f"{span.worker} ({label})" if label else span.worker
        out.append(f"<rect class='span {css}' x='{x0:.1f}' y='{top + 1}' width='{max(x1 - x0, 1.5):.1f}' "
                   f"height='{ROW - 2}'><title>{esc(span.job)}: {esc(named)} held it from "
                   f"+{run.rel(span.start):.3f}s; {ended}{when}{esc(token)}</title></rect>")
        text = label or span.worker
        if lane.kind == "job" or (label and x1 - x0 >= 7 * len(label) + 14):
            out.append(f"<text class='who' x='{x0 + 5:.1f}' y='{top + ROW - 4}' data-x='{x0 + 5:.1f}'>"
                       f"{esc(text if lane.kind == 'job' else label)}</text>")
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
            out += _marks(page, frame, lane, span, top, every_deadline)
    return out


def _marks(page: Page, frame: Frame, lane: Lane, span: Span, top: int, every_deadline: bool) -> list[str]:
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
        seq, title, kind = page.seq(event) + f" data-x='{x:.1f}'", page.title(event), event.kind
        if kind == events.PROBE_CLAIM:
            dy = lane.fan(top, x)
            out.append(f"<rect class='m claim' x='{x - 1.5:.1f}' y='{top + dy:.1f}' width='3' height='{ROW}'{seq}>"
                       f"{title}</rect>")
        elif kind == events.PROBE_HEARTBEAT:
            failed = " failed" if not event.data.get("ok") else ""
            out.append(f"<line class='m hb{failed}' x1='{x:.1f}' x2='{x:.1f}' y1='{top - (2 if failed else 0)}' "
                       f"y2='{top + ROW + (2 if failed else 0)}'{seq}>{title}</line>")
        elif kind == events.PROBE_EFFECT:
            refused = " refused" if event.data.get("accepted") is False else ""
            dy = lane.fan(upper, x)
            out.append(f"<circle class='m effect{refused}' cx='{x:.1f}' cy='{upper + dy:.1f}' r='4.5'{seq}>"
                       f"{title}</circle>")
        elif kind == events.PROBE_ACK:
            ok = event.data.get("ok")
            how = "" if ok is True else " rejected" if ok is False else " unknown"
            dy = lane.fan(lower, x)
            out.append(f"<path class='m ack{how}' d='M{x:.1f},{lower - 5 + dy:.1f}l5,5l-5,5l-5,-5z'{seq}>"
                       f"{title}</path>")
        elif kind == events.PROBE_ABANDON:
            dy = lane.fan(lower, x)
            out.append(f"<path class='m abandon' d='M{x - 4:.1f},{lower - 4 + dy:.1f}l8,8m0,-8l-8,8'{seq}>"
                       f"{title}</path>")
    closer = span.closer
    if closer is not None and closer.kind in (events.PROCESS_EXIT, events.FAULT_APPLIED):
        x = frame.x(closer.mono)
        out.append(f"<path class='m abandon' d='M{x - 3:.1f},{top:.1f}v{ROW}' data-x='{x - 3:.1f}'"
                   f"{page.seq(closer)}>{page.title(closer)}</path>")
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
        ("<path class='q-claim' d='M-1.5,-5h3v10h-3z'/><path class='q-complete' d='M5,-5l4,5l-4,5l-4,-5z'/>",
         "the queue's record: claim, completion"),
        ("<path class='q-release' d='M-4,-4l8,8m0,-8l-8,8'/>", "release by the queue"),
        ("<g class='brk'><rect x='-8' y='-7' width='16' height='14'/><path d='M-6,5l4,-9M2,5l4,-9'/></g>",
         "idle time collapsed (hover: how long)"),
    ]
    return ("<p class='legend'>" + "".join(f"<span>{icon(body)} {label}</span>" for body, label in items)
            + "<br>Hover a mark for its event; click it for the whole event.</p>")
