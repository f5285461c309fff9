"""Which processes of a finished run are still alive: the check behind "nothing outlives a run", used
by the tests and the repeat benchmark on any run directory."""

from __future__ import annotations

from pathlib import Path

import psutil

from chaos import events
from chaos.containment import members
from chaos.ledger import read_events
from chaos.procs import carrying


def run_processes(run_dir: Path) -> list[psutil.Process]:
    """Every process the run's ledger says it started (workers, reconcilers, the backend) still alive
    or stopped, plus any process whose command line or working directory mentions the run dir, or whose
    environment carries its local server's marker (a daemon the server forked, such as RabbitMQ's epmd),
    or that its workers started, however it detached (the run's containment: marker and cgroup)."""
    pids: set[int] = set()
    markers: set[str] = set()
    contained: list[psutil.Process] = []
    for event in read_events(run_dir / "ledger.sqlite"):
        if event.kind == events.CONTAINMENT:
            contained += members(str(event.data["marker"]), event.data.get("cgroup"))
        if event.kind in (events.BACKEND_PREPARE, events.BACKEND_START) and event.data.get("marker"):
            markers.add(str(event.data["marker"]))
        if event.kind in (events.PROCESS_START, events.BACKEND_START) and event.data.get("pid"):
            pids.add(int(event.data["pid"]))
        elif event.kind == events.BACKEND_RESTART and event.data.get("new_pid"):
            pids.add(int(event.data["new_pid"]))
    alive = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return (alive + processes_mentioning(str(run_dir)) + (processes_marked(markers) if markers else [])
            + contained)


def processes_marked(markers: set[str]) -> list[psutil.Process]:
    """Live processes whose environment carries one of these local servers' markers."""
    return carrying(events.ENV_SERVER_MARKER, markers)


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live processes whose command line or working directory mentions `text` (a run dir)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if text in " ".join(proc.info["cmdline"] or []) or text in (proc.info["cwd"] or ""):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found
