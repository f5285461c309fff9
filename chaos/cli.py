"""The `chaos` command: run a scenario against a target, recompute a report, list what exists, clean up
after killed runs, serve the embedded Toxiproxy; run a suite of many cells, and merge its shards.

Exit codes: 0 pass, 1 fail, 2 usage or configuration error, 3 harness error, 4 inconclusive, 5 skipped (the
scenario needs what the target's contract does not promise; nothing ran).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from types import FrameType
from typing import NoReturn, TextIO

from chaos import doctor, events
from chaos.authoring.check import check_target
from chaos.authoring.check import summary as check_summary
from chaos.authoring.scaffold import new_target
from chaos.backends.registry import KINDS, provider_names, providers, reference_target
from chaos.check.checker import judge
from chaos.check.labels import of_ledger
from chaos.contract import SECONDS, Contract, is_seconds
from chaos.discovery import available_scenarios, available_targets, find_scenario, find_target
from chaos.errors import ChaosError, ConfigError
from chaos.faults import KINDS as FAULT_KINDS
from chaos.ledger import LedgerUnwritable, read_events
from chaos.reports import summary, write_reports
from chaos.reports.schemas import NAMES, schema_text
from chaos.reports.timelines import job_timeline, worker_timeline
from chaos.runtime import exit_owner, last_resort
from chaos.runtime.cleanup import clean_killed_runs
from chaos.runtime.run import RunOptions, run_scenario
from chaos.runtime.sink import SINK_MODES
from chaos.scenario import SHARED_PARAMS, load_scenario
from chaos.suite.command import SuiteOptions, run_suite
from chaos.suite.merge import merge
from chaos.suite.report import markdown
from chaos.suite.shard import parse_shard
from chaos.target import load_target
from chaos.toxiproxy.server import serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chaos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one scenario against one target and print its verdict")
    run.add_argument("--target", required=True, help="a target name (see `chaos list`) or a target folder")
    run.add_argument("--scenario", required=True, help="a scenario name or a path to a scenario .py file")
    run.add_argument("--seed", type=int, default=None, help="seed for the scenario's choices (default: random)")
    _run_settings(run)
    run.add_argument("--sink-mode", choices=SINK_MODES, default="plain", help="how the effect sink dedupes")
    run.add_argument("--deadline", type=_seconds, default=None, metavar="SECONDS",
                     help="end the run as a harness error past this many seconds (default: the scenario's "
                          "DEADLINE_S, else 60 + 30 x the contract's recovery_bound_s)")
    run.add_argument("--no-observer", dest="observe", action="store_false",
                     help="judge from the workers' probes alone, without the target's observer of the queue's record")
    _contract_option(run)
    run.add_argument("-s", "--scenario-param", action="append", default=[], metavar="KEY=VALUE",
                     help="choose one of the scenario's PARAMS, e.g. -s mode=blackhole (repeatable)")
    run.add_argument("--run-dir-file", type=Path, default=None, metavar="PATH",
                     help="write the run dir's path to PATH as the run begins, for a program that judges exactly "
                          "this run (the pytest plugin does)")
    target = sub.add_parser("target", help="write a new target, or check one before any fault")
    target_sub = target.add_subparsers(dest="target_command", required=True)
    new = target_sub.add_parser("new", help="write a target that runs green at once, from the kind's reference")
    new.add_argument("name", help="the target's name (and folder)")
    new.add_argument("--backend", required=True, choices=sorted(KINDS), help="the backend kind it runs on")
    new.add_argument("--dir", type=Path, default=Path("targets"),
                     help="where to write its folder (default ./targets, where chaos finds targets by name)")
    new.add_argument("--library", action="store_true",
                     help="the form for a library's adapter: without the reference's observer and reconciler, "
                          "its target.toml ending with a key layout to fill in, an observer from configuration "
                          "(redis)")
    check = target_sub.add_parser("check", help="one fault-free run that proves the target's seams, naming what "
                                                "is missing")
    check.add_argument("target", help="a target name or folder")
    _run_settings(check)
    suite = sub.add_parser("suite", help="run a suite file's cells (each target variant x scenario x seed) in "
                                         "parallel, each against the verdict it must give")
    suite.add_argument("file", nargs="?", type=Path, default=None,
                       help="the suite file (default: ./chaos.toml, else ./pyproject.toml's [tool.chaos])")
    suite.add_argument("-j", "--jobs", type=_jobs, default=os.cpu_count() or 1,
                       help="runs at once, each on its own servers and ports (default: the number of CPUs)")
    suite.add_argument("--seeds", default=None, help="the seeds of every cell, instead of the file's: 3, 1,2,5 or 1-5")
    suite.add_argument("--repeat", type=_jobs, default=None,
                       help="run each cell and seed N times and report whether its verdicts agreed")
    suite.add_argument("--shard", default=None, metavar="K/N", help="run only the K-th of N stable slices")
    suite.add_argument("--durations", type=Path, default=None, metavar="SUITE_JSON",
                       help="an earlier suite.json, whose run times split the shards evenly")
    suite.add_argument("--out", type=Path, default=None,
                       help="where the suite's reports and runs go (default: a new suite-<time> under --runs-dir)")
    suite.add_argument("--runs-dir", type=Path, default=Path(os.environ.get(events.ENV_RUNS_DIR, "runs")))
    suite.add_argument("--no-shared-servers", dest="share_servers", action="store_false",
                       help="start a server for every run, also where a shared one would do")
    explore = sub.add_parser("explore", help="search fault schedules with Hypothesis, shrink each violation to its "
                                             "smallest schedule and write it out as a scenario that replays it")
    explore.add_argument("--target", required=True, help="a target name (see `chaos list`) or a target folder")
    explore.add_argument("--budget", type=_jobs, default=60, metavar="RUNS",
                         help="real runs the search may make, shrinking included, over all shards (default 60)")
    explore.add_argument("--time", type=_seconds, default=None, metavar="SECONDS",
                         help="stop searching after this long, whatever is left of --budget")
    explore.add_argument("--seed", type=int, default=1, help="the search's seed (default 1): a search is repeatable")
    explore.add_argument("--mode", choices=("guided", "random"), default="guided",
                         help="guided: steer toward longer holds, overlaps and more windows (hypothesis.target); "
                              "random: the same schedules without that feedback")
    explore.add_argument("--faults", default=None, metavar="KIND,...",
                         help="the fault kinds schedules may use (default: every one the target can take where "
                              "it runs)")
    explore.add_argument("-j", "--jobs", type=_jobs, default=1,
                         help="search in this many processes at once, sharing one example database (default 1)")
    explore.add_argument("--shard", default=None, metavar="K/N", help="run the K-th of N slices of the search")
    explore.add_argument("--replays", type=_jobs, default=3,
                         help="replay each smallest schedule found this many times to classify it (default 3)")
    explore.add_argument("--out", type=Path, default=Path("scenarios"),
                         help="where found scenarios are written (default ./scenarios, where chaos finds them)")
    explore.add_argument("--fresh", dest="resume", action="store_false",
                         help="start without the example database of earlier explorations of this variant")
    explore.add_argument("--search-only", action="store_true", help=argparse.SUPPRESS)
    _run_settings(explore, backend_url=False)
    _contract_option(explore)
    merge = sub.add_parser("merge", help="join the outputs of a suite's shards into one report")
    merge.add_argument("dirs", nargs="+", type=Path, help="each shard's --out directory")
    merge.add_argument("--out", type=Path, required=True, help="where the merged reports go")
    schema = sub.add_parser("schema", help="print the JSON Schema of verdict.json or suite.json")
    schema.add_argument("name", nargs="?", choices=NAMES, default="verdict")
    report = sub.add_parser("report", help="recompute the verdict of a run from its ledger alone, or print one "
                                           "job's or worker's timeline")
    report.add_argument("run_dir", type=Path)
    shown = report.add_mutually_exclusive_group()
    shown.add_argument("--job", default=None, metavar="JOB",
                       help="print this job's timeline (its events, and the faults and process events of the workers "
                            "that touched it), one line each, for any run; writes no reports")
    shown.add_argument("--worker", default=None, metavar="W",
                       help="print this worker's timeline (its executions by label, its process events and faults)")
    sub.add_parser("list", help="show the targets and scenarios found")
    sub.add_parser("doctor", help="what this machine has: providers, fault kinds, binaries and the Docker engine, "
                                  "and how to get what is missing (one table)")
    clean = sub.add_parser("clean", help="remove what runs whose runner was killed left behind (server data, "
                                         "a namespace on an external server), in every run dir under --runs-dir "
                                         "(a suite's --out too); what does not prove it is that run's is only "
                                         "reported")
    clean.add_argument("--runs-dir", type=Path, default=Path(os.environ.get(events.ENV_RUNS_DIR, "runs")))
    clean.add_argument("--backend-url", default=None, help="your server, to remove a killed run's namespace there")
    toxiproxy = sub.add_parser("toxiproxy", help="the embedded Toxiproxy-compatible server")
    toxiproxy_sub = toxiproxy.add_subparsers(dest="toxiproxy_command", required=True)
    serve = toxiproxy_sub.add_parser("serve", help="serve the Toxiproxy HTTP API in the foreground until Ctrl-C")
    serve.add_argument("--host", default="127.0.0.1", help="the API's address (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8474, help="the API's port (default 8474, as Toxiproxy's; 0: any)")
    return parser


def _run_settings(parser: argparse.ArgumentParser, backend_url: bool = True) -> None:
    """Where a run writes, which server it uses, and the target's settings: `chaos run`'s, `chaos target
    check`'s and `chaos explore`'s (which takes an external server's URL from the kind's variable alone:
    the URL would be in every report and scenario it writes)."""
    parser.add_argument("--runs-dir", type=Path, default=Path(os.environ.get(events.ENV_RUNS_DIR, "runs")))
    where = "--backend-url (which selects it)" if backend_url else "the kind's variable (CHAOS_POSTGRES_URL, ...)"
    parser.add_argument("--backend", choices=provider_names(), default=None,
                        help="the backend's provider; local: a private server on a free port (the default); "
                             f"external: your server, at {where}")
    if backend_url:
        parser.add_argument("--backend-url", default=None,
                            help="URL for --backend external (else the kind's variable: CHAOS_POSTGRES_URL, "
                                 "CHAOS_REDIS_URL, ...)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                        help="set a [params] parameter or a [server] setting of target.toml (repeatable)")
    parser.add_argument("--worker-image", default=None, metavar="IMAGE",
                        help="run the workers in containers of this Docker image (else target.toml's image, if any; "
                             "queue-chaos/python runs them on the host's Python)")


def _contract_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--contract", action="append", default=[], metavar="KEY=VALUE",
                        help="judge against a contract key other than target.toml's, e.g. -c watchdog=true "
                             "(a TOML value; repeatable)")


def _overrides(pairs: list[str], flag: str = "-p", example: str = "heartbeat=inline") -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag} {pair!r}: expected KEY=VALUE, e.g. {flag} {example}.")
        overrides[key] = value
    return overrides


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not is_seconds(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {SECONDS}")
    return value


def _jobs(text: str) -> int:
    """A count from 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1")
    return int(text)


