"""Report scaling: how long `chaos.reports.write_reports` takes, and how big report.html gets, on big runs.

What it measures: for synthetic runs of 10,000 and 100,000 jobs (the ledgers of benchmarks/checker_scaling.py,
built from `chaos.events` constructors: a few workers executing jobs concurrently with heartbeats, some
killed after an effect and before its ack with the job redelivered after the lease, some executions
abandoned after a failed heartbeat, a few jobs left stuck, which are the violations), it judges the
ledger (`chaos.check.checker.judge`, timed apart) and then times `write_reports` into a temp dir (every
report: verdict.json, summary.txt/.md, junit.xml, report.html), and `timeline.render` alone, printing
the seconds and report.html's size; with --browser, it also opens report.html in headless Chromium (the
browser test's DevTools-pipe driver) and prints how long the page took to load, its scripts included
(the navigation's loadEventEnd, best of --repeat).

Why: report.html draws every execution in its worker's lane; it must stay a page a browser opens at once
and be written quickly. The bars: the reports of a run of 100,000 jobs written in under 10 s, its page
loaded in under 1 s.
It asserts nothing; it prints the numbers.

    python3 benchmarks/report_scaling.py [--jobs 10000 100000] [--workers 4] [--repeat 1] [--browser]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.checker_scaling import Shape, _events_per_job, synthetic_ledger  # noqa: E402
from chaos.check.checker import judge  # noqa: E402
from chaos.reports import timeline, write_reports  # noqa: E402

GOAL_S = 10.0  # the reports of a 100,000-job run
LOAD_GOAL_S = 1.0  # its page, loaded in Chromium
JOBS = (10_000, 100_000)


def load_s(page: Path, repeat: int) -> float:
    """Seconds from navigation to the end of the load event (parsing, layout, the page's script), best of
    `repeat`, in headless Chromium."""
    from tests.integration.test_report_html import Browser

    with tempfile.TemporaryDirectory(prefix="chaos-report-browser-") as profile:
        browser = Browser(Path(profile))
        try:
            best = float("inf")
            for _ in range(repeat):
                browser.open(page)
                ms = browser.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
                best = min(best, float(ms) / 1000)
                assert not browser.errors(), browser.errors()
            return best
        finally:
            browser.close()


def measure(jobs: int, workers: int, repeat: int, browser: bool) -> dict[str, float | int | str]:
    shape = Shape(workers=workers, kill_one_in=250, abandon_one_in=300, stuck=5)
    start = time.perf_counter()
    ledger = synthetic_ledger(round(jobs * _events_per_job(shape)), shape)
    built = time.perf_counter() - start
    start = time.perf_counter()
    verdict = judge(ledger)
    judged = time.perf_counter() - start
    write_s = render_s = float("inf")
    size = 0
    with tempfile.TemporaryDirectory(prefix="chaos-report-bench-") as tmp:
        for attempt in range(repeat):
            run_dir = Path(tmp) / f"run-{attempt}"
            gc.collect()
            start = time.perf_counter()
            write_reports(run_dir, verdict, ledger)
            write_s = min(write_s, time.perf_counter() - start)
            size = (run_dir / "report.html").stat().st_size
            gc.collect()
            start = time.perf_counter()
            timeline.render(verdict, ledger)
            render_s = min(render_s, time.perf_counter() - start)
        loaded = load_s(run_dir / "report.html", repeat) if browser else float("nan")
    kinds: dict[str, int] = {}
    for violation in verdict.violations:
        kinds[violation.kind] = kinds.get(violation.kind, 0) + 1
    return {"jobs": len(verdict.jobs), "events": len(ledger), "faults": len(verdict.faults),
            "violations": ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none",
            "built_s": built, "judge_s": judged, "write_s": write_s, "render_s": render_s, "html_bytes": size,
            "load_s": loaded}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=list(JOBS), help="jobs per synthetic run")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="write the reports N times, keep the best")
    parser.add_argument("--browser", action="store_true", help="also time the page's load in headless Chromium")
    args = parser.parse_args(argv)
    print(f"{'jobs':>8} {'events':>9} {'faults':>6} {'judge s':>8} {'write_reports s':>16} {'render s':>9} "
          f"{'report.html':>12} {'load s':>7}  violations")
    rows = []
    for jobs in args.jobs:
        row = measure(jobs, args.workers, args.repeat, args.browser)
        rows.append(row)
        print(f"{row['jobs']:>8,} {row['events']:>9,} {row['faults']:>6} {row['judge_s']:>8.2f} "
              f"{row['write_s']:>16.2f} {row['render_s']:>9.2f} {int(row['html_bytes']):>12,} "
              f"{float(row['load_s']):>7.2f}  {row['violations']}", flush=True)
    largest = max(rows, key=lambda r: int(r["jobs"]))
    verdict = "meets" if float(largest["write_s"]) < GOAL_S else "OVER"
    print(f"goal: the reports of a 100,000-job run written in < {GOAL_S:.0f} s; at {int(largest['jobs']):,} jobs: "
          f"{float(largest['write_s']):.2f} s ({verdict} goal)")
    if args.browser:
        loaded = float(largest["load_s"])
        print(f"goal: its page loaded in Chromium in < {LOAD_GOAL_S:.0f} s: {loaded:.2f} s "
              f"({'meets' if loaded < LOAD_GOAL_S else 'OVER'} goal)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
