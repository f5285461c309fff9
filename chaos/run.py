"""One run: the controller that wires backend, sink, supervisor and nemesis, drives a scenario, and
hands the ledger to the checker. Everything it starts is closed by one ExitStack, also on Ctrl-C."""

from __future__ import annotations

import json
import os
import random
import secrets
import shlex
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chaos.backends.postgres import open_postgres
from chaos.checker import judge
from chaos.contract import Contract
from chaos.errors import ChaosError, NotExercised
from chaos.gates import Gate
from chaos.ledger import Ledger
from chaos.nemesis import Nemesis
from chaos.report import write_reports
from chaos.scenario import Scenario
from chaos.sink import Sink
from chaos.supervisor import Supervisor
from chaos.target import REPO_ROOT, Control, Job, Target
from chaos.verdict import Verdict

GATE_TIMEOUT_S = 30.0
SNAPSHOT_POLL_S = 0.05


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


class ScenarioContext:
    """What a scenario drives: jobs, workers, gates, faults, and waits on the queue or the ledger."""

    def __init__(self, run: Run, control: Control, sink: Sink, supervisor: Supervisor, nemesis: Nemesis,
                 seed: int) -> None:
        self.run = run
        self.control = control
        self.sink = sink
        self.supervisor = supervisor
        self.nemesis = nemesis
        self.ledger = run.ledger
        self.contract: Contract = run.target.contract
        self.rng = random.Random(seed)
        self.jobs: list[str] = []
        self._workers = 0

    def enqueue(self, count: int, *, handler_s: float = 0.0, fail: bool = False) -> list[str]:
        jobs = [Job(f"job-{len(self.jobs) + i + 1:04d}", handler_s, fail) for i in range(count)]
        return self.enqueue_jobs(jobs)

    def enqueue_jobs(self, jobs: list[Job]) -> list[str]:
        self.control.enqueue(jobs)
        for job in jobs:
            self.ledger.append("enqueue", "controller", job=job.id, data=job.payload())
            self.jobs.append(job.id)
        return [job.id for job in jobs]

    def start_worker(self, name: str | None = None, extra_env: dict[str, str] | None = None) -> str:
        if name is None:
            self._workers += 1
            name = f"w{self._workers}"
        env = self.run.worker_env(self.control, name, self.sink)
        env.update(extra_env or {})
        self.supervisor.start(name, self.run.target.command(self.run.target.worker), env, cwd=self.run.target.path)
        return name

    def arm(self, spec: str, *, job: str | None = None, worker: str | None = None, nth: int = 1) -> Gate:
        return self.sink.arm(spec, job=job, worker=worker, nth=nth)

    def wait(self, gate: Gate, timeout: float = GATE_TIMEOUT_S) -> dict[str, Any]:
        """Wait for a gate; raises NotExercised (an inconclusive run) if it never matches."""
        return gate.wait(timeout)

    def release(self, gate: Gate) -> None:
        self.sink.release(gate)

    def kill(self, worker: str, gate: Gate | None = None, scope: str = "tree") -> list[int]:
        return self.nemesis.kill(worker, "tree" if scope == "tree" else "process", gate)

    def wait_drained(self, timeout: float) -> bool:
        """Poll the queue's own view until every enqueued job is terminal; false if it never drains."""
        deadline = time.monotonic() + timeout
        wanted = set(self.jobs)
        while True:
            try:
                states = {s.job: s.state for s in self.control.snapshot()}
                if all(states.get(job, "absent") in ("done", "dead", "absent") for job in wanted):
                    self.ledger.append("drained", "controller", data={"jobs": len(wanted)})
                    return True
            except ChaosError:
                raise
            except Exception as exc:  # noqa: BLE001 - the backend may be restarting; keep polling
                last_error = repr(exc)
            else:
                last_error = ""
            if time.monotonic() >= deadline:
                self.ledger.append("drain.timeout", "controller", data={"timeout_s": timeout, "error": last_error})
                return False
            time.sleep(SNAPSHOT_POLL_S)

    def recovery_deadline(self, margin_s: float = 2.0) -> float:
        """How long to wait for the queue to drain after a fault: the contract's bound plus a margin."""
        return self.contract.recovery_bound_s + margin_s


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
                ctx = ScenarioContext(self, control, sink, supervisor, Nemesis(self.ledger, supervisor), self.seed)
                try:
                    self.scenario.run(ctx)
                except NotExercised as exc:
                    status, detail = "not_exercised", str(exc)
                sink.gates.release_all()
                supervisor.close()
                self._snapshot(control)
        except ChaosError as exc:
            self.ledger.append("run.end", "controller", data={"status": "error", "detail": str(exc)})
            raise
        except BaseException as exc:
            self.ledger.append("run.end", "controller", data={"status": "interrupted", "detail": repr(exc)})
            raise
        self.ledger.append("run.end", "controller", data={"status": status, "detail": detail})
        verdict = judge(self.ledger.events())
        write_reports(self.dir, verdict)
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
