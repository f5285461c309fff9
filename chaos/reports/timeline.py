"""report.html: one self-contained page (inline CSS, SVG and script; nothing fetched) that shows a run at a
glance, built from the verdict and the ledger alone.

- the verdict, then tables (counts, faults, violations, anomalies, exits) with header rows;
- violating jobs first: a section per violation, with that job's own timeline (zoomed to its life), its
  minimal proof (the premises the rule that fired used, then its conclusion), and its whole witness
  written out in words behind a fold, one sentence per witness entry (`chaos.reports.proof`);
- the run: one lane per worker, one for the nemesis (faults) and one for the server, on one time axis
  (`chaos.reports.svg`, drawing the model of `chaos.reports.run_model`), and under a worker the queue's
  own record of it when a target's observer wrote one. Each execution is a span in the lane of the worker
  that held it, labelled (`w1#2`), with its lease deadlines, extensions, effects, acks and abandons;
  faults are shaded bands over the lanes they hit, labelled; a span still open, and a stuck job's tail,
  reach the end-of-run mark. It opens on the window holding every fault and violation, can be zoomed,
  panned and filtered by lane;
- a row per job (violating jobs, then the first MAX_JOBS others) on the same axis.

Idle stretches are collapsed into marked breaks (`svg.warp`), with the linear axis one toggle away (both
drawn; the page shows one). Every mark has an SVG <title> (hover); a click on a mark, a premise or a line
of the witness selects that event everywhere (its marks on every chart, its lines in the proofs) until
cleared, and shows its whole JSON in a panel.

Big runs stay small and quick: the worker lanes draw every span, but at most SPAN_CAP of them one by one
(violating jobs first, then spans that did not end in an accepted ack); the others are merged per pixel
into one path per lane row, and the event marks of at most MARKED_SPANS spans are drawn in the lanes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from chaos.check.verdict import Premise, Verdict, Violation
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
#details-token{font:12px monospace;word-break:break-all}
#details pre{font-size:12px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
#details-close{float:right}
ol.premises{margin:4px 0;padding-left:28px}ol.premises li{cursor:pointer;margin:2px 0}
ol.premises li:hover{background:#f5f5ff}ol.premises li.derived{font-style:italic;color:#555;cursor:default}
ol.premises li.derived::after{content:' (derived)';font-size:11px;color:#888}.seq{color:#777;font-size:12px}
p.conclusion{margin:4px 0 8px 8px;font-weight:bold;color:#b71c1c}details.history summary{cursor:pointer;color:#555}
li.hl{background:#fff3a0!important;outline:1px solid #e0b800}
.m.hl{stroke:#d500f9!important;stroke-width:3!important;paint-order:stroke}
body.linear .view.warped,body:not(.linear) .view.linear{display:none}
.controls{margin:4px 0;display:flex;gap:6px;align-items:center;flex-wrap:wrap}
.plot-bg{fill:#fff}.plot *{vector-effect:non-scaling-stroke}svg.plot{cursor:grab}
.brk rect{fill:#eee;fill-opacity:.8}.brk path{stroke:#777;stroke-width:1.5}
.lane-label.q{fill:#666;font-size:10px}.queue .lane-bg{fill:#f7f4fb}
.q-claim{fill:#1f5fa8}.q-complete{fill:#7b3fb0}.q-release{stroke:#e07000;stroke-width:2;fill:none}
.q-fail{fill:#c62828}.legend svg{vertical-align:middle}.legend span{margin-right:14px;white-space:nowrap}
"""

