"""report.html's readable time axis and what the charts name: idle stretches collapse into marked breaks
with ticks still true to the clock, the run view opens on the faults and violations, the queue's own
record is a lane under its worker, executions carry their labels, coincident marks fan out, and a
violation's minimal proof comes first with its history folded."""

from __future__ import annotations

import re
from dataclasses import replace

from chaos import events
from chaos.check.checker import judge
from chaos.check.verdict import Premise
from chaos.reports import svg, timeline
from chaos.reports.run_model import build_run
from tests.history import History
from tests.unit.test_report import LEASE, SVG, svgs


def test_idle_stretches_collapse_into_breaks_and_busy_ones_stay_linear() -> None:
    frame = svg.Frame(0.0, 10.0)
    busy = [4.0 + i * 0.01 for i in range(20)]  # a burst of 0.19 s in a 10 s run
    warped = svg.warp(frame, busy)
    assert [round(a, 2) for a, _ in warped.breaks] == [0.0, 4.19] and len(warped.breaks) == 2
    # The burst takes nearly the whole width, evenly: 10 ms is the same distance everywhere in it.
    steps = {round(warped.x(t + 0.01) - warped.x(t), 3) for t in busy[:-1]}
    assert len(steps) == 1 and steps.pop() > 40
    assert warped.x(0.0) == svg.LEFT and abs(warped.x(10.0) - (svg.WIDTH - svg.RIGHT)) < 1e-6
    assert all(warped.x(a) < warped.x(b) for a, b in zip(busy, busy[1:], strict=False))  # monotone
    # Events spread evenly over the run have no idle stretch: the axis stays linear.
    assert svg.warp(frame, [i * 0.5 for i in range(21)]).breaks == []


def test_ticks_are_labelled_with_real_times_placed_through_the_warp() -> None:
    warped = svg.warp(svg.Frame(0.0, 10.0), [4.0 + i * 0.01 for i in range(20)])
    axis = "".join(svg._axis(warped, 100, 0.0))
    ticks = [(float(m.group(1)), float(m.group(2)))
             for m in re.finditer(r"<text class='tick' x='([\d.]+)'[^>]*>\+([\d.]+)s<", axis)]
    assert len(ticks) >= 5
    for x, t in ticks:
        assert abs(warped.x(t) - x) < 0.1, (x, t)
    assert all(4.0 <= t <= 4.2 for _, t in ticks[1:-1])


def stuck_run() -> History:
    """w1 claims job b and is killed after its effect (b stays claimed); w2 does a, c, d long after boot;
    the queue's own record shows w2's claim and completion of a."""
    h = History(LEASE).start("w1").start("w2", dt=3.0).enqueue("a", "b", "c", "d")
    h.claim("b", "w1", "t-b").effect("b", "w1", "t-b").kill("w1")
    h.claim("a", "w2", "t-a").queue(events.QUEUE_CLAIM, "a", "w2", 1, "t-a").effect("a", "w2", "t-a")
    h.ack("a", "w2", "t-a").queue(events.QUEUE_COMPLETE, "a", "w2", 2, "t-a")
    for job in "cd":
        h.execute(job, "w2")
    return h.snapshot(a="done", b="claimed", c="done", d="done")


def test_the_run_view_opens_on_the_faults_and_violations_with_the_stuck_tail_to_the_end() -> None:
    h = stuck_run()
    verdict = judge(h.events)
    assert [v.kind for v in verdict.violations] == ["stuck"]
    page = timeline.render(verdict, h.events)
    run_view = svgs(page)[1]
    plot = next(e for e in run_view.iter(f"{SVG}svg") if e.get("class") == "plot")
    x0, _, width, _ = (float(v) for v in plot.get("viewBox", "").split())
    ends = [float(e.get("x1", 0)) for e in run_view.iter() if "end-line" in (e.get("class") or "")]
    tails = [e for e in run_view.iter() if e.get("class") == "stuck"]
    assert len(tails) == 1 and float(tails[0].get("x2", 0)) == ends[0]
    bands = [e for e in run_view.iter() if "band" in (e.get("class") or "").split()
             or "band-line" in (e.get("class") or "")]
    assert bands and all(x0 <= float(b.get("x1", b.get("x", 0))) <= x0 + width for b in bands)
    assert x0 - 1 <= ends[0] <= x0 + width + 1
    # The linear view is there too, one toggle away, and the run view has its controls.
    assert "<div class='wide view linear'>" in page and "class='axis-toggle'" in page and "id='lane-filter'" in page


