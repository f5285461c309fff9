"""The Docker engine: one client per process, a clear error where none answers, and the labels every
container, network and volume of the suite carries, so that a run's end and `chaos clean` remove them
without Ryuk (whose image cannot be pulled here)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from chaos.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    import docker

OWNER_LABEL = "queue-chaos.owner"  # on everything the suite creates; its value is OWNER
OWNER = "queue-chaos"
RUN_LABEL = "queue-chaos.run"  # the run id of the run that created it
RUNNER_LABEL = "queue-chaos.runner"  # "pid:start time" of the process that created it: gone, it is an orphan
HOW_TO_START = ("install Debian's docker.io and start its engine (ci/setup.sh does both: dockerd --storage-driver "
                "vfs), or set DOCKER_HOST to an engine you run")


@dataclass(frozen=True)
class EngineStatus:
    """Whether a Docker engine answers here, and what to do when none does."""

    available: bool
    detail: str  # the engine's version, or why there is none


def labels(run_id: str) -> dict[str, str]:
    import psutil  # here, not at the top: the checker imports the fault kinds, which import this module

    me = psutil.Process()
    return {OWNER_LABEL: OWNER, RUN_LABEL: run_id, RUNNER_LABEL: f"{me.pid}:{me.create_time():.2f}"}


def engine_present() -> bool:
    """Whether an engine may answer here at all (its socket exists, or DOCKER_HOST names one): checked
    before a cleanup asks it anything, so that a machine without Docker never waits on one."""
    return bool(os.environ.get("DOCKER_HOST")) or os.path.exists(_where().removeprefix("unix://"))


def sdk_present() -> bool:
    """Whether the Docker SDK for Python (the docker extra) imports here, without importing it."""
    try:
        return importlib.util.find_spec("docker") is not None
    except (ImportError, ValueError):
        return False


def status() -> EngineStatus:
    try:
        version = client().version()
    except ConfigError as exc:
        return EngineStatus(False, str(exc))
    except Exception as exc:  # noqa: BLE001 - an engine that answered once and stopped: the SDK's or requests'
        return EngineStatus(False, f"the Docker engine at {_where()} stopped answering ({_short(exc)})")
    return EngineStatus(True, f"Docker engine {version.get('Version', '?')} at {_where()}")


def client() -> docker.DockerClient:
    """The process's client of the engine; ConfigError (exit 2) when the SDK is missing or no engine answers."""
    return _client()


@cache
def _client() -> docker.DockerClient:
    try:
        import docker
    except ImportError as exc:
        raise ConfigError("Containers need the Docker SDK for Python: pip install 'queue-chaos[docker]'.") from exc
    try:
        found = docker.from_env(timeout=60)
        found.ping()
    except docker.errors.DockerException as exc:
        missing = "" if shutil.which("dockerd") else " (dockerd is not installed)"
        raise ConfigError(f"Expected a Docker engine at {_where()}{missing}, but none answered ({_short(exc)}). "
                          f"To use containers, {HOW_TO_START}; or run without them (--backend local).") from exc
    return found


def _where() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def owned(kind: str, run_id: str | None = None) -> list[Any]:
    """Containers, networks or volumes (`kind`) the suite created, of one run or of every run, as the engine
    lists them (containers sparse: no inspection of each, so one removed meanwhile is no error)."""
    wanted = [f"{OWNER_LABEL}={OWNER}"] + ([f"{RUN_LABEL}={run_id}"] if run_id else [])
    collection = getattr(client(), kind)
    if kind == "containers":
        return list(collection.list(all=True, sparse=True, filters={"label": wanted}))
    return list(collection.list(filters={"label": wanted}))


def orphaned_runs() -> set[str]:
    """The runs whose containers, networks or volumes are left while the process that made them is gone
    (a runner SIGKILLed before its end, whose run dir may be gone too). ConfigError where the SDK is missing."""
    client()
    import docker

    found: dict[str, str] = {}
    try:
        for kind in ("containers", "networks", "volumes"):
            for thing in owned(kind):
                labelled = thing.attrs.get("Labels") or {}
                found.setdefault(labelled.get(RUN_LABEL, ""), labelled.get(RUNNER_LABEL, ""))
    except docker.errors.DockerException as exc:
        raise HarnessError(f"could not list the suite's containers: {_short(exc)}") from exc
    return {run for run, runner in found.items() if run and not _alive(runner)}


def _alive(runner: str) -> bool:
    import psutil

    pid, _, born = runner.partition(":")
    try:
        process = psutil.Process(int(pid))
        alive = process.status() != psutil.STATUS_ZOMBIE  # a zombie runner is gone, not yet reaped
        return alive and abs(process.create_time() - float(born)) < 1.0
    except (ValueError, psutil.Error):
        return False


def reap(run_id: str) -> list[str]:
    """Remove (forcibly) every container, then network, then volume of one run; what was removed, by kind
    and name. One already gone is skipped; an engine that refuses is a HarnessError."""
    import docker

    removed = []
    try:
        for kind in ("containers", "networks", "volumes"):
            for thing in owned(kind, run_id):
                name = name_of(thing)
                try:
                    if kind == "containers":
                        thing.remove(force=True, v=True)
                    else:
                        thing.remove()
                except docker.errors.NotFound:
                    continue
                removed.append(f"{kind[:-1]} {name}")
    except docker.errors.DockerException as exc:
        raise HarnessError(f"could not remove the containers of run {run_id}: {_short(exc)}") from exc
    return removed


def name_of(thing: Any) -> str:
    names = thing.attrs.get("Names")  # a sparse container's
    return str(names[0]).lstrip("/") if names else str(thing.name)
