"""One run: the controller that wires environment, sink, supervisor and nemesis, drives a scenario, and
hands the ledger to the checker. Everything it starts is closed by one ExitStack, also on Ctrl-C.

`run_scenario` is the programmatic entry point; the CLI and the tests use it too.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

import psutil

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.registry import Provider, provider, server_options
from chaos.check.checker import judge
from chaos.check.verdict import Verdict
from chaos.containers.workers import check_image
from chaos.discovery import bundled
from chaos.errors import ChaosError, ConfigError, NotExercised, ScenarioError, TargetCodeError
from chaos.events import Event
from chaos.faults import KINDS
from chaos.ledger import Ledger, read_events
from chaos.names import id_part
from chaos.queue_model import Control
from chaos.reports import write_reports
from chaos.runtime import exit_owner, last_resort
from chaos.runtime.cleanup import clean_killed_runs
from chaos.runtime.context import ScenarioContext
from chaos.runtime.control_process import ControlAnswerError, start_control
from chaos.runtime.deadline import deadline, default_deadline_s
from chaos.runtime.environment import Environment
from chaos.runtime.launcher import Launcher
from chaos.runtime.nemesis import Nemesis
from chaos.runtime.provenance import run_provenance
from chaos.runtime.recorder import KINDS as RECORD_KINDS
from chaos.runtime.recorder import Recorder
from chaos.runtime.sink import Sink
from chaos.runtime.supervisor import Supervisor
from chaos.runtime.world import RunWorld
from chaos.scenario import Scenario
from chaos.target import Target

SNAPSHOT_RETRY_S = 10.0
WATCHDOG_GRACE_S = 15.0  # past the deadline, how long the run's own teardown may take before the last resort
T = TypeVar("T")


@dataclass(frozen=True)
class RunOptions:
    seed: int | None = None
    runs_dir: Path = Path("runs")
    backend: str = "local"  # the provider of the target's backend kind
    backend_url: str | None = None
    sink_mode: str = "plain"
    overrides: dict[str, str] = field(default_factory=dict)
    deadline_s: float | None = None  # else the scenario's DEADLINE_S, else one derived from the contract
    contract: dict[str, str] = field(default_factory=dict)  # `-c key=value`: contract keys to judge against instead
    scenario_params: dict[str, str] = field(default_factory=dict)  # `-s key=value`: the scenario's PARAMS
    observe: bool = True  # read the queue's own record through the target's observer, where it declares one
    worker_image: str | None = None  # run the workers in containers of this image (else target.toml's `image`)
    run_dir_file: Path | None = None  # write the run dir's path here: a caller judges exactly this run


@dataclass(frozen=True)
class RunResult:
    verdict: Verdict
    dir: Path


def run_scenario(target: Target, scenario: Scenario, options: RunOptions = RunOptions()) -> RunResult:
    """Run `scenario` against `target`, judge the ledger and write the reports into the run's directory."""
    with Run(target, scenario, options) as run:
        return RunResult(run.execute(), run.dir)


def reproduce_command(target: Target, scenario: Scenario, seed: int, options: RunOptions) -> str:
    """The command that runs this again: bundled targets and scenarios by name, any other by its absolute
    path (a name given by a search path, or differing from its folder, would find another or none)."""
    target_ref = target.path.name if target.path.parent == bundled("targets").resolve() else str(target.path)
    scenario_ref = scenario.path.stem if scenario.path.parent == bundled("scenarios").resolve() else str(scenario.path)
    argv = ["chaos", "run", "--target", target_ref, "--scenario", scenario_ref, "--seed", str(seed)]
    for key, value in sorted(options.overrides.items()):
        argv += ["-p", f"{key}={value}"]
    for key, value in sorted(options.contract.items()):
        argv += ["-c", f"{key}={value}"]
    for key, value in sorted(options.scenario_params.items()):
        argv += ["-s", f"{key}={value}"]
    if options.backend != "local":
        argv += ["--backend", options.backend]
    if options.sink_mode != "plain":
        argv += ["--sink-mode", options.sink_mode]
    if options.deadline_s is not None:
        argv += ["--deadline", f"{options.deadline_s:g}"]
    if not options.observe:
        argv += ["--no-observer"]
    if options.worker_image:
        argv += ["--worker-image", options.worker_image]
    return shlex.join(argv)


