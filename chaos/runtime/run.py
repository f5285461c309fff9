"""One run: the controller that wires environment, sink, supervisor and nemesis, drives a scenario, and
hands the ledger to the checker. Everything it starts is closed by one ExitStack, also on Ctrl-C.

`run_scenario` is the programmatic entry point; the CLI and the tests use it too.
"""

from __future__ import annotations

import os
import secrets
import shlex
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.registry import Provider, provider
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.errors import ChaosError, ConfigError, NotExercised, ScenarioError
from chaos.faults import KINDS
from chaos.ledger import Ledger
from chaos.reports import write_reports
from chaos.runtime.context import ScenarioContext
from chaos.runtime.environment import Environment
from chaos.runtime.launcher import Launcher
from chaos.runtime.nemesis import Nemesis
from chaos.runtime.sink import Sink
from chaos.runtime.supervisor import Supervisor
from chaos.runtime.world import RunWorld
from chaos.scenario import Scenario
from chaos.target import Control, Target

SNAPSHOT_RETRY_S = 10.0
T = TypeVar("T")


@dataclass(frozen=True)
class RunOptions:
    seed: int | None = None
    runs_dir: Path = Path("runs")
    backend: str = "local"  # the provider of the target's backend kind
    backend_url: str | None = None
    sink_mode: str = "plain"
    overrides: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    verdict: Verdict
    dir: Path


def run_scenario(target: Target, scenario: Scenario, options: RunOptions = RunOptions()) -> RunResult:
    """Run `scenario` against `target`, judge the ledger and write the reports into the run's directory."""
    with Run(target, scenario, options) as run:
        return RunResult(run.execute(), run.dir)


def reproduce_command(target: Target, scenario: Scenario, seed: int, options: RunOptions) -> str:
    argv = ["chaos", "run", "--target", target.name, "--scenario", scenario.name, "--seed", str(seed)]
    for key, value in sorted(options.overrides.items()):
        argv += ["-p", f"{key}={value}"]
    if options.backend != "local":
        argv += ["--backend", options.backend]
    if options.sink_mode != "plain":
        argv += ["--sink-mode", options.sink_mode]
    return shlex.join(argv)


def check_faults(scenario: Scenario, chosen: Provider) -> None:
    """Refuse, before anything starts, a scenario whose faults need what the backend's provider lacks or
    what this machine cannot do."""
    for kind in scenario.faults:
        if kind not in KINDS:
            raise ConfigError(f"Scenario {scenario.path}: FAULTS names {kind!r}, which is not a fault kind; "
                              f"expected among {', '.join(sorted(KINDS))}.")
        missing = KINDS[kind].needs - chosen.capabilities
        if missing:
            raise ConfigError(f"Scenario {scenario.name} cannot run here: "
                              + _unavailable(kind, missing, f"{chosen.kind} {chosen.name}"))
        preflight = KINDS[kind].preflight
        if preflight is not None:
            preflight()


def _unavailable(kind: str, missing: frozenset[str], backend_name: str) -> str:
    return (f"The {kind} fault needs the backend capability {', '.join(sorted(missing))}, which the "
            f"{backend_name} backend does not offer (the suite does not control that server). Run with a "
            "provider that has it (the default, --backend local), or pick a scenario without that fault.")


def _settled(read: Callable[[], T], within_s: float) -> T:
    """The queue's final view, read again through transient errors for a while: a backend restarted at
    the end of a scenario drops the control's connection, and its first use after that fails once."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return read()
        except ChaosError:
            raise
        except Exception:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


class Run:
    """A run's directory and ledger; `execute()` once, inside a with-block that closes the ledger."""

    def __init__(self, target: Target, scenario: Scenario, options: RunOptions) -> None:
        self.target = target.with_params(options.overrides)
        self.scenario = scenario
        self.options = options
        self.provider = provider(self.target.backend, options.backend)
        check_faults(scenario, self.provider)
        self.seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        self.dir = options.runs_dir / f"{stamp}-{self.target.name}-{scenario.name}"
        self.dir.mkdir(parents=True, exist_ok=False)
        self.ledger = Ledger(self.dir / "ledger.sqlite")
        self.command = reproduce_command(self.target, scenario, self.seed, options)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def execute(self) -> Verdict:
        """Run the scenario, take the final snapshot, judge the ledger and write the reports."""
        self.ledger.append(events.run_start(
            target=self.target.name, scenario=self.scenario.name, seed=self.seed, params=self.target.params,
            contract=self.target.contract.to_dict(), backend=self.options.backend, command=self.command,
            pid=os.getpid(),
        ))
        status, detail = "ok", ""
        try:
            with ExitStack() as stack:
                environment = Environment(self.provider, BackendSettings(
                    self.dir / self.target.backend, self.dir.name, self.options.backend_url, self.ledger.append))
                stack.callback(environment.close)
                control = self.target.load_control(environment.backend)
                stack.callback(control.close)
                control.setup()
                sink = stack.enter_context(Sink(self.ledger, self.options.sink_mode))
                supervisor = Supervisor(self.ledger, self.dir / "logs")
                stack.callback(supervisor.close)
                launcher = Launcher(self.target, control, environment, sink, supervisor, self.dir)
                nemesis = Nemesis(self.ledger, RunWorld(supervisor, environment, launcher), self.scenario)
                ctx = ScenarioContext(self.ledger, self.target.contract, control, sink, launcher, nemesis, self.seed)
                launcher.start_reconciler()
                try:
                    self.scenario.run(ctx)
                except NotExercised as exc:
                    status, detail = "not_exercised", str(exc)
                except ChaosError:
                    raise
                except Exception as exc:
                    raise ScenarioError(
                        f"Scenario {self.scenario.path} raised {type(exc).__name__}: {exc}. Everything the run "
                        f"started was stopped; the scenario's traceback follows.\n{traceback.format_exc()}"
                    ) from exc
                sink.gates.release_all()
                supervisor.close()
                self._snapshot(control)
        except ChaosError as exc:
            self.ledger.append(events.run_end("error", str(exc)))
            raise
        except BaseException as exc:  # Ctrl-C, SIGTERM, or a bug in the suite itself
            self.ledger.append(events.run_end("interrupted" if isinstance(exc, KeyboardInterrupt) else "error",
                                              repr(exc)))
            raise
        self.ledger.append(events.run_end(status, detail))
        ledger = self.ledger.events()
        verdict = judge(ledger)
        write_reports(self.dir, verdict, ledger)
        return verdict

    def _snapshot(self, control: Control) -> None:
        states = _settled(control.snapshot, SNAPSHOT_RETRY_S)
        for state in states:
            self.ledger.append(events.snapshot(state.job, state.state, state.owner, state.attempts, state.detail))
        self.ledger.append(events.snapshot_taken(len(states)))

    def close(self) -> None:
        self.ledger.close()
