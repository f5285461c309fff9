"""One run: the controller that wires backend, sink, supervisor and nemesis, drives a scenario, and
hands the ledger to the checker. Everything it starts is closed by one ExitStack, also on Ctrl-C."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chaos.backends.postgres import open_postgres
from chaos.checker import judge
from chaos.context import ScenarioContext
from chaos.errors import ChaosError, NotExercised, ScenarioError
from chaos.ledger import Ledger
from chaos.nemesis import Nemesis
from chaos.report import write_reports
from chaos.scenario import Scenario
from chaos.sink import Sink
from chaos.supervisor import Supervisor
from chaos.target import REPO_ROOT, Control, Target
from chaos.verdict import Verdict


@dataclass(frozen=True)
class RunOptions:
    seed: int | None = None
    runs_dir: Path = Path("runs")
    backend: str = "local"
    backend_url: str | None = None
    sink_mode: str = "plain"
    overrides: dict[str, str] = field(default_factory=dict)


def reproduce_command(target: Target, scenario: Scenario, seed: int, options: RunOptions) -> str:
    argv = ["chaos", "run", "--target", target.name, "--scenario", scenario.name, "--seed", str(seed)]
    for key, value in sorted(options.overrides.items()):
        argv += ["-p", f"{key}={value}"]
    if options.backend != "local":
        argv += ["--backend", options.backend]
    if options.sink_mode != "plain":
        argv += ["--sink-mode", options.sink_mode]
    return shlex.join(argv)


class Run:
    def __init__(self, target: Target, scenario: Scenario, options: RunOptions) -> None:
        self.target = target.with_params(options.overrides)
        self.scenario = scenario
        self.options = options
        self.seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        self.dir = options.runs_dir / f"{stamp}-{self.target.name}-{scenario.name}"
        self.dir.mkdir(parents=True, exist_ok=False)
        self.ledger = Ledger(self.dir / "ledger.sqlite")
        self.command = reproduce_command(self.target, scenario, self.seed, options)

    def worker_env(self, control: Control, name: str, sink: Sink) -> dict[str, str]:
        env = dict(os.environ)
        env.update(control.worker_env())
        env.update({
            "CHAOS_SINK_URL": sink.url, "CHAOS_RUN_TOKEN": sink.token, "CHAOS_WORKER_ID": name,
            "CHAOS_TARGET_PARAMS": json.dumps(self.target.params),
            "CHAOS_CONTRACT": json.dumps(self.target.contract.to_dict()),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
        })
        return env

    def execute(self) -> Verdict:
        """Run the scenario, take the final snapshot, judge the ledger and write the reports."""
        self.ledger.append("run.start", "controller", data={
            "target": self.target.name, "scenario": self.scenario.name, "seed": self.seed,
            "params": self.target.params, "contract": self.target.contract.to_dict(),
            "backend": self.options.backend, "command": self.command, "pid": os.getpid(),
        })
        status, detail = "ok", ""
        try:
            with ExitStack() as stack:
                backend = open_postgres(self.options.backend, self.dir / "postgres", self.options.backend_url,
                                        self.dir.name, self._backend_event)
                stack.callback(backend.close)
                control = self.target.load_control(backend)
                stack.callback(control.close)
                control.setup()
                sink = stack.enter_context(Sink(self.ledger, self.options.sink_mode))
                supervisor = Supervisor(self.ledger, self.dir / "logs")
                stack.callback(supervisor.close)
                ctx = ScenarioContext(self, control, sink, supervisor, Nemesis(self.ledger, supervisor, backend),
                                      self.seed)
                ctx.start_reconciler()
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
            self.ledger.append("run.end", "controller", data={"status": "error", "detail": str(exc)})
            raise
        except BaseException as exc:  # Ctrl-C, SIGTERM, or a bug in the suite itself
            status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            self.ledger.append("run.end", "controller", data={"status": status, "detail": repr(exc)})
            raise
        self.ledger.append("run.end", "controller", data={"status": status, "detail": detail})
        events = self.ledger.events()
        verdict = judge(events)
        write_reports(self.dir, verdict, events)
        return verdict

    def _snapshot(self, control: Control) -> None:
        states = control.snapshot()
        for state in states:
            self.ledger.append("snapshot", "controller", job=state.job, worker=state.owner,
                               data={"state": state.state, "owner": state.owner, "attempts": state.attempts,
                                     **state.detail})
        self.ledger.append("snapshot.taken", "controller", data={"jobs": len(states)})

    def _backend_event(self, kind: str, data: dict[str, Any]) -> None:
        self.ledger.append(kind, "backend", data=data)

    def close(self) -> None:
        self.ledger.close()