def _port(text: str) -> int:
    """A TCP port: 0 to 65535 (a larger number would wrap around to another port, silently)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: expected 0 to 65535 (0: any free one)")
    return value


def _provider(args: argparse.Namespace) -> str:
    """--backend-url selects the external provider; with --backend local it is a contradiction."""
    if args.backend_url is None:
        return str(args.backend or "local")
    if args.backend not in (None, "external"):
        raise ConfigError(f"--backend-url is the address of your own server, for --backend external, but "
                          f"--backend {args.backend} starts a server of the suite's. Drop one of the two.")
    return "external"


def _run(args: argparse.Namespace) -> int:
    target = find_target(args.target)
    scenario = find_scenario(args.scenario)
    options = RunOptions(args.seed, args.runs_dir, _provider(args), args.backend_url, args.sink_mode,
                         _overrides(args.param), args.deadline, _overrides(args.contract, "-c", "watchdog=true"),
                         _overrides(args.scenario_param, "-s", "mode=blackhole"), args.observe, args.worker_image,
                         run_dir_file=args.run_dir_file)
    result = run_scenario(target, scenario, options)
    written = result.dir / "summary.txt"  # what the run wrote, its executions labelled from its ledger
    _say(written.read_text().rstrip() if written.is_file() else summary(result.verdict, result.dir))
    if result.verdict.error:
        _say(f"chaos: {result.verdict.error}", sys.stderr)
    return result.verdict.exit_code


def _target(args: argparse.Namespace) -> int:
    if args.target_command == "new":
        folder = new_target(args.name, args.backend, args.dir, args.library)
        _say(f"wrote {folder} (from the bundled {reference_target(args.backend)}); next: chaos target check {folder}")
        return 0
    report = check_target(find_target(args.target), RunOptions(seed=1, runs_dir=args.runs_dir,
                                                               backend=_provider(args), backend_url=args.backend_url,
                                                               overrides=_overrides(args.param),
                                                               worker_image=args.worker_image))
    _say(check_summary(report))
    if report.problems:
        _say("\n\n".join(f"chaos: {problem}" for problem in report.problems), sys.stderr)
        return 2
    return 0


def _suite(args: argparse.Namespace) -> int:
    return run_suite(SuiteOptions(args.file, args.jobs, args.seeds, args.repeat, args.shard, args.durations, args.out,
                                  args.runs_dir, args.share_servers), _say)


def _explore(args: argparse.Namespace) -> int:
    from chaos.explore.command import ExploreOptions, explore  # Hypothesis is loaded by this command alone
    from chaos.explore.runs import Variant

    _overrides(args.param)  # each KEY=VALUE, or a usage error saying so
    _overrides(args.contract, "-c", "watchdog=true")
    faults = tuple(k.strip() for k in args.faults.split(",") if k.strip()) if args.faults is not None else None
    variant = Variant(args.target, tuple(args.param), tuple(args.contract), args.backend, args.worker_image)
    return explore(ExploreOptions(variant, args.budget, args.time, args.seed, args.mode, faults, args.jobs,
                                  parse_shard(args.shard) if args.shard else (1, 1), args.replays, args.out,
                                  args.runs_dir, args.search_only, args.resume), _say)


def _merge(args: argparse.Namespace) -> int:
    document = merge(args.dirs, args.out)
    _say(markdown(document))
    return int(document["exit_code"])


def _report(args: argparse.Namespace) -> int:
    path = args.run_dir / "ledger.sqlite"
    ledger = read_events(path)
    _check_run_start(ledger, path)
    if args.job is not None or args.worker is not None:  # a view of the ledger: 0 whatever the verdict
        if args.worker is not None:
            _say("\n".join(worker_timeline(ledger, args.worker)))
            return 0
        known = any(event.job == args.job for event in ledger)
        _say("\n".join(job_timeline(ledger, args.job, judge(ledger).jobs.get(args.job) if known else None)))
        return 0
    verdict = judge(ledger)
    # Never replace the run's own reports: they were judged from the ledger as the run left it.
    out = args.run_dir / "regenerated" if (args.run_dir / "verdict.json").exists() else args.run_dir
    write_reports(out, verdict, ledger)
    _say(summary(verdict, out, of_ledger(ledger)))
    return verdict.exit_code


def _check_run_start(ledger: list[events.Event], path: Path) -> None:
    """The ledger's run.start row, written before anything else, records the contract the run is judged
    against: without it, or with it damaged, nothing can be judged."""
    start = next((event for event in ledger if event.kind == events.RUN_START), None)
    if start is None:
        raise ConfigError(f"{path} has no run.start row (the first row `chaos run` writes, before anything starts): "
                          "it is no complete run's ledger, and without the contract that row records nothing can "
                          "be judged. Pass the run dir of a run `chaos run` started, or run the scenario again.")
    data = start.data
    fields = {"contract": dict, "target": str, "scenario": str}
    if not isinstance(data, dict) or any(not isinstance(data.get(key), kind) for key, kind in fields.items()):
        raise ConfigError(f"{path}: its run.start row (seq {start.seq}) is damaged: expected a table with "
                          f"{', '.join(f'{key} ({kind.__name__})' for key, kind in fields.items())}, found "
                          f"{str(data)[:200]}. Nothing can be judged without it; run the scenario again.")
    Contract.from_dict(dict(data["contract"]), f"{path}: run.start's contract")


def _clean(args: argparse.Namespace) -> int:
    """0 when nothing is left; 1 when something is (each line says what, and how to remove it)."""
    cleaned = clean_killed_runs(args.runs_dir, args.backend_url, orphans=True, nested=True)
    _say("\n".join(line for _, line in cleaned) if cleaned else f"nothing to clean in {args.runs_dir}")
    return 0 if all(done for done, _ in cleaned) else 1


def _list() -> int:
    """Everything found; what does not load is named with why, and makes the exit code 2."""
    broken = 0
    lines = ["targets:"]
    for name, path in sorted(available_targets().items()):
        try:
            target = load_target(path)
        except ConfigError as exc:
            broken += 1
            lines.append(f"  {name:<14} BROKEN: {exc}")
            continue
        settings = " ".join(f"{k}={_shown(v)}" for k, v in {**target.server, **target.params}.items())
        lines.append(f"  {name:<14} {target.description}" + (f" [-p {settings}]" if settings else ""))
    lines.append("backends (their [server] settings, by provider):")
    for kind in KINDS:
        for found in providers(kind).values():
            options = "; ".join(f"{option.name}: {option.describe()}" for option in found.options)
            lines.append(f"  {kind + ' ' + found.name:<19} {options or '(none)'}")
    lines.append("fault kinds (what each does; a scenario declares it in FAULTS):")
    lines += [f"  {name:<19} {kind.says('a worker')}" for name, kind in FAULT_KINDS.items()]
    lines.append("scenarios:")
    for name, path in sorted(available_scenarios().items()):
        try:
            scenario = load_scenario(path)
        except ConfigError as exc:
            broken += 1
            lines.append(f"  {name:<38} BROKEN: {exc}")
            continue
        doc = scenario.doc.splitlines()
        choices = " ".join(f"{k}={'|'.join(v)}" for k, v in scenario.params.items())
        lines.append(f"  {name:<38} {doc[0] if doc else ''}" + (f" [-s {choices}]" if choices else ""))
    shared = " ".join(f"{k}={'|'.join(v)}" for k, v in SHARED_PARAMS.items())
    lines.append(f"  (every scenario also takes -s {shared}, unless it declares its own)")
    _say("\n".join(lines))
    if broken:
        _say(f"chaos: {broken} target(s) or scenario(s) above do not load; each says why.", sys.stderr)
    return 2 if broken else 0


def _shown(value: object) -> str:
    """A setting's value as -p takes it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


