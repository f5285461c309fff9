"""report.html as a person sees it: pages of real runs opened in headless Chromium, read after their
scripts ran, clicked, and screenshotted.

The browser is Debian's `chromium` (ci/setup.sh installs it), driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages ended by a NUL byte, on the browser's fds 3 and 4), so the test
needs nothing beyond the standard library: no WebDriver client, no websocket library.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests.integration.runner import chaos

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TIMEOUT_S = 30.0
PNG = b"\x89PNG\r\n\x1a\n"


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol on a pipe."""

    def __init__(self, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.log = profile / "chromium.log"
        # The browser reads commands on fd 3 and writes answers on fd 4; bash puts the pipes there (dash
        # takes no fd number over 9).
        fds = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}'
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [shutil.which("bash") or "/bin/bash", "-c", fds, CHROMIUM,
                 "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--no-default-browser-check", "--hide-scrollbars", "--mute-audio", f"--user-data-dir={profile}",
                 "about:blank"],
                pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session: str = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                      session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})

    def _read(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._changed:
                    self._changed.notify_all()
                return
            pending += chunk
            *messages, pending = pending.split(b"\0")
            with self._changed:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[int(message["id"])] = message
                    else:
                        self.events.append(message)
                self._changed.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        with self._changed:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, f"{method}: no answer; see {self.log}"
                self._changed.wait(left)
            answer = self._answers.pop(ident)
        assert "error" not in answer, f"{method}: {answer['error']}"
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_for(self, method: str, since: int) -> dict[str, Any]:
        """The first event `method` of the page's session at index `since` or later of `events`."""
        deadline = time.monotonic() + TIMEOUT_S
        with self._changed:
            while True:
                for event in self.events[since:]:
                    if event.get("method") == method and event.get("sessionId") == self.session:
                        return event
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} within {TIMEOUT_S}s"
                self._changed.wait(left)

    def open(self, path: Path) -> None:
        since = len(self.events)
        self.send("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait_for("Page.loadEventFired", since)

    def evaluate(self, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A real click (mouse pressed and released) at the middle of the element, scrolled into view."""
        box = self.evaluate(f"(() => {{const e = document.querySelector({json.dumps(selector)}); "
                            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                            "return [r.x + r.width / 2, r.y + r.height / 2, r.width, r.height];})()")
        x, y, width, height = box
        assert width > 0 and height > 0, f"{selector} is not drawn: {box}"
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path: Path, max_height: int = 4000) -> None:
        height = min(int(self.evaluate("document.documentElement.scrollHeight")), max_height)
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": 1400, "height": height,
                                                             "scale": 1}})
        path.write_bytes(base64.b64decode(shot["data"]))

    def errors(self, since: int = 0) -> list[str]:
        """What the page reported as errors: uncaught exceptions, console.error, error log entries."""
        found = []
        for event in self.events[since:]:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails"))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(json.dumps(params["entry"])[:500])
        return found

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
            self.proc.wait(timeout=10)
        except (AssertionError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._to_browser)
            self._reader.join(timeout=5)
            os.close(self._from_browser)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (ci/setup.sh installs Debian's chromium and chromium-driver)")
    started = Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield started
    finally:
        started.close()


def test_a_failing_runs_report_shows_its_violation_first_with_its_proof(tmp_path: Path, browser: Browser) -> None:
    result = chaos("run", "--target", "pg_lease", "-p", "ack=unconditional", "-p", "watchdog=off",
                   "--scenario", "stop_past_deadline", "--seed", "1", "--runs-dir", str(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    verdict = result.verdict
    (violation,) = [v for v in verdict["violations"] if v["kind"] == "stale_ack_accepted"]
    job, stale, owner = violation["job"], violation["detail"]["worker"], violation["detail"]["owner"]
    (stop,) = [f for f in verdict["faults"] if f["kind"] == "stop"]
    assert stop["target"] == stale and owner != stale

    since = len(browser.events)
    browser.open(result.dir / "report.html")
    section = f"section.violation[data-job='{job}']"
    # The violating job's section comes first: before the run's lanes and the job rows.
    order = browser.evaluate("Array.from(document.querySelectorAll('section.violation, section#run, section#jobs'))"
                             ".map(e => e.id === 'run' || e.id === 'jobs' ? '#' + e.id : e.dataset.job)")
    assert order[0] == job and order.index("#run") > 0 and order.index("#jobs") > order.index("#run"), order
    lanes = browser.evaluate(
        f"Array.from(({visible(section)}).querySelectorAll('g.lane')).map(g => ({{lane: g.dataset.lane, "
        "bands: g.querySelectorAll('.band').length, width: Math.max(0, ...Array.from(g.querySelectorAll('.band'))"
        ".map(b => b.getBoundingClientRect().width)), text: g.textContent}))")
    by_lane = {lane["lane"]: lane for lane in lanes}
    assert {"nemesis", "server", stale, owner} <= set(by_lane), lanes
    # The stop is a band over the stopped worker's lane, labelled in the nemesis lane; not over the other's.
    assert by_lane[stale]["bands"] == 1 and by_lane[stale]["width"] > 20, by_lane[stale]
    assert by_lane[owner]["bands"] == 0 and f"stop {stale}" in by_lane["nemesis"]["text"]
    # Both effects are drawn, each in the lane of the worker that made it.
    events = browser.evaluate("JSON.parse(document.getElementById('chaos-events').textContent)")
    effects = browser.evaluate(f"Array.from(document.querySelectorAll(\"{section} circle.effect\"))"
                               ".map(c => [c.dataset.seq, c.closest('g.lane').dataset.lane])")
    drawn = {(events[seq]["worker"], lane, events[seq]["job"]) for seq, lane in effects}
    assert drawn == {(stale, stale, job), (owner, owner, job)}, effects
    # The proof in words names both workers, and says the stale ack was accepted.
    proof = browser.evaluate(f"Array.from(document.querySelectorAll(\"{section} ol.proof li\"))"
                             ".map(li => li.textContent)")
    assert any(line.startswith(f"{stale} claimed {job}") for line in proof), proof
    assert any(line.startswith(f"{owner} claimed {job}") for line in proof), proof
    assert any(line.startswith(f"{stale} was stopped (SIGSTOP)") for line in proof), proof
    assert any(line.startswith(f"{stale} acknowledged {job}") and "the queue accepted it" in line for line in proof)
    # A click on the stale owner's effect shows that event's whole JSON.
    assert browser.evaluate("document.getElementById('details').hidden") is True
    browser.click(f"{section} g.lane[data-lane='{stale}'] circle.effect")
    shown = browser.evaluate("({hidden: document.getElementById('details').hidden, "
                             "json: document.getElementById('event-json').textContent})")
    assert shown["hidden"] is False
    event = json.loads(shown["json"])
    assert (event["kind"], event["job"], event["worker"]) == ("probe.effect", job, stale)
    assert event["data"]["accepted"] is True and "token" in event["data"]
    # The run view zooms, pans back home, and draws the queue's own record of each worker under it.
    plot = "document.querySelector('#run .view.warped svg.plot')"
    home = browser.evaluate(f"{plot}.getAttribute('viewBox')")
    browser.click("#run button[data-zoom='in']")
    zoomed = browser.evaluate(f"{plot}.getAttribute('viewBox')")
    assert float(zoomed.split()[2]) == pytest.approx(float(home.split()[2]) / 2, rel=0.01), (home, zoomed)
    browser.click("#run button[data-zoom='home']")
    assert browser.evaluate(f"{plot}.getAttribute('viewBox')") == home
    assert browser.evaluate(f"!!document.querySelector(\"#run .view.warped g.lane[data-lane='{stale} · queue'] "
                            ".q-complete\")")
    # The lane filter keeps the lanes it names.
    browser.evaluate(f"(() => {{const f = document.getElementById('lane-filter'); f.value = '{owner}'; "
                     "f.dispatchEvent(new Event('input'));})()")
    shown = browser.evaluate("Array.from(document.querySelectorAll('#run .view.warped g.lane'))"
                             ".filter(g => g.style.display !== 'none').map(g => g.dataset.lane)")
    assert shown and all(owner in lane for lane in shown), shown
    browser.evaluate("(() => {const f = document.getElementById('lane-filter'); f.value = ''; "
                     "f.dispatchEvent(new Event('input'));})()")
    check_red_page(browser, result.dir, "stale_ack_accepted", tmp_path, "stale_ack_accepted")
    assert browser.errors(since) == []


def visible(view: str) -> str:
    """JavaScript: the drawing of `view` (a CSS selector of its container) on the axis the page shows."""
    return (f"Array.from(document.querySelectorAll({json.dumps(view + ' svg.timeline')}))"
            ".find(s => s.getBoundingClientRect().width > 0)")


def check_red_page(browser: Browser, run_dir: Path, kind: str, tmp_path: Path, name: str) -> None:
    """What a reader of a red build needs from the open report.html: a premise selects its marks on both
    charts and a mark its lines, the run view opens on every fault and violation, the box names the cause
    and links the docs; then a screenshot (kept in $CHAOS_SCREENSHOTS when set)."""
    section = f"section.violation[data-kind='{kind}']"
    job_svg, run_svg = visible(section), visible("#run")
    # A premise (the witness's lines until the checker gives a minimal proof) drawn on both charts.
    premises = browser.evaluate(
        f"(() => {{const job = {job_svg}, run = {run_svg}; "
        f"const lines = Array.from(document.querySelectorAll(\"{section} ol.premises li[data-seq]\")); "
        f"const all = lines.length ? lines : "
        f"Array.from(document.querySelectorAll(\"{section} ol.proof li[data-seq]\"));"
        " return all.map(li => li.dataset.seq).filter(s => job.querySelector(`.m[data-seq='${s}']`) && "
        "run.querySelector(`.m[data-seq='${s}']`));})()")
    assert premises, f"no line of the {kind} proof is drawn on both charts"
    seq = premises[0]
    browser.click(f"{section} ol.premises li[data-seq='{seq}'], {section} ol.proof li[data-seq='{seq}']")
    lit = browser.evaluate(f"[{job_svg}, {run_svg}].map(s => Array.from(s.querySelectorAll('.hl'))"
                           ".map(e => e.dataset.seq))")
    assert all(found and set(found) == {seq} for found in lit), (seq, lit)
    browser.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Escape", "code": "Escape",
                                            "windowsVirtualKeyCode": 27})
    assert browser.evaluate("document.querySelectorAll('.hl').length") == 0
    # The reverse: a mark of the run view that a click reaches lights its line in the proof.
    target = browser.evaluate(
        f"(() => {{const run = {run_svg}; for (const m of run.querySelectorAll('.m[data-seq]')) {{"
        f" if (!document.querySelector(`{section} li[data-seq='${{m.dataset.seq}}']`)) continue;"
        " m.scrollIntoView({block: 'center'}); const r = m.getBoundingClientRect(); if (!r.width) continue;"
        " const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);"
        " if (hit && hit.closest('[data-seq]') === m) return m.dataset.seq;} return null;})()")
    assert target is not None, "no mark of the run view can be clicked"
    browser.click(f"#run .m[data-seq='{target}']")
    assert browser.evaluate(f"Array.from(document.querySelectorAll(\"{section} li[data-seq='{target}']\"))"
                            ".some(li => li.classList.contains('hl') && li.getBoundingClientRect().height > 0)")
    browser.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Escape", "code": "Escape",
                                            "windowsVirtualKeyCode": 27})
    # The run view opens on a window that holds every fault and every mark the proof names.
    window = browser.evaluate(
        f"(() => {{const run = {run_svg}, plot = run.querySelector('svg.plot').getBoundingClientRect(); "
        f"const seqs = Array.from(document.querySelectorAll(\"{section} li[data-seq]\")).map(li => li.dataset.seq);"
        " const marks = Array.from(run.querySelectorAll('.band, .band-line')).concat(seqs.flatMap(s => "
        "Array.from(run.querySelectorAll(`.m[data-seq='${s}']`))));"
        " return {left: plot.left, right: plot.right, marks: marks.map(m => {const r = m.getBoundingClientRect(); "
        "return [m.getAttribute('class'), r.left, r.right];})};})()")
    assert window["marks"], window
    outside = [m for m in window["marks"] if m[1] < window["left"] - 1 or m[2] > window["right"] + 1]
    assert not outside, (window["left"], window["right"], outside)
    if kind == "stuck":  # its tail reaches the end of the run in the run view, and the end is in view
        ends = browser.evaluate(f"(() => {{const run = {run_svg}; const tail = run.querySelector('.stuck'), "
                                "end = run.querySelector('.end-line'), plot = run.querySelector('svg.plot')"
                                ".getBoundingClientRect(); return [tail.x2.baseVal.value, end.x1.baseVal.value, "
                                "end.getBoundingClientRect().left, plot.right];})()")
        assert ends[0] == pytest.approx(ends[1]) and ends[2] <= ends[3], ends
    browser.evaluate("window.scrollTo(0, 0)")
    shot = tmp_path / f"{name}.png"
    browser.screenshot(shot)
    keep_screenshot(shot)
    # The red-build box names the cause and links the kind's anchor in the violations reference.
    box = browser.evaluate("(() => {const b = document.querySelector('#box'); return b && {cause: "
                           "(b.querySelector('.cause') || {}).textContent, links: Array.from(b.querySelectorAll("
                           "'a.doc')).map(a => a.getAttribute('href'))};})()")
    assert box is not None and box["cause"], f"report.html has no red-build box naming a cause: {box}"
    assert any("violations" in href and href.endswith(f"#{kind}") for href in box["links"]), box


def keep_screenshot(shot: Path) -> None:
    """A screenshot is the test's evidence for a reader: kept in $CHAOS_SCREENSHOTS when set."""
    png = shot.read_bytes()
    assert png.startswith(PNG) and len(png) > 10_000
    keep = os.environ.get("CHAOS_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


@pytest.mark.parametrize(("name", "args", "kind"), [
    ("stuck", ("--target", "pg_naive", "--scenario", "kill_after_effect_before_ack"), "stuck"),
    ("early_reclaim", ("--target", "pg_lease", "-p", "reclaim=early", "--scenario", "kill_after_claim_before_effect"),
     "early_reclaim"),
])
def test_a_red_builds_page_explains_its_violation(name: str, args: tuple[str, ...], kind: str, tmp_path: Path,
                                                   browser: Browser) -> None:
    result = chaos("run", *args, "--seed", "1", "--runs-dir", str(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    assert kind in {v["kind"] for v in result.verdict["violations"]}
    since = len(browser.events)
    browser.open(result.dir / "report.html")
    check_red_page(browser, result.dir, kind, tmp_path, name)
    assert browser.errors(since) == []


SUITE = """
seeds = [1]
[[cell]]
target = "redis_reliable"
scenario = "no_faults"

[[cell]]
target = "redis_basic"
scenario = "kill_after_claim_before_effect"
verdict = "fail"
violation = "lost"
"""


def test_the_suites_page_links_each_cell_to_its_runs_report(tmp_path: Path, browser: Browser) -> None:
    (tmp_path / "chaos.toml").write_text(SUITE)
    out = tmp_path / "out"
    result = chaos("suite", str(tmp_path / "chaos.toml"), "-j", "2", "--out", str(out), runs_dir=tmp_path)
    assert result.code == 0, result.stdout + result.stderr
    since = len(browser.events)
    browser.open(out / "report.html")
    cells = browser.evaluate("Array.from(document.querySelectorAll('table.matrix td.cell')).map(td => ({variant: "
                             "td.dataset.variant, scenario: td.dataset.scenario, text: td.textContent, "
                             "links: Array.from(td.querySelectorAll('a')).map(a => a.href)}))")
    assert {(c["variant"], c["scenario"]) for c in cells} == {("redis_reliable", "no_faults"),
                                                               ("redis_basic", "kill_after_claim_before_effect")}
    for cell in cells:
        (href,) = cell["links"]
        target = Path(unquote(urlparse(href).path))
        assert target.name == "report.html" and target.is_file() and out in target.parents, href
    (lost,) = [c for c in cells if c["variant"] == "redis_basic"]
    assert "lost" in lost["text"]
    assert "Every run gave its known answer" in browser.evaluate("document.body.textContent")
    # Following a mark opens that run's own report.
    clicked = len(browser.events)  # the next page's load comes after this; the suite page's came before
    browser.click("table.matrix td.cell[data-variant='redis_basic'] a")
    browser.wait_for("Page.loadEventFired", clicked)
    assert browser.evaluate("document.title").startswith("queue-chaos FAIL: redis_basic x kill_after_claim")
    assert browser.evaluate("document.querySelector('section.violation').dataset.kind") == "lost"
    assert browser.errors(since) == []


RED_CELL = """
seeds = [1]
[[cell]]
target = "redis_basic"
scenario = "kill_after_claim_before_effect"
verdict = "pass"
"""


def test_a_suite_with_one_red_cell_shows_its_box_first(tmp_path: Path, browser: Browser) -> None:
    """A cell that did not give its known answer leads the suite's page with its run's box: the cause, the
    docs anchor, and a link to that run's own report, which opens."""
    (tmp_path / "chaos.toml").write_text(RED_CELL)
    out = tmp_path / "out"
    result = chaos("suite", str(tmp_path / "chaos.toml"), "--out", str(out), runs_dir=tmp_path)
    assert result.code == 1, result.stdout + result.stderr
    since = len(browser.events)
    browser.open(out / "report.html")
    box = browser.evaluate(
        "(() => {const b = document.querySelector('.boxes section.box'); if (!b) return null; const r = "
        "b.getBoundingClientRect(), m = document.querySelector('table.matrix').getBoundingClientRect(); return "
        "{cause: (b.querySelector('dd.cause') || {}).textContent, docs: Array.from(b.querySelectorAll('a.doc'))"
        ".map(a => a.getAttribute('href')), report: (Array.from(b.querySelectorAll('a')).find(a => "
        "a.textContent.includes('report')) || {}).href, above: r.bottom <= m.top};})()")
    assert box is not None, "the suite's page shows no box for its red cell"
    assert box["cause"] and box["above"], box
    assert any("violations" in href and href.endswith("#lost") for href in box["docs"]), box
    report = Path(unquote(urlparse(box["report"]).path))
    assert report.name == "report.html" and report.is_file() and out in report.parents, box
    shot = tmp_path / "suite_red_cell.png"
    browser.screenshot(shot)
    keep_screenshot(shot)
    assert browser.errors(since) == []