SCRIPT = """(function(){
var data=JSON.parse(document.getElementById('chaos-events').textContent);
var panel=document.getElementById('details'),pre=document.getElementById('event-json'),
head=document.getElementById('details-title'),tok=document.getElementById('details-token'),also=document.getElementById('details-also'),picked=null,dragged=false;
function show(seq,here){var e=data[seq];if(!e)return;
head.textContent='#'+e.seq+' '+e.kind+' at +'+e.t.toFixed(3)+' s'+(e.worker?' ('+e.worker+')':'')+
(e.label?' '+e.label:'');pre.textContent=JSON.stringify(e,null,2);
tok.textContent=e.data&&e.data.token?'token '+e.data.token:'';
panel.hidden=false;also.textContent='';
if(here.length>1){also.append(here.length+' events here: ');here.forEach(function(s){
var b=document.createElement('button');b.type='button';b.setAttribute('data-pick',s);
b.textContent='#'+s+' '+data[s].kind+(data[s].worker?' '+data[s].worker:'');b.disabled=s===seq;
b.onclick=function(){select(s);show(s,here);};also.append(b,' ');});}}
function clear(){document.querySelectorAll('.hl').forEach(function(e){e.classList.remove('hl');});picked=null;
document.querySelectorAll('.clear-selection').forEach(function(b){b.hidden=true;});}
function select(seq){clear();picked=seq;var lines=[];
document.querySelectorAll('[data-seq="'+seq+'"]').forEach(function(e){e.classList.add('hl');
if(e.tagName==='LI')lines.push(e);});
if(!lines.some(function(li){return !li.closest('details');}))lines.forEach(function(li){
var d=li.closest('details');if(d)d.open=true;});
document.querySelectorAll('.clear-selection').forEach(function(b){b.hidden=false;});}
document.addEventListener('click',function(ev){var t=ev.target;if(!(t instanceof Element))return;
if(dragged){dragged=false;return;}
if(t.id==='details-close'){panel.hidden=true;return;}if(t.closest('#details'))return;
if(t.closest('.clear-selection')){clear();return;}
if(t.closest('.axis-toggle')){var lin=document.body.classList.toggle('linear');
document.querySelectorAll('.axis-toggle').forEach(function(b){
b.textContent=lin?'time with breaks':'linear time';});return;}
var z=t.closest('[data-zoom]');if(z){plots().forEach(function(p){p.zoom(z.getAttribute('data-zoom'));});return;}
var el=t.closest('[data-seq]');if(!el)return;var seq=el.getAttribute('data-seq'),here=[];
if(el.tagName!=='LI')document.elementsFromPoint(ev.clientX,ev.clientY).forEach(function(h){
var s=h.getAttribute&&h.getAttribute('data-seq');if(s&&data[s]&&here.indexOf(s)<0)here.push(s);});
if(here.indexOf(seq)<0)here.unshift(seq);select(seq);show(seq,here);});
document.addEventListener('keydown',function(ev){if(ev.key==='Escape'){panel.hidden=true;clear();}});
function Plot(svg){var full=svg.getAttribute('data-full').split(' ').map(Number),
home=svg.getAttribute('data-home').split(' ').map(Number),vb=home.slice(),H=svg.getAttribute('height'),
pw=+svg.getAttribute('width'),marks=svg.querySelectorAll('[data-x]');
function apply(){svg.setAttribute('viewBox',vb[0]+' 0 '+vb[1]+' '+H);var k=full[1]/vb[1];
marks.forEach(function(e){var x=+e.getAttribute('data-x');
e.setAttribute('transform',k===1?'':'translate('+x*(1-1/k)+',0) scale('+1/k+',1)');});}
function set(x,w){w=Math.min(full[1],Math.max(w,full[1]/400));x=Math.max(full[0],Math.min(x,full[0]+full[1]-w));
vb=[x,w];apply();}
this.zoom=function(how){var c=vb[0]+vb[1]/2;if(how==='in')set(c-vb[1]/4,vb[1]/2);
else if(how==='out')set(c-vb[1],vb[1]*2);else if(how==='all')set(full[0],full[1]);else set(home[0],home[1]);};
svg.addEventListener('wheel',function(ev){if(!ev.ctrlKey&&!ev.metaKey)return;ev.preventDefault();
var r=svg.getBoundingClientRect(),at=vb[0]+(ev.clientX-r.left)/r.width*vb[1],f=ev.deltaY>0?1.25:0.8;
set(at-(at-vb[0])*f,vb[1]*f);},{passive:false});
svg.addEventListener('mousedown',function(ev){if(ev.button!==0)return;var x0=ev.clientX,v0=vb[0],moved=false;
function move(m){var dx=m.clientX-x0;if(Math.abs(dx)>3)moved=true;
if(moved)set(v0-dx*vb[1]/svg.getBoundingClientRect().width,vb[1]);}
function up(){document.removeEventListener('mousemove',move);document.removeEventListener('mouseup',up);
if(moved)dragged=true;}
document.addEventListener('mousemove',move);document.addEventListener('mouseup',up);});
apply();}
var made=[];document.querySelectorAll('svg.plot').forEach(function(s){made.push(new Plot(s));});
function plots(){return made;}
var filter=document.getElementById('lane-filter');
if(filter)filter.addEventListener('input',function(){var q=filter.value.trim().toLowerCase();
document.querySelectorAll('#run svg.timeline').forEach(function(svg){var y=null;
svg.querySelectorAll('g.lane').forEach(function(g){var name=g.getAttribute('data-lane'),
label=svg.querySelector('text.lane-label[data-lane="'+CSS.escape(name)+'"]'),
keep=!q||name.toLowerCase().indexOf(q)>=0,top=+g.getAttribute('data-y');if(y===null)y=top;
[g,label].forEach(function(e){if(!e)return;e.style.display=keep?'':'none';
e.setAttribute('transform','translate(0,'+(y-top)+')');});if(keep)y+=+g.getAttribute('data-h');});});});
})();"""

