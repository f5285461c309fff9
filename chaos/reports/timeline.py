"""report.html: one self-contained page (inline CSS, SVG and script; nothing fetched) that shows a run at a
glance, built from the verdict and the ledger alone.

- the verdict, then tables (counts, faults, violations, anomalies, exits) with header rows;
- violating jobs first: a section per violation, with that job's own timeline (zoomed to its life) and
  its witness written out as a proof in words, one sentence per witness entry (`chaos.reports.proof`);
- the run: one lane per worker, one for the nemesis (faults) and one for the server, on one time axis
  (`chaos.reports.svg`, drawing the model of `chaos.reports.run_model`). Each execution is a span in the
  lane of the worker that held it, with its lease deadlines, extensions, effects, acks and abandons;
  faults are shaded bands over the lanes they hit, labelled; a span still open at the end reaches the
  end-of-run mark;
- a row per job (violating jobs, then the first MAX_JOBS others) on the same axis.

Every mark has an SVG <title> (hover), and a click shows its event's whole JSON in a panel.

Big runs stay small and quick: the worker lanes draw every span, but at most SPAN_CAP of them one by one
(violating jobs first, then spans that did not end in an accepted ack); the others are merged per pixel
into one path per lane row, and the event marks of at most MARKED_SPANS spans are drawn in the lanes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from chaos.check.verdict import Verdict, Violation
from chaos.check.violation_kinds import doc_anchor
from chaos.events import Event
from chaos.reports import box, proof, svg
from chaos.reports.formatting import contract_words, esc, finite, how_it_exited
from chaos.reports.run_model import NEMESIS, Run, Span, build_run, natural_key

MAX_JOBS = 100  # job rows drawn besides the violating jobs'
MAX_SECTIONS = 40  # violation sections (the table lists every violation)
SPAN_CAP = 1000  # spans drawn one by one in the run's lanes; the rest are merged per pixel
MARKED_SPANS = 200  # spans whose event marks are drawn in the run's lanes (violating jobs first)

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:20px 24px 120px;color:#222;max-width:1260px}
h1{margin:0 0 4px}h2{margin:28px 0 8px;border-bottom:1px solid #ddd}h3{margin:16px 0 4px}
.pass{color:#2a8a2a}.fail{color:#c62828}.inconclusive,.error{color:#c66a00}.skipped{color:#666}
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



def render(verdict: Verdict, ledger: Sequence[Event]) -> str:
    """The whole page, as one string."""
    lease = verdict.contract.get("lease_s")
    lease_s = float(lease) if isinstance(lease, (int, float)) and not isinstance(lease, bool) and lease > 0 else None
    run = build_run(ledger, lease_s, verdict.contract.get("lease_scope") == "worker")
    violating = [v.job for v in verdict.violations if v.job]
    page = svg.Page(run, set(violating), dict(verdict.jobs))
    title = f"{verdict.verdict.upper()}: {verdict.target} x {verdict.scenario} (seed {verdict.seed})"
    shown = verdict.violations[:MAX_SECTIONS]
    anchors = {i: f"v{i + 1}" for i in range(len(shown))}
    sections = [_violation_section(page, violation, anchors[i]) for i, violation in enumerate(shown)]
    if len(verdict.violations) > MAX_SECTIONS:
        sections.append(f"<p class='note'>{len(verdict.violations) - MAX_SECTIONS} more violations are in the table "
                        "above and in verdict.json.</p>")
    others = [job for job in sorted(verdict.jobs, key=natural_key) if job not in page.violating][:MAX_JOBS]
    order = list(dict.fromkeys(violating + others))
    head = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>queue-chaos {esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>",
            f"<svg width='0' height='0' style='position:absolute' aria-hidden='true'>{DEFS}</svg>",
            f"<h1 class='{esc(verdict.verdict)}'>{esc(title)}</h1>", box.page_box(verdict, ledger)]
    if verdict.reproduce:
        head.append(f"<p>Reproduce: <code>{esc(verdict.reproduce)}</code></p>")
    if verdict.error:
        head.append(f"<p class='error'>Error: {esc(verdict.error.splitlines()[0])}</p>")
    head += [f"<p class='note'>note: {esc(note)}</p>" for note in verdict.notes]
    head.append(f"<p class='note'>Contract: {esc(contract_words(verdict.contract))}</p>"
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


def _tables(verdict: Verdict, anchors: dict[int, str]) -> str:
    """Counts, faults and violations (each linked to its section), then anomalies and exits if any."""
    counts = "".join(f"<tr><td>{esc(k)}<td class='n'>{v}" for k, v in verdict.counts.items()
                     if v or k in ("enqueued", "completed", "lost", "stuck"))
    faults = "".join(f"<tr><td>{esc(f.id)}<td>{esc(f.kind)}<td>{esc(f.target or '')}<td>{esc(f.gate or '')}"
                     f"<td class='{'pass' if f.exercised else 'fail'}'>{'yes' if f.exercised else 'NO'}"
                     f"<td>{esc(f.why)}"
                     for f in verdict.faults)
    rows = []
    for i, violation in enumerate(verdict.violations):
        anchor = anchors.get(i)
        job = esc(violation.job or "")
        doc = (f"<a class='doc' href='{esc(doc_anchor(violation.kind))}' title='the rule, a witness and the usual "
               f"fix, in the docs'>{esc(violation.kind)}</a>")
        rows.append(f"<tr><td>{doc}<td>{f'<a href=#{anchor}>{job}</a>' if anchor else job}<td>{esc(violation.message)}")
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
                         f"<tr><td>{esc(a.get('kind'))}<td>{esc(a.get('job') or '')}<td>{esc(a.get('exposure_s'))}s"
                         f"<td>{esc(a.get('message'))}" for a in verdict.anomalies) + "</tbody></table>")
    if verdict.exits:
        parts.append("<h2>Exits without the suite's doing</h2><table class='exits'><thead><tr><th>worker<th>pid"
                     "<th>how<th>log</thead><tbody>" + "".join(
                         f"<tr><td>{esc(e.get('worker'))}<td>{esc(e.get('pid'))}<td>{esc(how_it_exited(e))}"
                         f"<td><code>{esc(e.get('log') or '')}</code>" for e in verdict.exits) + "</tbody></table>")
    return "".join(parts)


def _violation_section(page: svg.Page, violation: Violation, anchor: str) -> str:
    """The violation, its job's own timeline (zoomed to its life, with the workers its witness names) and
    its witness as a proof in words."""
    run = page.run
    job = violation.job
    parts = [f"<section class='violation' id='{anchor}' data-job='{esc(job or '')}' "
             f"data-kind='{esc(violation.kind)}'>"
             f"<h3>{esc(violation.kind)}: {esc(job or '(no job)')} <span class='note'>"
             f"({esc(page.outcomes.get(job or '', ''))})</span></h3><p class='message'>{esc(violation.message)}</p>"]
    if job is not None:
        spans = run.by_job.get(job, [])
        workers = {s.worker for s in spans} | {str(e["worker"]) for e in violation.witness
                                                if e.get("worker") and e.get("worker") in run.roles}
        frame = svg.job_frame(run, job)
        lanes = svg.worker_lanes(run, spans, workers)
        stuck = _stuck(run, job, page.outcomes.get(job, ""))
        if stuck is not None:
            frame.t1 = run.end + max((run.end - frame.t0) * 0.04, 0.02)
            owner = max(spans, key=lambda s: s.start).worker if spans else NEMESIS
            for lane in lanes:
                if lane.name == owner:
                    lane.tail = stuck
        parts.append(f"<div class='wide'>{svg.draw(page, frame, lanes, css='job-timeline')}</div>")
    items = []
    for seq, text in proof.abridged(proof.in_words(violation.witness, job, run.lease, run.journal)):
        if seq == proof.GAP:
            items.append(f"<li class='gap'>{esc(text)}")
        elif seq is None:
            items.append(f"<li class='derived'>{esc(text)}")
        else:
            event = run.by_seq.get(seq)
            items.append(f"<li{page.seq(event) if event is not None else ''}>{esc(text)}")
    parts.append("<h4>Witness, in words</h4><ol class='proof'>" + "".join(items) + "</ol></section>")
    return "".join(parts)


def _stuck(run: Run, job: str, outcome: str) -> tuple[float, str] | None:
    """For a stuck job, since when nothing was doing it (its last execution's end, else its first event),
    and the words for the line drawn from then to the end of the run."""
    if outcome != "stuck":
        return None
    spans = run.by_job.get(job, [])
    since = max(s.until(run.end) for s in spans) if spans else run.job_times.get(job, (run.origin, run.end))[0]
    return since, f"{job} is stuck: the queue still held it at the end of the run"


def _run_section(page: svg.Page) -> str:
    """Every execution in its worker's lane; a big run's are merged per pixel past SPAN_CAP."""
    run = page.run
    lanes = svg.worker_lanes(run, run.spans, run.workers)
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
    drawing = svg.draw(page, svg.run_frame(run), lanes, css="lanes", spans_one_by_one=one_by_one, marked=marked,
                       every_deadline=marked is None)
    return f"<section id='run'><h2>Run timeline</h2>{svg.legend()}{note}<div class='wide'>{drawing}</div></section>"


def _jobs_section(page: svg.Page, order: list[str], total: int) -> str:
    """A row per job in `order`, on the run's axis, with every fault across all of them."""
    run = page.run
    lanes = []
    for job in order:
        outcome = page.outcomes.get(job, "")
        lane = svg.Lane(job, f"{job} {outcome}".rstrip(), "job", run.by_job.get(job, []))
        lane.stack(run.end)
        lane.tail = _stuck(run, job, outcome)
        lanes.append(lane)
    drawing = (svg.draw(page, svg.run_frame(run), lanes, css="jobs", bands_over="all", every_deadline=False)
               if lanes else "<p>No jobs.</p>")
    more = (f"<p class='note'>{total - len(order):,} more jobs are not drawn as rows (their executions are in the "
            "worker lanes above); verdict.json lists every job's outcome.</p>" if total > len(order) else "")
    return f"<section id='jobs'><h2>Jobs</h2><div class='wide'>{drawing}</div>{more}</section>"


def _events_json(page: svg.Page) -> str:
    """The events the page's marks name, for the click panel; safe inside a <script> element."""
    shown = {str(seq): {"seq": e.seq, "t": round(e.mono - page.run.origin, 6), "mono": e.mono, "wall": e.wall,
                        "source": e.source, "kind": e.kind, "job": e.job, "worker": e.worker, "data": e.data}
             for seq, e in sorted(page.shown.items())}
    text = json.dumps(finite(shown), default=str, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