def check_server_overrides(target: Target, chosen: Provider, overrides: dict[str, str]) -> None:
    """Refuse a `-p` server setting the chosen provider does not take: your own server's configuration
    decides it, and a run that seemed to apply it would judge something else."""
    taken, settable = {option.name for option in chosen.options}, server_options(target.backend)
    for key in overrides:
        if key in settable and key not in taken:
            raise ConfigError(f"-p {key}=... sets the {target.backend} server's {key}, which the {chosen.name} "
                              f"provider cannot set: that server's own configuration decides it. Drop -p {key}, or "
                              "run with the provider that starts its own server (--backend local).")


def check_faults(scenario: Scenario, chosen: Provider, target: Target) -> None:
    """Refuse, before anything starts, a scenario whose faults need what the backend's provider lacks,
    workers in containers the target does not have, or what this machine cannot do."""
    for kind in scenario.faults:
        if kind not in KINDS:
            raise ConfigError(f"Scenario {scenario.path}: FAULTS names {kind!r}, which is not a fault kind; "
                              f"expected among {', '.join(sorted(KINDS))}.")
        missing = KINDS[kind].needs - chosen.capabilities
        if missing:
            raise ConfigError(f"Scenario {scenario.name} cannot run here: the {kind} fault needs the backend "
                              f"capability {', '.join(sorted(missing))}, which the {chosen.kind} {chosen.name} "
                              "backend does not offer (the suite does not control that server). Run with a provider "
                              "that has it (the default, --backend local), or pick a scenario without that fault.")
        if KINDS[kind].containers and target.image is None:
            raise ConfigError(f"Scenario {scenario.name} cannot run against {target.name}: the {kind} fault acts on a "
                              "worker's container, and its workers run in none. Give it an image (image = "
                              "\"queue-chaos/python\" in target.toml, or --worker-image queue-chaos/python), or pick "
                              "a scenario without that fault.")
        preflight = KINDS[kind].preflight
        if preflight is not None:
            preflight()


@dataclass(frozen=True)
class Prepared:
    """A run's settings once checked: the target with its overrides, the scenario's chosen PARAMS, and
    the provider of its backend."""

    target: Target
    scenario_params: dict[str, str]
    provider: Provider


def prepare(target: Target, scenario: Scenario, options: RunOptions) -> Prepared:
    """Everything a run checks before it starts anything (each mistake a ConfigError): its settings, that
    the target's programs can start, and that its server and its workers' containers can be had here. A
    suite checks every cell this way before its first run."""
    if options.worker_image:
        target = replace(target, image=options.worker_image)
    prepared = Prepared(target.with_overrides(options.overrides, options.contract),
                        scenario.with_params(options.scenario_params), provider(target.backend, options.backend))
    prepared.provider.require_packages()
    check_server_overrides(prepared.target, prepared.provider, options.overrides)
    check_faults(scenario, prepared.provider, prepared.target)
    prepared.target.check_programs()
    prepared.target.check_modules(observer=options.observe)
    prepared.provider.preflight(options.backend_url)
    if prepared.target.image is not None:
        check_image(prepared.target.image)
    return prepared


def _effecting_executions(ledger: list[Event]) -> set[tuple[str | None, object]]:
    """(job, token) of every execution that made an effect and has not yet acked, abandoned or exited."""
    open_: dict[tuple[str | None, object], str | None] = {}
    for event in ledger:
        if event.kind == events.PROBE_EFFECT:
            open_[(event.job, event.data.get("token"))] = event.worker
        elif event.kind in (events.PROBE_ACK, events.PROBE_ABANDON):
            open_.pop((event.job, event.data.get("token")), None)
        elif event.kind == events.PROCESS_EXIT and open_:
            open_ = {key: worker for key, worker in open_.items() if worker != event.worker}
    return set(open_)


