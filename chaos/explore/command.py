"""`chaos explore`: search one target variant's fault schedules within a budget, then replay the smallest
schedule of each violation found, classify it (deterministic, flaky with its rate, or gone) and write it
out as a scenario; report the windows the search reached. `-j N` runs N shards of the search at once as
processes of their own (Hypothesis is single-threaded), sharing one example database; `--shard K/N`
runs one of them, on one machine of N."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from chaos.discovery import find_target
from chaos.errors import ConfigError, HarnessError
from chaos.explore.report import Finding, Report, text
from chaos.explore.runs import Attempt, ScheduleRunner, Variant
from chaos.explore.scenario_file import write
from chaos.explore.schedule import Schedule, faults
from chaos.explore.search import INTERRUPTED, MODES, Budget, Search, SearchLog
from chaos.explore.shared import SharedRuns
from chaos.names import id_part
from chaos.procs import die_with_parent
from chaos.runtime.run import prepare
from chaos.scenario import Scenario
from chaos.suite.runner import run_options


@dataclass(frozen=True)
class ExploreOptions:
    variant: Variant  # the target as explored, with its settings
    budget: int = 60  # runs, shrinking included, over every shard
    time_s: float | None = None
    seed: int = 1
    mode: str = "guided"
    faults: tuple[str, ...] | None = None  # None: every kind the target can take where it runs
    jobs: int = 1
    shard: tuple[int, int] = (1, 1)
    replays: int = 3
    out: Path = Path("scenarios")
    runs_dir: Path = Path("runs")
    search_only: bool = False  # a shard of -j: search, write its log, leave the rest to its parent
    resume: bool = True  # start from the example database (else a fresh one)

    @property
    def home(self) -> Path:
        """Where this variant's explorations live: its example database, and each shard's runs."""
        return self.runs_dir / "explore" / id_part(self.variant.name.replace(" ", "-"))


def explore(options: ExploreOptions, say: Callable[[str], None]) -> int:
    if options.mode not in MODES:
        raise ConfigError(f"--mode {options.mode!r}: expected one of {', '.join(MODES)}.")
    faults = takeable_faults(options)
    index, count = options.shard
    home = options.home / f"shard-{index}-of-{count}"
    if options.jobs > 1 and count == 1:
        log = _shards(options, say)
    else:
        share = options.budget // count + (1 if index <= options.budget % count else 0)
        runner = ScheduleRunner(options.variant, home)
        search = Search(runner, faults, Budget(max(1, share), options.time_s), options.mode,
                        options.seed + index - 1, options.home / "db" if options.resume else None, say,
                        _shared(options) if options.search_only else None)
        say(f"chaos explore: {options.variant.name}, {options.mode} search, seed {options.seed + index - 1}, "
            f"faults {', '.join(faults) or 'none'}; budget {share} runs"
            + (f" or {options.time_s:.0f} s" if options.time_s else ""))
        log = search.run()
        if options.search_only:
            _write_log(home / "search.json", log)
            return 0
    interrupted = log.stopped_by == INTERRUPTED
    findings = [] if interrupted else _classify(options, log, ScheduleRunner(options.variant, options.home / "replays",
                                                                             options.jobs), say)
    report = Report(options.variant.name, options.mode, options.seed, options.budget, options.time_s, faults,
                    log, findings)
    where = (home if count > 1 else options.home) / "report.json"  # one machine's shard: its own report
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    say(text(report))
    say(f"report: {where}")
    if interrupted:
        say("chaos: interrupted; the report holds the runs made so far (nothing was replayed or written to "
            f"{options.out})")
        return 130
    return report.exit_code


def takeable_faults(options: ExploreOptions) -> tuple[str, ...]:
    """The fault kinds a run of the target can take where it runs, as `chaos run` would judge a scenario
    declaring each: the target's own settings checked first (a mistake there is the user's, exit 2)."""
    target = find_target(options.variant.target)
    settings = run_options(options.variant.cell("explore"))
    prepare(target, _declaring(()), settings)
    known = faults()
    wanted = options.faults if options.faults is not None else known
    if not wanted:
        raise ConfigError(f"--faults names no fault kind: expected some of {', '.join(known)}, comma-separated "
                          "(--faults kill,stop), or no --faults for every kind the target can take.")
    unknown = [kind for kind in wanted if kind not in known]
    if unknown:
        raise ConfigError(f"--faults {','.join(unknown)}: the schedule language has the faults "
                          f"{', '.join(known)}; name some of them, comma-separated.")
    takeable = []
    for kind in wanted:
        try:
            prepare(target, _declaring((kind,)), settings)
        except ConfigError as refused:
            if options.faults is not None:  # asked for by name: say why it cannot be
                raise ConfigError(f"--faults {kind}: {refused}") from refused
            continue
        takeable.append(kind)
    return tuple(takeable)


def _declaring(faults: tuple[str, ...]) -> Scenario:
    return Scenario("explore", Path("explore.py"), "", lambda ctx: None, faults)


def _classify(options: ExploreOptions, log: SearchLog, runner: ScheduleRunner,
              say: Callable[[str], None]) -> list[Finding]:
    """Replay the smallest schedule of each violation `replays` times from the scenario file written for
    it (one file for the violations sharing a schedule): each violation deterministic (every replay shows
    it), flaky (its rate) or gone (none does; a file none of its violations came back in is removed)."""
    by_schedule: dict[str, list[str]] = {}
    for kind, attempt in sorted(log.smallest.items()):
        by_schedule.setdefault(attempt.schedule.digest(), []).append(kind)
    findings = []
    for kinds in by_schedule.values():
        schedule = log.smallest[kinds[0]].schedule
        name = f"found_{_digest(options.variant.name, schedule)}"
        path = write(options.out / f"{name}.py", schedule, _headline(options, [], kinds))
        say(f"replaying {name} ({', '.join(kinds)}) {options.replays} times")
        replays = runner.replay(path, schedule, options.replays)
        found = [Finding(kind, log.smallest[kind], log.first[kind], sum(kind in r.violations for r in replays),
                         options.replays, path, options.variant.command(path)) for kind in kinds]
        if any(f.again for f in found):
            write(path, schedule, _headline(options, found, kinds), [f"Replay: {options.variant.command(path)}"])
        else:
            path.unlink()
            found = [replace(f, scenario=None) for f in found]
        findings += found
    return findings


def _headline(options: ExploreOptions, found: list[Finding], kinds: list[str]) -> str:
    if not found:
        return f"Found by chaos explore: {options.variant.name} violates {', '.join(kinds)}."
    return (f"Found by chaos explore: {options.variant.name} violates "
            + ", ".join(f"{f.violation} ({f.classification}, {f.replayed} replays)" for f in found) + ".")


def _digest(variant: str, schedule: Schedule) -> str:
    return hashlib.sha1(f"{variant} {schedule.digest()}".encode()).hexdigest()[:10]


def _shards(options: ExploreOptions, say: Callable[[str], None]) -> SearchLog:
    """Run `jobs` shards of the search as processes of their own, none running a schedule another ran;
    their logs as one."""
    _shared(options).clear()
    processes = []
    for index in range(1, options.jobs + 1):
        (options.home / f"shard-{index}-of-{options.jobs}" / "search.json").unlink(missing_ok=True)
        argv = [sys.executable, "-m", "chaos", *command_line(replace(options, jobs=1, shard=(index, options.jobs),
                                                                     search_only=True))]
        processes.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True,
                                          preexec_fn=die_with_parent(signal.SIGTERM)))
    interrupted = False
    try:
        codes = [process.wait() for process in processes]
    except KeyboardInterrupt:  # each shard stops its run, cleans up and writes what it found
        interrupted = True
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait() for process in processes]
    if any(codes) and not interrupted:
        raise HarnessError(f"a shard of the search ended with exit code {max(codes)}; its output is above")
    log = SearchLog()
    for index in range(1, options.jobs + 1):
        saved = options.home / f"shard-{index}-of-{options.jobs}" / "search.json"
        if saved.exists():
            _read_log(saved, log)
    if interrupted:
        log.stopped_by = INTERRUPTED
    return log


def _shared(options: ExploreOptions) -> SharedRuns:
    return SharedRuns(options.home / "shared")


def command_line(options: ExploreOptions) -> list[str]:
    """The `chaos explore` arguments that repeat `options`."""
    argv = ["explore", "--target", options.variant.target, "--budget", str(options.budget), "--seed", str(options.seed),
            "--mode", options.mode, "--replays", str(options.replays), "--out", str(options.out),
            "--runs-dir", str(options.runs_dir), "--shard", f"{options.shard[0]}/{options.shard[1]}",
            *options.variant.cell("explore").settings_argv()]
    if options.time_s is not None:
        argv += ["--time", str(options.time_s)]
    if options.faults is not None:
        argv += ["--faults", ",".join(options.faults)]
    if options.search_only:
        argv.append("--search-only")
    if not options.resume:
        argv.append("--fresh")
    return argv


def _write_log(path: Path, log: SearchLog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"stopped_by": log.stopped_by,
                                "attempts": [[a.to_dict(), log_seconds] for a, log_seconds in
                                             zip(log.attempts, log.elapsed, strict=True)]}) + "\n")


def _read_log(path: Path, log: SearchLog) -> None:
    saved = json.loads(path.read_text())
    for raw, elapsed in saved["attempts"]:
        log.add(Attempt.from_dict(raw), elapsed)
    log.stopped_by = saved["stopped_by"]

