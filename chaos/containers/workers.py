"""Workers in containers: a target whose target.toml names an `image` (or a run given --worker-image)
runs each worker and its reconciler as `docker run --init` of that image. The attached `docker run`
client is the process the supervisor starts and reaps (it lives exactly as long as the container and
streams the container's output into the worker's log); signals go to the worker's own process inside
the container, found by its host pid, so stop and kill act as on any worker; the container faults
(pause, container_kill) act on the whole container.

The container shares the host's network (so the sink, and a per-worker Toxiproxy on loopback, are where
the worker expects them) and sees the target folder and the probe package at their host paths, read-only.
The suite's own image, `queue-chaos/python`, runs the host's Python: it holds no files of its own but a
user, and mounts the host's /usr and Python installation read-only.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from chaos.containers import engine, images
from chaos.errors import ConfigError, HarnessError

SUITE_PYTHON = "queue-chaos/python"  # the suite's own worker image (the host's Python, mounted)
FOUND_BOUND_S = 30.0  # how long a started container may take to show its worker's process


def container_env(env: dict[str, str], always: tuple[str, ...]) -> list[str]:
    """The variables a container gets: what the run set beyond the suite's own environment, and `always`."""
    return sorted({key for key, value in env.items() if os.environ.get(key) != value} | set(always))


def set_paused(container: str, paused: bool) -> list[int]:
    """Freeze (or thaw) every process of a container through the cgroup freezer; the host pids it holds."""
    import docker

    try:
        found = engine.client().containers.get(container)
        pids = _pids(found)
        if paused:
            found.pause()
        else:
            found.unpause()
        found.reload()
    except docker.errors.APIError as exc:
        raise HarnessError(f"could not {'pause' if paused else 'unpause'} the container {container}: {exc}") from exc
    if (found.status == "paused") != paused:
        raise HarnessError(f"the container {container} is {found.status} after a {'pause' if paused else 'unpause'}")
    return pids


def kill_container(container: str) -> list[int]:
    """SIGKILL a container's init, so that every process in it dies; the host pids it held."""
    import docker

    try:
        found = engine.client().containers.get(container)
        pids = _pids(found)
        found.kill()
    except docker.errors.APIError as exc:
        raise HarnessError(f"could not kill the container {container}: {exc}") from exc
    return pids


def _pids(container: Any) -> list[int]:
    """The host pids of a container's processes (`docker top`)."""
    listed = container.top(ps_args="-o pid")
    return [int(row[0]) for row in listed.get("Processes") or []]


def host_pid(member: psutil.Process, namespace_pid: int) -> int | None:
    """The host pid of the process whose pid in its container's namespace is `namespace_pid`, found among
    the processes of `member`'s cgroup (the container's: a process the worker daemonised is in it too)."""
    for pid in _cgroup_pids(member.pid):
        if _namespace_pid(pid) == namespace_pid:
            return pid
    return None


def _cgroup_pids(pid: int) -> list[int]:
    """The pids in the same `pids` cgroup as `pid` (cgroup v1's pids controller, else the v2 hierarchy)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        root = {"pids": "/sys/fs/cgroup/pids", "": "/sys/fs/cgroup"}.get(controllers)
        if root is None:
            continue
        try:
            return [int(found) for found in Path(root + path, "cgroup.procs").read_text().split()]
        except OSError:
            continue
    return []


def _namespace_pid(pid: int) -> int | None:
    """The pid a process has in its innermost pid namespace (the last of its NSpid line)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def remove(container: str) -> None:
    """Remove a container of the run, whatever its state (the run's end; its `--rm` may not have run)."""
    import docker

    try:
        engine.client().containers.get(container).remove(force=True)
    except docker.errors.NotFound:
        pass


def python_image() -> images.ImageSpec:
    """An image of no files but links, a user and folders: the host's /usr and Python come by mount."""
    path = os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin"]))
    return images.ImageSpec("python", (), files=images.passwd(), changes=(f"ENV PATH={path}",))