def _settled(read: Callable[[], T], within_s: float) -> T:
    """The queue's final view, read again through transient errors for a while: a backend restarted at
    the end of a scenario drops the control's connection, and its first use after that fails once (a control
    process answers an error then)."""
    until = time.monotonic() + within_s
    while True:
        try:
            return read()
        except ControlAnswerError:
            if time.monotonic() >= until:
                raise
            time.sleep(0.1)
        except ChaosError:
            raise
        except Exception:
            if time.monotonic() >= until:
                raise
            time.sleep(0.1)


class Run:
    """A run's directory and ledger; `execute()` once, inside a with-block that closes the ledger."""

    def __init__(self, target: Target, scenario: Scenario, options: RunOptions) -> None:
        prepared = prepare(target, scenario, options)
        self.target, self.scenario_params, self.provider = prepared.target, prepared.scenario_params, prepared.provider
        self.scenario = scenario
        self.options = options
        self.cleaned = [line for _, line in clean_killed_runs(options.runs_dir, options.backend_url)]
        self.seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        # The run id (the dir's name) is a key prefix, a schema, a vhost: no character a pattern reads.
        self.dir = options.runs_dir / f"{stamp}-{id_part(self.target.name)}-{id_part(scenario.name)}"
        if options.run_dir_file is not None:
            try:
                options.run_dir_file.write_text(f"{self.dir.resolve()}\n")
            except OSError as exc:
                raise ConfigError(f"Cannot write the run dir's path to --run-dir-file {options.run_dir_file} "
                                  f"({exc.strerror or exc}): give a path in a writable directory.") from exc
        try:
            self.dir.mkdir(parents=True, exist_ok=False)
        except OSError as exc:
            raise ConfigError(f"Cannot create the run directory {self.dir} ({exc.strerror or exc}): --runs-dir "
                              f"{options.runs_dir} must be a writable directory, or a path where one can be made. "
                              "Pick another with --runs-dir (or CHAOS_RUNS_DIR).") from exc
        exit_owner.tell_run_dir(self.dir)  # `chaos run`'s exit code is the verdict's it finds there
        self.ledger = Ledger(self.dir / "ledger.sqlite")
        self.command = reproduce_command(self.target, scenario, self.seed, options)
        self.deadline_s = options.deadline_s or scenario.deadline_s or default_deadline_s(self.target.contract)

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
            server=self.target.server_settings(self.provider.options),
            observer=self.target.observed_by if self.options.observe else None,  # the queue's record: evidence too
            pid=os.getpid(), pid_create_time=psutil.Process().create_time(), host=socket.gethostname(),
            backend_kind=self.target.backend, worker_image=self.target.image,
            cleaned=self.cleaned,  # what killed runs in the same runs dir had left, removed before this one
            shutdown_grace_s=self.target.shutdown_grace_s, scenario_params=self.scenario_params,
            faults=list(self.scenario.faults),  # declared: each must be injected (or waived), else inconclusive
            **run_provenance(self.target.path),  # the red box's stamp: suite version, target commit, Python
        ))
        unmet = self.scenario.unmet(self.target.contract)
        if unmet is not None:  # nothing starts: the run is skipped with the reason, never run and passed
            return self._judged(events.run_end(events.SKIPPED, unmet))
        status, detail = "ok", ""
        activity = ["starting the backend"]
        ends_by = time.monotonic() + self.deadline_s
        stack = ExitStack()  # closed by the with-block, or by the last resort from another thread
        try:
            with last_resort.watchdog(self.deadline_s + WATCHDOG_GRACE_S, lambda: self._past_deadline(activity[0])), \
                    last_resort.registered(lambda why, code: self._end_from_outside(stack, why, code)), \
                    stack, deadline(self.deadline_s, lambda: activity[0]):
                environment = Environment(self.provider, BackendSettings(
                    self.dir / self.target.backend, self.dir.name, self.options.backend_url, self.ledger.append,
                    self.target.server_settings(self.provider.options)),
                    self.dir if any(KINDS[kind].network for kind in self.scenario.faults) else None)
                stack.callback(environment.close)
                control = self._target_code("loading its control", lambda: self._control(environment))
                stack.callback(control.close)
                self._target_code("its control's setup()", control.setup)
                recorder = self._target_code("its observer's install()", lambda: self._recorder(environment, stack))
                sink = stack.enter_context(Sink(self.ledger, self.options.sink_mode))
                supervisor = Supervisor(self.ledger, self.dir / "logs", self.target.shutdown_grace_s)
                supervisor.grace_ends_by = ends_by
                sink.host_pid = supervisor.host_pid
                stack.callback(supervisor.close)
                launcher = Launcher(self.target, control, environment, sink, supervisor, self.dir)
                nemesis = Nemesis(self.ledger, RunWorld(supervisor, environment, launcher), self.scenario)
                stack.callback(nemesis.close)  # heals what the scenario left in place, before anything stops
                ctx = ScenarioContext(self.ledger, self.target.contract, control, sink, launcher, nemesis, self.seed,
                                      activity, self.scenario_params)
                launcher.start_reconciler()
                try:
                    self.scenario.run(ctx)
                except NotExercised as exc:
                    status, detail = "not_exercised", str(exc)
                except ChaosError:
                    raise
                except (Exception, SystemExit) as exc:  # SystemExit too: a scenario never ends the run silently
                    if isinstance(exc.__context__, KeyboardInterrupt):
                        # Ctrl-C landed inside a condition's wait, whose lock then failed to release: the
                        # interrupt is what happened (exit 130), not a scenario error.
                        raise exc.__context__ from None
                    raise ScenarioError(
                        f"Scenario {self.scenario.path} raised {type(exc).__name__}: {exc}. Everything the run "
                        f"started was stopped; the scenario's traceback follows.\n{traceback.format_exc()}"
                    ) from exc
                nemesis.close()  # a network fault the scenario left in place ends with it
                sink.gates.release_all()  # a probe held at a gate must be able to end its execution
                activity[0] = "waiting for every execution that made an effect to end"
                self._wait_executions_ended(max(self.target.shutdown_grace_s, self.target.contract.recovery_bound_s))
                activity[0] = "stopping the workers"
                supervisor.close()
                activity[0] = "taking the final snapshot"
                if recorder is not None:
                    recorder.stop()  # the queue's record up to the end, then its state
                    self._target_code("its observer's read()", lambda: _settled(recorder.flush, SNAPSHOT_RETRY_S))
                self._target_code("its control's completion()", lambda: _settled(ctx.completions.finish,
                                                                                   SNAPSHOT_RETRY_S))
                self._target_code("its control's snapshot()", lambda: self._snapshot(control))
        except ConfigError as exc:  # the user's mistake, found mid-run: exit 2, as before the run
            self.ledger.append(events.run_end("error", str(exc)))
            raise
        except ChaosError as exc:  # the harness (or the scenario's code) broke: an `error` verdict, reported
            status, detail = "error", str(exc)
        except SystemExit as exc:  # the target's control code ended the process: never a silent exit
            status, detail = "error", (f"the target's control code called sys.exit({exc.code!r}) during the run; "
                                       f"everything the run started was stopped.\n{traceback.format_exc()}")
        except BaseException as exc:  # Ctrl-C, SIGTERM, or a bug in the suite itself
            self.ledger.append(events.run_end("interrupted" if isinstance(exc, KeyboardInterrupt) else "error",
                                              repr(exc)))
            raise
        return self._judged(events.run_end(status, detail))

    def _judged(self, end: events.Record) -> Verdict:
        """Journal the run's end, judge the ledger and write the reports."""
        self.ledger.append(end)
        ledger = read_events(self.ledger.path)  # what `chaos report` will read: judged alike, whatever happened
        verdict = judge(ledger)
        write_reports(self.dir, verdict, ledger)
        return verdict

    def _target_code(self, what: str, call: Callable[[], T]) -> T:
        """Run code of the target's; what it raises is a harness error naming that code, with its traceback."""
        try:
            return call()
        except ChaosError:
            raise
        except Exception as exc:  # noqa: BLE001 - the target author's bug, reported as theirs
            raise TargetCodeError(f"Target {self.target.name} raised {type(exc).__name__} in {what}: {exc}. "
                                  "Everything the run started was stopped; the traceback follows.\n"
                                  f"{traceback.format_exc()}") from exc

    def _control(self, environment: Environment) -> Control:
        """The target's control: its class in this process, or its process (`[control]`), started like a worker."""
        if self.target.control_process is None:
            return self.target.load_control(environment.backend)
        return start_control(self.target, environment.backend, self.ledger, self.dir / "logs")

    def _recorder(self, environment: Environment, stack: ExitStack) -> Recorder | None:
        """The target's observer, installed before any job, its record journaled while the run goes on."""
        observer = self.target.load_observer(environment.backend) if self.options.observe else None
        if observer is None:
            return None
        stack.callback(observer.close)
        covers = getattr(observer, "covers", None)
        if not isinstance(covers, (set, frozenset)) or not covers <= set(RECORD_KINDS):
            raise ConfigError(f"Target {self.target.name}: its observer {self.target.observed_by} has covers = "
                              f"{covers!r}; expected a set of the record kinds it sees, among "
                              f"{', '.join(RECORD_KINDS)} (empty where the server shows none).")
        self.ledger.append(events.observer_start(str(self.target.observed_by), sorted(observer.covers),
                                                 str(getattr(observer, "note", "") or "")))
        observer.install()
        recorder = Recorder(observer, self.ledger).start()
        stack.callback(recorder.stop)
        return recorder

    def _past_deadline(self, doing: str) -> str:
        return (f"The run passed its deadline of {self.deadline_s:g}s while {doing}, and was still running "
                f"{WATCHDOG_GRACE_S:g}s later: code of the scenario's or the target's caught the deadline's alarm "
                "(a bare `except:`, or a library that turns it into its own error) and carried on. Everything the "
                "run started was killed. Let BaseException through in that code, or raise --deadline SECONDS.")

    def _end_from_outside(self, stack: ExitStack, why: str, code: int) -> None:
        """The last resort's teardown (`chaos.runtime.last_resort`): the run's end in its ledger, everything
        it started closed, its reports written from the ledger as it stands."""
        closing = threading.Thread(target=stack.close, name="chaos-close", daemon=True)
        closing.start()
        closing.join(last_resort.TEARDOWN_S / 2)  # then the ledger's end, whatever the closing still waits for
        self.ledger.append(events.run_end("interrupted" if code == 130 else "error", why))
        ledger = read_events(self.ledger.path)
        write_reports(self.dir, judge(ledger), ledger)

    def _wait_executions_ended(self, timeout: float) -> None:
        """Let every execution that made an effect end (ack, abandon, or its process's exit) before the
        workers are stopped: a queue's batched acknowledgements must not be lost with its worker."""
        deadline_at = time.monotonic() + timeout
        ends = (events.PROBE_ACK, events.PROBE_ABANDON, events.PROCESS_EXIT)
        while (recorded := self.ledger.events()) and _effecting_executions(recorded):
            remaining = deadline_at - time.monotonic()
            if remaining <= 0 or self.ledger.wait_for(lambda e: e.kind in ends, remaining,
                                                      after=recorded[-1].seq) is None:
                return

    def _snapshot(self, control: Control) -> None:
        states = _settled(control.snapshot, SNAPSHOT_RETRY_S)
        for state in states:
            self.ledger.append(events.snapshot(state.job, state.state, state.owner, state.attempts, state.detail))
        self.ledger.append(events.snapshot_taken(len(states)))

    def close(self) -> None:
        self.ledger.close()
