"""The run as report.html draws it, built from the ledger in one pass: each execution a span (claim to its
ack or abandon, or its worker's exit or kill, keyed by job, worker and token), each fault a band (applied
to healed), and the server's and processes' own events. Kept apart from the drawing so that what a run
was stays one question and how it looks another."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaos import events
from chaos.check import control_answers
from chaos.check.labels import Labels, of_ledger
from chaos.events import Event
from chaos.faults import fault_kind

SERVER, NEMESIS = "server", "nemesis"  # the names of the lanes that are no process the supervisor ran
PROBES = frozenset((events.PROBE_CLAIM, events.PROBE_HEARTBEAT, events.PROBE_EFFECT, events.PROBE_ACK,
                    events.PROBE_ABANDON))
SERVER_KINDS = frozenset((events.BACKEND_START, events.BACKEND_RESTART, events.BACKEND_EXIT))


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
        """Where it is drawn to: its end, or the end of the run while it is still open."""
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

    def until(self) -> float:
        """Where it is drawn to: its healing or the end of the run, or its start for a line."""
        return self.start if self.end is None else self.end

    def label(self) -> str:
        return f"{self.kind} {self.target}"

    def hits(self, lane: str) -> bool:
        """Whether it is shaded over that lane: the nemesis lane shows every fault."""
        if lane == NEMESIS:
            return True
        if lane == SERVER:
            return self.target == events.BACKEND
        return self.everyone or lane == self.target


@dataclass
class Run:
    """Everything the page draws of one run, with times as the ledger's monotonic clock."""

    origin: float
    end: float  # the end of the run: its run.end event, else its last event
    end_event: Event | None
    lease: float | None
    spans: list[Span] = field(default_factory=list)
    by_job: dict[str, list[Span]] = field(default_factory=dict)
    workers: list[str] = field(default_factory=list)  # every process the supervisor ran and every prober
    roles: dict[str, str] = field(default_factory=dict)
    bands: list[Band] = field(default_factory=list)
    journal: dict[str, Event] = field(default_factory=dict)  # fault id -> its journal entry
    server: list[Event] = field(default_factory=list)
    processes: dict[str, list[Event]] = field(default_factory=dict)
    job_times: dict[str, tuple[float, float]] = field(default_factory=dict)
    by_seq: dict[int, Event] = field(default_factory=dict)
    beats: dict[str, list[float]] | None = None  # lease_scope = worker: each worker's accepted heartbeats
    queue: dict[str, list[Event]] = field(default_factory=dict)  # the queue's own record, by the worker it names
    labels: dict[Span, str] = field(default_factory=dict)  # each execution's label (w1#2), chaos.check.labels
    names: Labels = field(default_factory=Labels)  # the same, for any event naming an execution

    def extensions(self, worker: str) -> list[float] | None:
        """Under lease_scope = worker, the worker's accepted heartbeats (each extends all it holds)."""
        return None if self.beats is None else self.beats.get(worker, [])

    def rel(self, mono: float) -> float:
        return mono - self.origin


def natural_key(name: str) -> list[Any]:
    """Sorts w2 before w10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def build_run(ledger: Sequence[Event], lease: float | None, worker_leases: bool) -> Run:
    """One pass over the ledger: spans by (job, worker, token), fault bands, server and process events.
    `worker_leases`: a heartbeat extends every job its worker holds (lease_scope = worker)."""
    origin = ledger[0].mono if ledger else 0.0
    run = Run(origin, ledger[-1].mono if ledger else 0.0, None, lease, beats={} if worker_leases else None)
    open_by_worker: dict[str, dict[tuple[str, str | None], Span]] = {}
    job_times = run.job_times
    seen: dict[str, None] = {}
    healing: dict[str, Band] = {}
    answered = control_answers.answered(ledger)  # acks the worker could not vouch for, as the control answered

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
            if kind in events.QUEUE_KINDS:
                run.queue.setdefault(worker or "?", []).append(event)
            elif kind in PROBES and worker is not None:
                token = event.data.get("token")
                key = (job, token if isinstance(token, str) else None)
                held = open_by_worker.setdefault(worker, {})
                span = held.get(key)
                if kind == events.PROBE_CLAIM and span is not None:
                    close(span, event, "reclaimed")
                    span = None
                if span is None:  # a claim, or a probe of an execution whose claim the ledger lacks
                    span = held[key] = Span(job, worker, key[1], event.mono, [])
                    run.spans.append(span)
                    seen.setdefault(worker)
                if kind == events.PROBE_ACK and control_answers.source_of(event) not in events.ACK_SOURCES:
                    event = event._replace(data=dict(event.data, ok=None))  # a result store decides no ack
                if kind == events.PROBE_ACK and event.data.get("ok") is None and answered:
                    answer = answered.get((job, worker, str(token)))
                    if answer is not None:  # drawn as the verdict judged it
                        event = event._replace(data=dict(event.data, ok=answer[0], answered_by="control",
                                                         source=answer[1]))
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
    known = run.names = of_ledger(ledger)
    for span in run.spans:
        run.by_job.setdefault(span.job, []).append(span)
        label = known.of(span.job, span.worker, span.token)
        if label is not None:
            run.labels[span] = label
    run.workers = sorted(seen, key=natural_key)
    return run


def lease_deadlines(span: Span, lease: float, run_end: float, beats: list[float] | None) -> list[tuple[float, bool]]:
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