_unwritable: list[str] = []  # the streams a write to failed (a full disk, an I/O error): the output is lost


def _say(text: str, stream: TextIO | None = None) -> None:
    """Print a line; a reader that went away (`chaos run | head`) costs the output, never the exit code.
    A stream that cannot be written (`> /dev/full`, a full disk) is said once on stderr, and a command
    that would have exited 0 exits 2 (see `main`). Either way the stream is pointed at /dev/null and the
    command goes on: a run still writes its verdict and reports, and cleans up."""
    stream = stream or sys.stdout
    try:
        print(text, file=stream, flush=True)
    except (BrokenPipeError, ValueError):  # ValueError: a stream already closed
        _discard(stream)
    except OSError as exc:
        _discard(stream)
        name = "standard error" if stream is sys.stderr else "standard output"
        _unwritable.append(name)
        if stream is not sys.stderr:
            _say(f"chaos: cannot write to {name} ({exc.strerror or exc}): what the command printed there is lost "
                 "(a run's verdict and reports are in its run dir all the same). Send it to a writable file, or "
                 "free space there.", sys.stderr)


def _discard(stream: TextIO) -> None:
    """Point the stream's file descriptor at /dev/null, so that later writes and the last flush succeed."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


_interrupted: list[int] = []


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT or SIGTERM stops the run: its cleanup stops every process and removes every
    server's data. A second one means the first was swallowed (a bare `except:` in the scenario) or the
    cleanup hangs: the run ends at once, everything it started killed, exit 130."""
    if _interrupted:
        last_resort.end_now(f"interrupted again (signal {signum}); everything the run started was killed", 130)
    _interrupted.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def command(argv: list[str] | None = None) -> int:
    """Run one `chaos` command; its exit code."""
    try:
        parser = _parser()  # its choices come from the registries: an installed plugin that fails says so here
    except ChaosError as exc:
        _say(f"chaos: {exc}", sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    if args.command == "run" and last_resort.in_charge():
        exit_owner.split(args.backend_url, _say)  # from here on, the run's process; its parent owns the exit code
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "report":
            return _report(args)
        if args.command == "suite":
            return _suite(args)
        if args.command == "explore":
            return _explore(args)
        if args.command == "merge":
            return _merge(args)
        if args.command == "schema":
            _say(schema_text(args.name).rstrip())
            return 0
        if args.command == "target":
            return _target(args)
        if args.command == "clean":
            return _clean(args)
        if args.command == "doctor":
            return doctor.main()
        if args.command == "toxiproxy":
            serve(args.host, args.port, _say)
            return 0
        return _list()
    except ChaosError as exc:
        _say(f"chaos: {exc}", sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        _say("chaos: interrupted; every process of the run was stopped", sys.stderr)
        return 130
    except SystemExit as exc:  # code of the user's that ended the process: an error, never a silent exit code
        _say(f"chaos: the target's or scenario's code called sys.exit({exc.code!r}); no verdict was reached",
             sys.stderr)
        return 3
    except Exception:  # noqa: BLE001 - a bug in the suite: say so, with the traceback
        _say(traceback.format_exc().rstrip(), sys.stderr)
        _say("chaos: harness error (a bug in queue-chaos); the traceback is above", sys.stderr)
        return 3


def _thread_died(args: threading.ExceptHookArgs) -> None:
    """A full disk stops every thread that appends to the ledger; the run's controller says so, once."""
    if not isinstance(args.exc_value, LedgerUnwritable):
        threading.__excepthook__(args)


def main(argv: list[str] | None = None) -> NoReturn:
    """The `chaos` console script: the command's exit code, whatever threads user code left running and
    whatever became of stdout."""
    last_resort.take_charge()
    threading.excepthook = _thread_died
    try:
        code = command(argv)
    except SystemExit as exc:  # argparse: --help, or a usage error (exit 2)
        code = exc.code if isinstance(exc.code, int) else 2
    if code == 0 and _unwritable:  # its output was lost: no success
        code = 2
    last_resort.exit_now(code)


if __name__ == "__main__":
    main()