def python_mounts() -> list[str]:
    return list(dict.fromkeys(["/usr", sys.base_prefix, sys.prefix]))


def check_image(image: str) -> None:
    """Refuse (ConfigError) workers in containers of `image` where they cannot start: no engine answers, no
    docker command, or an image the engine lacks (none can be pulled here; the suite's own is built when a
    run first needs it). A run checks this before it starts anything, and a suite before its first run."""
    client = engine.client()
    docker_command()
    if image == SUITE_PYTHON:
        return
    import docker

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise ConfigError(f"The target's worker image {image!r} is not in the Docker engine, and no image can be "
                          "pulled here. Build it first (docker build or docker import), or set image = "
                          f"\"{SUITE_PYTHON}\" to run the workers on the host's Python in a container.") from exc
    except docker.errors.APIError as exc:  # a name the engine cannot parse (e.g. "=")
        raise ConfigError(f"The worker image {image!r} is not an image name the Docker engine accepts "
                          f"({exc.explanation or exc}). Give a name such as \"name:tag\", or set image = "
                          f"\"{SUITE_PYTHON}\" to run the workers on the host's Python in a container.") from exc


def docker_command() -> str:
    """The docker command, which starts each worker's container."""
    found = shutil.which("docker")
    if found is None:
        raise ConfigError("Workers in containers are started with the docker command, which is not on PATH. "
                          "Install Debian's docker.io (ci/setup.sh does), or drop the target's image.")
    return found


@dataclass
class WorkerContainers:
    """How one run's processes start in containers of `image`; each start gets a container of its own."""

    image: str
    run_id: str
    mounts: list[str]  # host paths bound read-only at the same path
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def prepare(cls, image: str, run_id: str, mounts: list[str]) -> WorkerContainers:
        """Check the engine and the image (building the suite's own) before anything starts."""
        check_image(image)
        if image == SUITE_PYTHON:
            return cls(images.ensure(python_image()), run_id, [*python_mounts(), *mounts])
        return cls(image, run_id, mounts)

    def command(self, name: str, argv: list[str], env: list[str], cwd: Path | None) -> tuple[str, list[str]]:
        """(container name, the `docker run` command line that runs argv in it); the variables `env` names
        are passed by name, their values coming from the client's own environment."""
        docker_cli = docker_command()
        container = f"queue-chaos-{self.run_id}-{name}-{next(self._numbers)}"
        command = [docker_cli, "run", "--rm", "--init", "--name", container, "--network", "host"]
        for key, value in engine.labels(self.run_id).items():
            command += ["--label", f"{key}={value}"]
        for key in env:
            command += ["-e", key]
        for path in self.mounts:
            command += ["-v", f"{path}:{path}:ro"]
        if cwd is not None:
            command += ["-w", str(cwd)]
        return container, [*command, self.image, *argv]


def worker_process(container: str, client_alive: psutil.Process) -> psutil.Process | None:
    """The worker's own process inside a started container, on the host: the child of the container's
    init. Waits for it while the `docker run` client lives; None once the client has exited (the
    container ended at once: its exit is the client's)."""
    import docker

    deadline = time.monotonic() + FOUND_BOUND_S
    while time.monotonic() < deadline and client_alive.is_running() and client_alive.status() != psutil.STATUS_ZOMBIE:
        try:
            found = engine.client().containers.get(container)
            init = int(found.attrs["State"]["Pid"] or 0)
            if init:
                children = psutil.Process(init).children()
                if children:
                    return children[0]
        except (docker.errors.NotFound, psutil.NoSuchProcess):
            pass
        time.sleep(0.02)
    if not client_alive.is_running() or client_alive.status() == psutil.STATUS_ZOMBIE:
        return None
    raise HarnessError(f"the container {container} did not show its worker's process within {FOUND_BOUND_S:g}s "
                       "(or its docker run client exited first: see the worker's log)")
