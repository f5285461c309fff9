"""`chaos suite [FILE]`: read the suite, pick this shard's runs, check every cell before anything starts,
run them, and write the suite's reports; the exit code is the worst cell's (error 3 over fail 1 over
inconclusive 4 over pass 0), a usage error exit 2 before any run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from chaos.suite.plan import Plan
from chaos.suite.report import cell_record, fresh_output, suite_document, write_suite_reports
from chaos.suite.runner import SuiteRunner, preflight
from chaos.suite.shard import load_durations, parse_shard
from chaos.suite.spec import find_suite_file, load_suite, parse_seeds_text


@dataclass(frozen=True)
class SuiteOptions:
    file: Path | None = None
    jobs: int = 1
    seeds: str | None = None  # the command line's: overrides the file's
    repeat: int | None = None
    shard: str | None = None  # "K/N"
    durations: Path | None = None  # a suite.json whose run times split the shards
    out: Path | None = None
    runs_dir: Path = Path("runs")
    share_servers: bool = True


def run_suite(options: SuiteOptions, say: Callable[[str], None]) -> int:
    path = find_suite_file(options.file)
    seeds = parse_seeds_text(options.seeds, "--seeds") if options.seeds else None
    suite = load_suite(path, seeds=seeds, repeat=options.repeat)
    index, count = parse_shard(options.shard) if options.shard else (1, 1)
    durations = load_durations(options.durations) if options.shard and options.durations else None
    plan = Plan.of(suite, count, durations)  # the whole suite's, recorded by every shard for the merge
    planned = plan.runs()
    order = {(run.key, run.repeat): place for place, run in enumerate(planned)}
    planned = [run for run in planned if plan.dealt[run.key] == index]
    preflight([run.cell for run in planned])
    out = options.out or options.runs_dir / f"suite-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}"
    fresh_output(out, "Pick another --out, or leave it out for a fresh directory under --runs-dir.")
    slice_ = [f"{index}/{count}"] if options.shard else []
    say(f"suite {path}{''.join(f', shard {s}' for s in slice_)}: {len(planned)} run(s), {options.jobs} at a time; "
        f"reports in {out}")
    began = time.monotonic()
    runs = SuiteRunner(out, options.jobs, options.share_servers, say).run(planned)
    document = suite_document([cell_record(run, order[(run.planned.key, run.planned.repeat)]) for run in runs],
                              suite=str(path),
                              shards=slice_, duration_s=time.monotonic() - began, plan=plan.to_json())
    write_suite_reports(out, document)
    counts = ", ".join(f"{n} {name}" for name, n in document["counts"].items() if n) or "no run"
    say(f"{document['status'].upper()}: {counts} in {document['duration_s']:.0f}s; {out / 'summary.md'}")
    return int(document["exit_code"])
