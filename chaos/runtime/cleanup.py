"""What a run whose runner was killed outright (no `finally` ran) or cut short in its cleanup left
behind: its server's data in the run dir, its namespace (a schema, key prefix, tube or vhost) on the
user's server. The next run in the same runs dir, or `chaos clean` (in every run dir under the path it is
given, a suite's --out too), finds such runs by their ledgers (no end, or an interrupted one, and the
runner recorded there no longer alive on this host) and removes what each backend recorded that it made
or was about to make (`backend.prepare` is journaled before a server's data exists), the proxies it
journaled on a Toxiproxy that outlived it, and its workers' processes that no parent-death signal reached
(`chaos.containment`), and its containers (by their labels: `chaos.containers.engine`), never anything
else; `chaos clean` also removes every container, network and volume of the suite whose runner is gone,
whether or not its run dir is still there; the run's ledger then ends with `abandoned`, so it is cleaned
once. Half-built PostgreSQL templates, shared by every run on the machine, are removed once their
builder is gone.

A run dir may come from anywhere (a restored CI cache, an artifact, a shared volume, a planted directory),
so its ledger only says where to look: each thing is acted on only once it proves it is that run's
(`chaos.ownership`). What does not, and whatever a run of another host names (its runner cannot be
checked from here), is reported with its path and left alone."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from chaos import events
from chaos.backends.postgres.cluster import remove_half_built_templates
from chaos.backends.registry import provider
from chaos.containers import engine
from chaos.containment import SWEEP_S, sweep
from chaos.errors import ChaosError
from chaos.events import Event
from chaos.ledger import Ledger, last_event, read_events
from chaos.procs import is_alive
from chaos.runtime.network import clean_after_killed_run as clean_network

CLEANABLE_END = "interrupted"  # a run interrupted while cleaning up may have left its data behind
CREATE_TIME_TOLERANCE_S = 1.0  # psutil derives start times from the boot time, which clock steps move


def clean_killed_runs(runs_dir: Path, url: str | None = None, orphans: bool = False,
                      nested: bool = False) -> list[tuple[bool, str]]:
    """Per run found in `runs_dir` (with `nested`, in every run dir under it, however deep) that left
    something: whether all of it is gone now, and a line saying what was removed or what is left and how to
    remove it; first, a line per half-built template removed, and with `orphans` (`chaos clean`; a run's
    start spares itself the engine's round trips), per run of any runs dir whose containers outlived their
    runner."""
    cleaned = [(True, line) for line in remove_half_built_templates()]
    if orphans:
        cleaned += _reap_orphaned_containers()
    gone: set[int] = set()  # loopback ports of the local servers this clean removed (a suite's shared nodes)
    for run_dir in sorted(run_dirs(runs_dir, nested), key=_on_a_shared_node):  # the nodes before their runs
        ledger_path = run_dir / "ledger.sqlite"
        last = last_event(ledger_path)
        if last is not None and last.kind == events.RUN_END and last.data.get("status") != CLEANABLE_END:
            continue  # the common case, a run that ended and cleaned up: one row read
        try:
            recorded = read_events(ledger_path, (events.RUN_START, events.BACKEND_PREPARE, events.BACKEND_START,
                                                 events.NETWORK_START, events.NETWORK_PROXY, events.CONTAINMENT))
        except ChaosError:
            continue  # not a ledger this suite can read: not ours to touch
        start = next((e.data for e in recorded if e.kind == events.RUN_START), None)
        made = [e.data for e in recorded if e.kind in (events.BACKEND_PREPARE, events.BACKEND_START)]
        made = [data for i, data in enumerate(made) if data not in made[:i]]  # an external namespace: alike twice
        if start is None:
            continue
        if start.get("host") != socket.gethostname():
            if named := _named(made):
                cleaned.append((False, f"{run_dir}: not touched, since it is a run of host {start.get('host')!r}, "
                                       f"whose runner cannot be checked from here: {'; '.join(named)}. Once that "
                                       f"run is over, delete {run_dir} yourself (and run `chaos clean` on that "
                                       "host for what it left there)"))
            continue
        if _runner_alive(start):
            continue
        outcomes = [_sweep_workers(recorded), _clean_proxies(run_dir.name, recorded)]
        if start.get("worker_image"):  # its workers' containers (a docker backend's are its own to clean)
            outcomes.append(_reap_containers(run_dir.name))
        outcomes += [_clean(start, data, run_dir, url, gone) for data in made]
        gone |= _ports_removed(made, outcomes)
        said = "; ".join(dict.fromkeys(what for _, what in outcomes if what))  # its prepare and its start alike
        if all(done for done, _ in outcomes):
            if not said and last is not None and last.kind == events.RUN_END:
                continue  # an interrupted run that had cleaned up after all
            said = said or "nothing of it was left"
            _end(ledger_path, f"its runner (pid {start.get('pid')}) was killed; {said}")
        cleaned.append((all(done for done, _ in outcomes), f"{run_dir}: {said}"))
    return cleaned


def run_dirs(runs_dir: Path, nested: bool) -> list[Path]:
    """The run dirs (a dir holding a ledger) in `runs_dir`, or with `nested` under it at any depth (itself
    too), not looking inside a run dir nor following a symlink."""
    if not nested:
        return sorted(p.parent for p in runs_dir.glob("*/ledger.sqlite")) if runs_dir.is_dir() else []
    found = []
    for where, dirs, files in os.walk(runs_dir, followlinks=False):
        if "ledger.sqlite" in files:
            found.append(Path(where))
            dirs.clear()
        dirs.sort()
    return found


def _named(made: list[dict[str, object]]) -> list[str]:
    """What a run's backend journaled it made, as a message names it: its data dirs, its namespaces."""
    named = []
    for data in made:
        if data.get("data_dir") or data.get("pgdata"):
            named.append(f"its data directory {data.get('data_dir') or data.get('pgdata')}")
        if data.get("namespace") and data.get("provider") == "external":
            named.append(f"its namespace {data['namespace']} on {data.get('url')}")
    return list(dict.fromkeys(named))


def _reap_orphaned_containers() -> list[tuple[bool, str]]:
    """Containers, networks and volumes of the suite whose runner is gone (by their labels, whether or not
    their run dir is still there): what Ryuk would reap, where its image cannot be pulled. Without the
    Docker SDK (the docker extra) this install started no container, so there is nothing of its to reap."""
    if not engine.engine_present() or not engine.sdk_present():
        return []
    try:
        return [(True, f"run {run}: removed {', '.join(engine.reap(run))}") for run in sorted(engine.orphaned_runs())]
    except ChaosError as exc:
        return [(False, f"the suite's containers could not be listed: {exc}")]


def _reap_containers(run_id: str) -> tuple[bool, str]:
    """The run's workers' containers, by their labels, once the runner they name is gone."""
    try:
        removed = engine.reap(run_id) if run_id in engine.orphaned_runs() else []
    except ChaosError as exc:
        return False, f"its workers' containers are left until the Docker engine answers ({exc}); run chaos clean then"
    return True, f"removed {', '.join(removed)}" if removed else ""


def _clean(start: dict[str, object], started: dict[str, object], run_dir: Path, url: str | None,
           gone: set[int]) -> tuple[bool, str]:
    try:
        backend = provider(str(start.get("backend_kind")), str(started.get("provider"))).backend_class()
    except ChaosError:
        return False, f"its backend {started.get('provider')!r} is not one this suite knows"
    port = _loopback_port(started.get("url"))
    if started.get("namespace") and port in gone:  # nothing acted on: its server is no more
        return True, f"its namespace {started['namespace']} went with the server on {started['url']}, removed above"
    return backend.clean_after_killed_run(started, run_dir, url)


def _on_a_shared_node(run_dir: Path) -> bool:
    """Sorts a suite's shared nodes (`--out/servers/`) before the runs they served: a run's namespace on a
    node this clean removes went with the node."""
    return run_dir.parent.name != "servers"


def _ports_removed(made: list[dict[str, object]], outcomes: list[tuple[bool, str]]) -> set[int]:
    """The ports of the run's local server, once all of the run's cleaning is done: nothing of it runs."""
    if not all(done for done, _ in outcomes):
        return set()
    ports: set[int] = set()
    for data in made:
        recorded = data.get("ports")
        if data.get("provider") == "local" and isinstance(recorded, dict):
            ports |= {port for port in recorded.values() if isinstance(port, int)}
    return ports


def _loopback_port(url: object) -> int | None:
    """The port of a URL on this machine's loopback (where a suite's shared node listens), else None."""
    try:
        parts = urlsplit(str(url))
        return parts.port if parts.hostname in ("127.0.0.1", "localhost") else None
    except ValueError:
        return None


def _clean_proxies(run_id: str, recorded: list[Event]) -> tuple[bool, str]:
    """The run's proxies (named after its id, its dir's name), on a Toxiproxy that outlived its runner."""
    started = next((e.data for e in recorded if e.kind == events.NETWORK_START), None)
    if started is None:
        return True, ""
    return clean_network(run_id, started, [e.data for e in recorded if e.kind == events.NETWORK_PROXY])


def _sweep_workers(recorded: list[Event]) -> tuple[bool, str]:
    """What the run's workers started that no parent-death signal reached (a wrapper's child, a process
    that double-forked into its own session): found by the run's marker or cgroup, and SIGKILLed."""
    killed, still = [], []
    for contained in (e.data for e in recorded if e.kind == events.CONTAINMENT):
        pids, left = sweep(str(contained["marker"]), contained.get("cgroup"), SWEEP_S)
        killed += pids
        still += [proc.pid for proc in left]
    if still:
        return False, f"its workers' processes {still} survived SIGKILL; end them as root"
    return True, f"killed its workers' processes {killed}" if killed else ""


def _end(ledger_path: Path, detail: str) -> None:
    """Mark the run abandoned, so it is cleaned once; a ledger that cannot take it is left as it is."""
    try:
        ledger = Ledger(ledger_path)
        try:
            ledger.append(events.run_end("abandoned", detail))
        finally:
            ledger.close()
    except sqlite3.Error:
        pass


def _runner_alive(start: dict[str, object]) -> bool:
    """Is the process that ran it, the very one (pid and start time), still there? A zombie is not: a
    `chaos run` killed outright leaves its run's process to be reaped by init, which may take a while."""
    pid, born = start.get("pid"), start.get("pid_create_time")
    if not isinstance(pid, int):
        return False
    try:
        process = psutil.Process(pid)
        return is_alive(process) and (not isinstance(born, (int, float))
                                      or abs(process.create_time() - born) < CREATE_TIME_TOLERANCE_S)
    except psutil.Error:
        return False
