"""What fault kinds act on during a run (`chaos.faults.base.FaultWorld`): the supervisor's processes,
the environment's backend, and the launcher that starts workers."""

from __future__ import annotations

import signal

from chaos.backends.docker_server import DockerServer
from chaos.errors import HarnessError
from chaos.faults.base import NetworkLink, Scope
from chaos.runtime.environment import Environment
from chaos.runtime.launcher import Launcher
from chaos.runtime.supervisor import Supervisor


class RunWorld:
    def __init__(self, supervisor: Supervisor, environment: Environment, launcher: Launcher) -> None:
        self.supervisor = supervisor
        self.environment = environment
        self.launcher = launcher

    def signal(self, name: str, sig: signal.Signals, scope: Scope = "tree", pid: int | None = None) -> list[int]:
        return self.supervisor.signal(name, sig, scope, pid)

    def reap(self, name: str, pids: list[int] | None = None) -> None:
        self.supervisor.reap(name, pids)

    def restart_process(self, name: str) -> tuple[list[int], int]:
        pids, managed = self.supervisor.restart(name)
        return pids, managed.pid

    def restart_backend(self, mode: str) -> None:
        self.environment.backend.restart(mode)

    def start_worker(self, name: str, extra_env: dict[str, str]) -> int:
        return self.launcher.start_worker(name, extra_env).pid

    def network(self, name: str) -> NetworkLink:
        return self.environment.link(name)

    def pause_container(self, name: str, paused: bool) -> list[int]:
        return self.supervisor.pause(name, paused)

    def kill_container(self, name: str) -> list[int]:
        return self.supervisor.kill_container(name)

    def connect_backend(self, connected: bool) -> list[str]:
        backend = self.environment.backend
        if not isinstance(backend, DockerServer):
            raise HarnessError(f"the {backend.kind} {backend.provider} backend is not in a container")
        return backend.connect(connected)