DEFS = ("<defs><pattern id='open-hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
        "patternTransform='rotate(45)'><rect width='6' height='6' fill='#f6d4d4'/>"
        "<line x1='0' y1='0' x2='0' y2='6' stroke='#c62828' stroke-width='2'/></pattern></defs>")



def render(verdict: Verdict, ledger: Sequence[Event], built: box.Box | None = None) -> str:
    """The whole page, as one string; `built`: its red-build box, where the caller has built it."""
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
            f"<h1 class='{esc(verdict.verdict)}'>{esc(title)}</h1>",
            box.page_box(box.of_verdict(verdict, run.names, built), ledger)]
    if verdict.error:
        head.append(f"<p class='error'>Error: {esc(verdict.error.splitlines()[0])}</p>")
    head += [f"<p class='note'>note: {esc(note)}</p>" for note in verdict.notes]
    head.append(f"<p class='note'>Contract: {esc(contract_words(verdict.contract))}</p>"
                "<nav><a href='#violations'>violations</a><a href='#run'>run timeline</a>"
                "<a href='#jobs'>jobs</a></nav>")
    body = [_tables(verdict, anchors),
            "<section id='violations'><h2>Violating jobs</h2>"
            + ("".join(sections) or "<p>None: every job kept the contract.</p>") + "</section>",
            _run_section(page, shown), _jobs_section(page, order, len(verdict.jobs))]
    tail = ["<aside id='details' hidden><button id='details-close' type='button'>close</button>"
            "<b id='details-title'></b><div id='details-token'></div><div id='details-also'></div>"
            "<pre id='event-json'></pre></aside>",
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


def _views(draw: Callable[[svg.Frame], str], frame: svg.Frame, times: list[float]) -> str:
    """The drawing on the warped axis (idle stretches collapsed) and, when that differs, on the linear one
    too: the page shows one of the two (the axis toggle)."""
    warped = svg.warp(frame, times)
    if not warped.breaks:
        return f"<div class='wide'>{draw(frame)}</div>"
    return (f"<div class='wide view warped'>{draw(warped)}</div>"
            f"<div class='wide view linear'>{draw(frame)}</div>")


def _violation_section(page: svg.Page, violation: Violation, anchor: str) -> str:
    """The violation, its job's own timeline (zoomed to its life, with the workers its witness names), its
    minimal proof and its whole witness in words, folded."""
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
        lanes = svg.worker_lanes(run, spans, workers, job)
        stuck = _stuck(run, job, page.outcomes.get(job, ""))
        if stuck is not None:
            frame.t1 = run.end + max((run.end - frame.t0) * 0.04, 0.02)
            owner = max(spans, key=lambda s: s.start).worker if spans else NEMESIS
            for lane in lanes:
                if lane.name == owner:
                    lane.tails.append(stuck)
        parts.append(_views(lambda f: svg.draw(page, f, lanes, css="job-timeline"), frame,
                            svg.times_of(run, spans, lanes)))
    items = []
    for seq, text in proof.abridged(proof.in_words(violation.witness, job, run.lease, run.journal)):
        if seq == proof.GAP:
            items.append(f"<li class='gap'>{esc(text)}")
        elif seq is None:
            items.append(f"<li class='derived'>{esc(text)}")
        else:
            event = run.by_seq.get(seq)
            items.append(f"<li{page.seq(event) if event is not None else ''}>{esc(text)}")
    history = "<ol class='proof'>" + "".join(items) + "</ol>"
    if violation.proof:
        parts.append("<h4>Proof</h4><ol class='premises'>" + "".join(_premise(page, p) for p in violation.proof)
                     + "</ol>")
        if violation.conclusion:
            parts.append(f"<p class='conclusion'>so {esc(violation.conclusion)}</p>")
        parts.append(f"<details class='history'><summary>The whole history, in words ({len(items)} steps)</summary>"
                     f"{history}</details></section>")
    else:
        parts.append(f"<h4>Witness, in words</h4>{history}</section>")
    return "".join(parts)


def _premise(page: svg.Page, premise: Premise) -> str:
    """A premise of a proof: selecting it selects its event's marks; a derived one (no event) is marked."""
    event = page.run.by_seq.get(premise.seq) if premise.seq is not None else None
    if event is None:
        return f"<li class='derived' title='derived from the events around it'>{esc(premise.says)}"
    return f"<li{page.seq(event)}>{esc(premise.says)} <span class='seq'>#{event.seq}</span>"


def _stuck(run: Run, job: str, outcome: str) -> tuple[float, str] | None:
    """For a stuck job, since when nothing was doing it (its last execution's end, else its first event),
    and the words for the line drawn from then to the end of the run."""
    if outcome != "stuck":
        return None
    spans = run.by_job.get(job, [])
    since = max(s.until(run.end) for s in spans) if spans else run.job_times.get(job, (run.origin, run.end))[0]
    return since, f"{job} is stuck: the queue still held it at the end of the run"


def _focus(page: svg.Page, violations: Sequence[Violation]) -> tuple[float, float] | None:
    """The times the run view opens on: every fault, every violating job's executions and the events its
    proof names, and the end of the run when a job was stuck (its tail reaches it); None: nothing to show."""
    run = page.run
    times = [t for band in run.bands for t in (band.start, band.until())]
    for job in page.violating:
        times += [t for span in run.by_job.get(job, []) for t in (span.start, span.until(run.end))]
        if page.outcomes.get(job) == "stuck":
            times.append(run.end)
    for violation in violations:
        times += [run.by_seq[p.seq].mono for p in violation.proof if p.seq is not None and p.seq in run.by_seq]
    return (min(times), max(times)) if times else None


def _run_section(page: svg.Page, violations: Sequence[Violation]) -> str:
    """Every execution in its worker's lane, the queue's record under it; a big run's merged per pixel past
    SPAN_CAP. Opens on the faults and violations; zoom, pan, reset, the axis toggle and a lane filter."""
    run = page.run
    lanes = svg.worker_lanes(run, run.spans, run.workers)
    for job in sorted(page.violating, key=natural_key):
        stuck = _stuck(run, job, page.outcomes.get(job, ""))
        spans = run.by_job.get(job, [])
        if stuck is not None and spans:
            owner = max(spans, key=lambda s: s.start).worker
            for lane in lanes:
                if lane.name == owner:
                    lane.tails.append(stuck)
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
    home = _focus(page, violations) or (run.origin, run.end)
    frame = svg.run_frame(run)
    drawn = run.spans if marked is None else [s for s in run.spans if s in marked]
    times = svg.times_of(run, drawn, lanes) + [t for s in run.spans for t in (s.start, s.until(run.end))]
    views = _views(lambda f: svg.draw(page, f, lanes, css="lanes", spans_one_by_one=one_by_one, marked=marked,
                                      every_deadline=marked is None, home=home), frame, times)
    controls = ("<div class='controls'><button type='button' data-zoom='in'>zoom in</button>"
                "<button type='button' data-zoom='out'>zoom out</button>"
                "<button type='button' data-zoom='home'>reset</button>"
                "<button type='button' data-zoom='all'>whole run</button> "
                "<button type='button' class='axis-toggle'>linear time</button> "
                "<label>lanes: <input id='lane-filter' type='search' placeholder='w1, queue, …' size='14'></label> "
                "<button type='button' class='clear-selection' hidden>clear selection (Esc)</button>"
                "<span class='note'> Drag to pan, ctrl + wheel to zoom.</span></div>")
    return (f"<section id='run'><h2>Run timeline</h2>{svg.legend()}{note}{controls}{views}</section>")


def _jobs_section(page: svg.Page, order: list[str], total: int) -> str:
    """A row per job in `order`, on the run's axis, with every fault across all of them."""
    run = page.run
    lanes = []
    for job in order:
        outcome = page.outcomes.get(job, "")
        lane = svg.Lane(job, f"{job} {outcome}".rstrip(), "job", run.by_job.get(job, []))
        lane.stack(run.end)
        stuck = _stuck(run, job, outcome)
        if stuck is not None:
            lane.tails.append(stuck)
        lanes.append(lane)
    spans = [span for job in order for span in run.by_job.get(job, [])]
    drawing = (_views(lambda f: svg.draw(page, f, lanes, css="jobs", bands_over="all", every_deadline=False),
                      svg.run_frame(run), svg.times_of(run, spans, lanes)) if lanes else "<p>No jobs.</p>")
    more = (f"<p class='note'>{total - len(order):,} more jobs are not drawn as rows (their executions are in the "
            "worker lanes above); verdict.json lists every job's outcome.</p>" if total > len(order) else "")
    return f"<section id='jobs'><h2>Jobs</h2>{drawing}{more}</section>"


def _events_json(page: svg.Page) -> str:
    """The events the page's marks name, for the click panel; safe inside a <script> element."""
    names = page.run.names
    shown = {str(seq): {"seq": e.seq, "t": round(e.mono - page.run.origin, 6), "mono": e.mono, "wall": e.wall,
                        "source": e.source, "kind": e.kind, "job": e.job, "worker": e.worker,
                        "label": names.of_event(e), "data": e.data}
             for seq, e in sorted(page.shown.items())}
    text = json.dumps(finite(shown), default=str, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