def test_the_queues_record_is_a_lane_under_its_worker_and_spans_carry_labels() -> None:
    h = stuck_run()
    page = timeline.render(judge(h.events), h.events)
    run_view = svgs(page)[1]
    lanes = [g.get("data-lane") for g in run_view.iter(f"{SVG}g") if "lane" in (g.get("class") or "").split()]
    assert lanes.index("w2 · queue") == lanes.index("w2") + 1 and "w1 · queue" not in lanes
    queue = next(g for g in run_view.iter(f"{SVG}g") if g.get("data-lane") == "w2 · queue")
    kinds = sorted((e.get("class") or "").split()[1] for e in queue.iter(f"{SVG}path"))
    assert kinds == ["q-claim", "q-complete"]
    titles = [t.text or "" for t in run_view.iter(f"{SVG}title")]
    assert any("w2 (w2#1) held it" in t for t in titles) and any("[w1#1]" in t for t in titles)
    assert '"label":"w2#1"' in page  # the details panel names the execution, and shows its whole token


def test_marks_at_one_place_fan_out() -> None:
    lane = svg.Lane("w1", "w1", "worker")
    assert [lane.fan(10.0, x) for x in (100.0, 101.0, 102.0, 200.0)] == [0.0, -4.0, 4.0, 0.0]
    h = History(LEASE).start("w1").enqueue("a", "b")
    for job in "ab":  # two executions one after the other within a millisecond: one pixel apart at most
        h.claim(job, "w1", f"t-{job}", dt=0.0001).effect(job, "w1", f"t-{job}", dt=0.0001)
        h.ack(job, "w1", f"t-{job}", dt=0.0001)
    h.snapshot(a="done", b="done")
    page = timeline.render(judge(h.events), h.events)
    run_view = svgs(page, "linear")[0]
    effects = [(float(e.get("cx", 0)), float(e.get("cy", 0))) for e in run_view.iter(f"{SVG}circle")
               if "effect" in (e.get("class") or "")]
    assert len(effects) == 2 and abs(effects[0][0] - effects[1][0]) < svg.FAN_PX, effects
    assert abs(effects[0][1] - effects[1][1]) == 4.0, effects


def test_a_violation_shows_its_minimal_proof_first_and_folds_its_history() -> None:
    h = stuck_run()
    verdict = judge(h.events)
    claim = next(e for e in h.events if e.kind == events.PROBE_CLAIM and e.job == "b")
    proven = replace(verdict.violations[0], proof=(Premise("w1 claimed b", claim.seq, 3.1),
                                                   Premise("w1's lease ran out", None, 4.1)),
                     conclusion="nothing recovered b")
    page = timeline.render(replace(verdict, violations=[proven]), h.events)
    section = page[page.index("<section class='violation'"):page.index("<section id='run'>")]
    premises = section[section.index("<ol class='premises'>"):section.index("</ol>")]
    assert f"<li data-seq='{claim.seq}'>w1 claimed b" in premises and "<li class='derived'" in premises
    assert "<p class='conclusion'>so nothing recovered b</p>" in section
    assert section.index("</ol>") < section.index("<details class='history'>") < section.index("<ol class='proof'>")
    # Without a proof (a rule that gives none), the witness in words is shown as before.
    bare = replace(verdict.violations[0], proof=(), conclusion="")
    plain = timeline.render(replace(verdict, violations=[bare]), h.events)
    assert "<ol class='premises'>" not in plain and "<h4>Witness, in words</h4><ol class='proof'>" in plain


def test_a_run_model_keeps_the_queues_record_by_worker() -> None:
    run = build_run(stuck_run().events, 1.0, False)
    assert [e.kind for e in run.queue["w2"]] == [events.QUEUE_CLAIM, events.QUEUE_COMPLETE]
    assert sorted(run.labels.values()) == ["w1#1", "w2#1", "w2#2", "w2#3"]
