"""Starts a target's processes (workers, its reconciler) with what the probe protocol promises them:
the sink's address and token, the worker's name, the target's parameters and contract, and the
connection settings its control builds from the worker's own endpoint."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chaos import events
from chaos.containers.workers import WorkerContainers
from chaos.queue_model import Control
from chaos.runtime.environment import Environment
from chaos.runtime.sink import Sink
from chaos.runtime.supervisor import Managed, Supervisor
from chaos.target import Target

RECONCILER = "reconciler"
# The chaos package this suite runs (found from this file: importing `chaos` for its path would put the
# package facade, which names the runtime, in a circle with it).
PACKAGE = Path(__file__).resolve().parents[1]


class Launcher:
    def __init__(self, target: Target, control: Control, environment: Environment, sink: Sink,
                 supervisor: Supervisor, run_dir: Path) -> None:
        self.target = target
        self.control = control
        self.environment = environment
        self.sink = sink
        self.supervisor = supervisor
        self.pythonpath = _chaos_only_path(run_dir)
        self.containers = None if target.image is None else WorkerContainers.prepare(
            target.image, run_dir.name, [str(target.path), str(self.pythonpath),
                                         str(PACKAGE)])

    def env(self, name: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.control.worker_env(self.environment.endpoint_for(name)))
        env.update({
            events.ENV_SINK_URL: self.sink.url, events.ENV_RUN_TOKEN: self.sink.token, events.ENV_WORKER_ID: name,
            events.ENV_TARGET_PARAMS: json.dumps(self.target.params),
            events.ENV_CONTRACT: json.dumps(self.target.contract.to_dict()),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(self.pythonpath), env.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
        })
        return env

    def command(self, argv: list[str], name: str) -> list[str]:
        return self.target.command(argv, name, self.environment.endpoint_for(name).url,
                                   self.environment.backend.namespace)

    def start_worker(self, name: str, extra_env: dict[str, str] | None = None) -> Managed:
        return self.supervisor.start(name, self.command(self.target.worker, name),
                                     {**self.env(name), **(extra_env or {})}, cwd=self.target.path,
                                     containers=self.containers)

    def start_reconciler(self) -> Managed | None:
        argv = self.target.reconciler
        if argv is None:
            return None
        return self.supervisor.start(RECONCILER, self.command(argv, RECONCILER), self.env(RECONCILER),
                                     role="reconciler", cwd=self.target.path, containers=self.containers)


def _chaos_only_path(run_dir: Path) -> Path:
    """A directory holding only this suite's `chaos` package (a link), for the workers' PYTHONPATH: a
    worker in the queue's own virtualenv then imports `chaos.probe` without seeing the suite's other
    packages, and one on the suite's interpreter imports the very package that runs the suite."""
    folder = run_dir.resolve() / "pythonpath"
    folder.mkdir(exist_ok=True)
    link = folder / "chaos"
    if not link.exists():
        link.symlink_to(PACKAGE, target_is_directory=True)
    return folder
