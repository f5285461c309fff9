"""The `chaos` command: run a scenario against a target, recompute a report, list what exists.

Exit codes: 0 pass, 1 fail, 2 usage or configuration error, 3 harness error, 4 inconclusive.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType

from chaos import events
from chaos.backends.registry import provider_names
from chaos.check.checker import judge
from chaos.discovery import available_scenarios, available_targets, find_scenario, find_target
from chaos.errors import ChaosError, ConfigError
from chaos.ledger import read_events
from chaos.reports import summary, write_reports
from chaos.runtime.run import RunOptions, run_scenario
from chaos.runtime.sink import SINK_MODES
from chaos.scenario import load_scenario
from chaos.target import load_target


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chaos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one scenario against one target and print its verdict")
    run.add_argument("--target", required=True, help="a target name (see `chaos list`) or a target folder")
    run.add_argument("--scenario", required=True, help="a scenario name or a path to a scenario .py file")
    run.add_argument("--seed", type=int, default=None, help="seed for the scenario's choices (default: random)")
    run.add_argument("--runs-dir", type=Path, default=Path(os.environ.get(events.ENV_RUNS_DIR, "runs")))
    run.add_argument("--backend", choices=provider_names(), default="local",
                     help="the backend's provider; local: a private server on a free port (default); "
                          "external: your server, at --backend-url")
    run.add_argument("--backend-url", default=None,
                     help=f"URL for --backend external (or {events.ENV_POSTGRES_URL} for PostgreSQL)")
    run.add_argument("--sink-mode", choices=SINK_MODES, default="plain", help="how the effect sink dedupes")
    run.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                     help="override a target parameter from target.toml (repeatable)")
    report = sub.add_parser("report", help="recompute the verdict of a run from its ledger alone")
    report.add_argument("run_dir", type=Path)
    sub.add_parser("list", help="show the targets and scenarios found")
    return parser


def _overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"-p {pair!r}: expected KEY=VALUE, e.g. -p heartbeat=inline.")
        overrides[key] = value
    return overrides


def _run(args: argparse.Namespace) -> int:
    target = find_target(args.target)
    scenario = find_scenario(args.scenario)
    options = RunOptions(args.seed, args.runs_dir, args.backend, args.backend_url, args.sink_mode,
                         _overrides(args.param))
    result = run_scenario(target, scenario, options)
    print(summary(result.verdict, result.dir))
    return result.verdict.exit_code


def _report(args: argparse.Namespace) -> int:
    ledger = read_events(args.run_dir / "ledger.sqlite")
    verdict = judge(ledger)
    write_reports(args.run_dir, verdict, ledger)
    print(summary(verdict, args.run_dir))
    return verdict.exit_code


def _list() -> int:
    print("targets:")
    for name, path in sorted(available_targets().items()):
        target = load_target(path)
        params = " ".join(f"{k}={v}" for k, v in target.params.items())
        print(f"  {name:<14} {target.description}" + (f" [params: {params}]" if params else ""))
    print("scenarios:")
    for name, path in sorted(available_scenarios().items()):
        doc = load_scenario(path).doc.splitlines()
        print(f"  {name:<34} {doc[0] if doc else ''}")
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM cleans up exactly like Ctrl-C does."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "report":
            return _report(args)
        return _list()
    except ChaosError as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `chaos list | head`: the reader left, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("chaos: interrupted; every process of the run was stopped", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - a bug in the suite: say so, with the traceback
        traceback.print_exc()
        print("chaos: harness error (a bug in queue-chaos); the traceback is above", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
