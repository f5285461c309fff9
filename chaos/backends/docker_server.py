"""The docker provider's shared half: the kind's server in a container the suite starts through
testcontainers-python, from an image built here (chaos.containers.images), with its data in a volume
of its own and its port published on loopback. Server faults act on the container: a restart kills
(immediate) or stops (fast) it and starts it again on the same volume and port, a kill leaves it down,
and the container faults pause it or cut its network. Everything carries the run's labels, so the
run's end and `chaos clean` remove it, even after the runner was SIGKILLed.

A subclass says which image, which testcontainers class starts it, when it is ready, and its URL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from chaos import events, ports
from chaos.backends.base import CONTAINER, KILL, RESTART, Backend, BackendSettings, Endpoint
from chaos.backends.local_server import LIVE
from chaos.backends.options import ServerOption
from chaos.containers import engine
from chaos.containers.images import ImageSpec
from chaos.errors import ChaosError, ConfigError, HarnessError

if TYPE_CHECKING:
    from docker.models.containers import Container
    from testcontainers.core.container import DockerContainer

HOST = ports.HOST
STOP_GRACE_S = 10
READY_TIMEOUT_S = 60.0
NETWORK_SUFFIX = "net"


class DockerServer(Backend):
    """A server of the kind in a container of its own (provider 'docker')."""

    provider: ClassVar[str] = "docker"
    capabilities: ClassVar[frozenset[str]] = frozenset({RESTART, KILL, CONTAINER})
    python_modules: ClassVar[tuple[str, ...]] = ("docker", "testcontainers.core.config",
                                                 "testcontainers.core.container")
    extra: ClassVar[str] = "docker"
    name: ClassVar[str] = ""
    container_ports: ClassVar[dict[str, int]] = {}  # name -> the container's port; "client" is its clients'
    data_path: ClassVar[str] = "/data"  # where the volume is mounted in the container

    def __init__(self, settings: BackendSettings) -> None:
        self.run_id = settings.run_id
        self.options = dict(settings.options)
        self.namespace = self.namespace_for(settings.run_id)
        self.container_name = f"queue-chaos-{settings.run_id}-{self.kind}"
        self.volume_name = f"{self.container_name}-data"
        self.network_name = f"{self.container_name}-{NETWORK_SUFFIX}"
        self.ports: dict[str, int] = {}  # name -> the host port it is published on (127.0.0.1)
        self._on_event = settings.on_event
        self._wrapper: DockerContainer | None = None
        self._main_pid: int | None = None  # the host pid of the container's main process, while it runs
        self._started = False
        self._closed = False

    @classmethod
    def open(cls, settings: BackendSettings) -> Self:
        return cls(settings).start()

    @classmethod
    def preflight(cls, url: str | None) -> None:
        """A Docker engine answers here."""
        engine.client()

    # -- what a server kind says -----------------------------------------------------------------------

    @staticmethod
    def namespace_for(run_id: str) -> str:
        return ""

    def image(self) -> ImageSpec:
        raise NotImplementedError

    def wrapper(self, image: str) -> DockerContainer:
        """The testcontainers object that starts the container (its module's class, or the generic one)."""
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def url_at(self, host: str, port: int) -> str:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {}

    def option(self, option: ServerOption) -> Any:
        return option.check(self.options.get(option.name, option.default), f"the docker {self.name} server")

    # -- Backend -------------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.ports.get("client", 0)

    @property
    def endpoint(self) -> Endpoint:
        return self.endpoint_at(HOST, self.port)

    def endpoint_at(self, host: str, port: int) -> Endpoint:
        return Endpoint(host, port, self.url_at(host, port))

    @property
    def container(self) -> Container:
        """The running container (the Docker SDK's object), for the container faults."""
        if self._wrapper is None or self._wrapper.get_wrapped_container() is None:
            raise HarnessError(f"the docker {self.name} server has not been started")
        return self._wrapper.get_wrapped_container()

    @property
    def pid(self) -> int | None:
        """The host pid of the container's main process (None while it is down)."""
        with contextlib.suppress(Exception):
            self.container.reload()
            return int(self.container.attrs["State"]["Pid"]) or None
        return None

    def start(self) -> Self:
        if self._closed:
            raise HarnessError(f"docker {self.name}: start() after close()")
        if self._started:
            return self
        from testcontainers.core.config import ConnectionMode, testcontainers_config

        testcontainers_config.ryuk_disabled = True  # Ryuk's image cannot be pulled: the labels reap instead
        # The port is published on this host's loopback, whether or not the suite itself runs in a container.
        testcontainers_config.connection_mode_override = ConnectionMode.docker_host
        client = engine.client()  # a missing engine is the user's to fix (exit 2), before anything is made
        began = time.monotonic()
        LIVE.add(self)  # an exit of ours without close() still removes the container
        self._emit(events.backend_prepare(provider=self.provider, container=self.container_name,
                                          run_label=self.run_id))
        from chaos.containers.images import ensure

        try:
            image = ensure(self.image())
            labels = engine.labels(self.run_id)
            client.volumes.create(self.volume_name, labels=labels)
            client.networks.create(self.network_name, labels=labels)
            self.ports = {name: ports.reserve() for name in self.container_ports}
            wrapper = self.wrapper(image)
            wrapper.with_name(self.container_name)
            for name, inside in self.container_ports.items():  # on loopback only, on the reserved ports
                wrapper.ports[str(inside)] = (HOST, self.ports[name])  # type: ignore[assignment]
            wrapper.with_volume_mapping(self.volume_name, self.data_path, "rw")
            wrapper.with_kwargs(labels=labels, network=self.network_name)
            self._wrapper = wrapper
            try:
                wrapper.start()
            except Exception as exc:  # the engine's refusal or testcontainers' wait: the container did not start
                raise HarnessError(f"the {self.name} container {self.container_name} did not start: "
                                   f"{type(exc).__name__}: {exc}") from exc
            self._wait_ready()
            self._started = True
            self._emit(events.backend_start(
                pid=self.pid, port=self.port, ports=self.ports, provider=self.provider, image=image,
                container=self.container_name, volume=self.volume_name, network=self.network_name,
                run_label=self.run_id, start_s=round(time.monotonic() - began, 3), **self.describe()))
        except BaseException:
            LIVE.discard(self)
            self._teardown()
            raise
        return self

    def restart(self, mode: str = "immediate") -> None:
        """immediate: SIGKILL the container (a crash); fast: stop it (SIGTERM, then SIGKILL after the grace);
        then start it again, on the same volume and port."""
        if mode not in ("immediate", "fast"):
            raise ConfigError(f"Expected a {self.name} restart mode among immediate, fast, but got {mode!r}. Fix the "
                              "fault's mode in the scenario.")
        old_pid, began = self.pid, time.monotonic()
        self._down("kill" if mode == "immediate" else "stop")
        self._up()
        self._emit(events.backend_restart(mode, old_pid, self.pid, time.monotonic() - began))

    def kill(self) -> None:
        """SIGKILL the container's processes, leaving it down until restart()."""
        pid = self.pid
        self._down("kill")
        self._emit(events.backend_exit(pid or 0, -9, "kill"))

    def connect(self, connected: bool) -> list[str]:
        """Disconnect the container from its network (its clients' connections fail and new ones are
        refused, though it runs on), or connect it again; the networks it is on afterwards."""
        network = engine.client().networks.get(self.network_name)
        if connected:
            network.connect(self.container)
        else:
            network.disconnect(self.container, force=True)
        self.container.reload()
        return sorted(self.container.attrs["NetworkSettings"]["Networks"] or {})

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        LIVE.discard(self)
        pid = self.pid
        self._teardown()
        if self._started:
            self._emit(events.backend_exit(pid or 0, 0, "close"))

    @classmethod
    def clean_after_killed_run(cls, started: dict[str, Any], run_dir: Path, url: str | None) -> tuple[bool, str]:
        """Remove every container, network and volume labelled with that run (the run dir's name), once the
        runner its labels name is gone."""
        run = str(started.get("run_label") or "")
        if not run:
            return True, ""
        if run != run_dir.name:
            return False, f"the containers labelled with run {run} are not touched: that is not this run dir's name"
        try:
            if run not in engine.orphaned_runs():
                return True, ""  # none left, or their runner lives (a run dir copied beside a live run's)
            removed = engine.reap(run)
        except ChaosError as exc:
            return False, f"its containers are left until the Docker engine answers again: {exc}"
        return True, f"removed {', '.join(removed)}" if removed else ""

    # -- internals -----------------------------------------------------------------------------------------

    def _emit(self, record: events.Record) -> None:
        if self._on_event is not None:
            self._on_event(record)

    def _down(self, how: str) -> None:
        """Stop the container: a kill SIGKILLs its main process (the container's pid 1, so every process in
        it dies) by its host pid at once, as the local provider's crash does, before any request to the
        engine, whose round trips would give the workers time to drain what a crash should lose."""
        import docker

        signalled = how == "kill" and self._main_pid is not None
        if signalled:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._main_pid or 0, signal.SIGKILL)
        self._main_pid = None
        self.container.reload()
        if self.container.status not in ("running", "paused"):
            return  # already down (a kill before this restart)
        try:
            if self.container.status == "paused":
                self.container.unpause()  # the SIGKILL lands as it thaws
            if how == "kill":
                if not signalled:
                    self.container.kill()
            else:
                self.container.stop(timeout=STOP_GRACE_S)
            self.container.wait(timeout=STOP_GRACE_S + 5)
        except docker.errors.APIError as exc:
            raise HarnessError(f"could not {how} the {self.name} container {self.container_name}: {exc}") from exc

    def _up(self) -> None:
        import docker

        try:
            self.container.start()
        except docker.errors.APIError as exc:
            raise HarnessError(f"could not start the {self.name} container {self.container_name} again: {exc}") from exc
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.ready():
            self.container.reload()
            if self.container.status == "exited" or time.monotonic() > deadline:
                logs = self.container.logs(tail=15).decode("utf-8", "replace")
                raise HarnessError(f"the {self.name} container {self.container_name} did not become ready; its "
                                   f"log ends:\n{logs}")
            time.sleep(0.05)
        self._main_pid = self.pid

    def _teardown(self) -> None:
        """Remove the container, then its network and volume (by name: they are this backend's alone)."""
        import docker

        with contextlib.suppress(ConfigError):
            client = engine.client()
            with contextlib.suppress(docker.errors.NotFound):
                client.containers.get(self.container_name).remove(force=True, v=True)
            for collection, name in ((client.networks, self.network_name), (client.volumes, self.volume_name)):
                with contextlib.suppress(docker.errors.NotFound):
                    collection.get(name).remove()
        ports.release(*self.ports.values())
