"""A runner SIGKILLed mid-partition or mid-boot runs no `finally`: what it started outside its workers (a
`toxiproxy-server` from PATH, proxies on the user's TOXIPROXY_URL, a server's data dir being made, a
half-built initdb template) must die with it or be removed by `chaos clean`, which says what it removed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from chaos import events
from chaos.errors import ChaosError
from chaos.events import Event, Record
from chaos.ledger import Ledger, read_events
from chaos.leftovers import processes_marked, processes_mentioning, run_processes
from chaos.toxiproxy.client import ToxiproxyControl
from tests.integration.runner import REPO, CliResult, chaos
from tests.integration.test_interrupt import run_pid, wait_gone
from tests.integration.test_network_faults import proxies

# Toxiproxy's own flags; a second's sleep before it listens, as a slow machine's server might take.
SLOW_TOXIPROXY = """#!{python}
import os, sys, time
args = sys.argv[1:]
host, port = args[args.index("-host") + 1], args[args.index("-port") + 1]
time.sleep(1)
os.execv({python!r}, [{python!r}, "-m", "chaos", "toxiproxy", "serve", "--host", host, "--port", port])
"""


@pytest.fixture
def slow_toxiproxy_on_path(tmp_path: Path) -> dict[str, str]:
    """The environment of a run that finds a `toxiproxy-server` on PATH (a real server, a second late)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    binary = bin_dir / "toxiproxy-server"
    binary.write_text(SLOW_TOXIPROXY.format(python=sys.executable))
    binary.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TOXIPROXY_URL": ""}


@pytest.fixture
def user_toxiproxy(tmp_path: Path) -> Iterator[str]:
    """The user's own Toxiproxy (TOXIPROXY_URL), which outlives any run."""
    server = subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        yield _url(server.stdout.readline())
    finally:
        server.terminate()
        server.wait(10)


def _url(line: str) -> str:
    found = re.search(r"(http://[\d.]+:\d+)", line)
    assert found is not None, line
    return found.group(1)


def ledger_of(runs_dir: Path, matches: Callable[[list[Event]], bool], runner: subprocess.Popen[str],
              timeout: float = 90) -> tuple[Path, list[Event]]:
    """The run dir and its events once `matches` holds for them (polled, while the runner lives)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and runner.poll() is None:
        for run_dir in runs_dir.glob("*"):
            try:
                recorded = read_events(run_dir / "ledger.sqlite")
            except ChaosError:
                continue
            if matches(recorded):
                return run_dir, recorded
        time.sleep(0.01)
    raise AssertionError(f"the awaited moment never came (runner exit {runner.poll()})")


@contextmanager
def runner(runs_dir: Path, target: str, scenario: str, *args: str,
           env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", target, "--scenario", scenario,
                             "--seed", "1", "--runs-dir", str(runs_dir), *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def clean(runs_dir: Path, env: dict[str, str] | None = None) -> CliResult:
    return chaos("clean", "--runs-dir", str(runs_dir), env=env)


def partitioned(recorded: list[Event]) -> bool:
    faults = {e.data["id"] for e in recorded if e.kind == "fault" and e.data["kind"] == "partition"}
    return any(e.kind == "fault.applied" and e.data["id"] in faults for e in recorded)


def booting(data_key: str) -> Callable[[list[Event]], bool]:
    """True once the backend journaled what it will create and that data dir exists on disk, the server
    not yet started."""
    def check(recorded: list[Event]) -> bool:
        prepared = [e for e in recorded if e.kind == "backend.prepare"]
        return bool(prepared) and Path(prepared[0].data[data_key]).exists() and not any(
            e.kind == "backend.start" for e in recorded)
    return check


def test_a_toxiproxy_binary_on_path_dies_with_a_runner_killed_mid_partition(
        tmp_path: Path, slow_toxiproxy_on_path: dict[str, str]) -> None:
    runs = tmp_path / "runs"
    with runner(runs, "pg_txlock", "partition_worker_from_broker", "-s", "mode=blackhole",
                env=slow_toxiproxy_on_path) as proc:
        run_dir, recorded = ledger_of(runs, partitioned, proc)
        started = next(e.data for e in recorded if e.kind == "network.start")
        assert started["kind"] == "binary", started
        assert len(proxies(started["url"])) == 2, "the binary serves the run's proxies while it runs"
        servers = [p for p in run_processes(run_dir) if "toxiproxy" in " ".join(p.cmdline())]
        assert servers, "the Toxiproxy the run started is recognised as the run's"
        kill(proc)
    wait_gone(run_dir)
    assert not any(psutil.pid_exists(p.pid) and p.status() != psutil.STATUS_ZOMBIE for p in servers), \
        "the toxiproxy-server outlived its runner"
    assert not run_processes(run_dir)
    result = clean(runs)
    assert result.code == 0, result.stdout + result.stderr
    assert not run_processes(run_dir)


def test_a_killed_runs_proxies_are_deleted_from_the_users_toxiproxy_by_chaos_clean(
        tmp_path: Path, user_toxiproxy: str) -> None:
    runs = tmp_path / "runs"
    with runner(runs, "pg_txlock", "partition_worker_from_broker", "-s", "mode=blackhole",
                env={"TOXIPROXY_URL": user_toxiproxy}) as proc:
        run_dir, recorded = ledger_of(runs, partitioned, proc)
        kill(proc)
    wait_gone(run_dir)
    journaled = {e.data["name"] for e in read_events(run_dir / "ledger.sqlite") if e.kind == "network.proxy"}
    left = proxies(user_toxiproxy)
    assert set(left) == journaled and len(journaled) == 2, (left, journaled)
    assert any(isinstance(proxy, dict) and proxy["toxics"] for proxy in left.values()), "killed mid-partition"
    ToxiproxyControl(user_toxiproxy).create("users-own", "127.0.0.1:1")
    result = clean(runs)
    assert result.code == 0, result.stdout + result.stderr
    assert f"deleted its proxies {', '.join(sorted(journaled))} from the Toxiproxy at {user_toxiproxy}" in \
        result.stdout, result.stdout
    assert list(proxies(user_toxiproxy)) == ["users-own"], "only the run's own proxies are deleted"
    assert read_events(run_dir / "ledger.sqlite")[-1].data["status"] == "abandoned"
    assert "nothing to clean" in clean(runs).stdout, "a killed run is cleaned once"


def test_a_proxy_a_planted_ledger_names_on_the_users_toxiproxy_is_kept(tmp_path: Path, user_toxiproxy: str) -> None:
    """A proxy carries no marker object, so its name carries the run's marker: a name of the user's that
    merely begins with the run dir's name is not the run's."""
    run_dir = tmp_path / "runs" / "20260101-000000-000000-pg_lease-partition_worker_from_broker"
    ToxiproxyControl(user_toxiproxy).create(f"{run_dir.name}-users", "127.0.0.1:1")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_dir.mkdir(parents=True)
    ledger = Ledger(run_dir / "ledger.sqlite")
    ledger.append(events.run_start(target="pg_lease", pid=dead.pid, pid_create_time=0.0, host=socket.gethostname(),
                                   backend_kind="postgres"))
    ledger.append(Record(events.NETWORK_START, events.NETWORK, None, None,
                         {"kind": "external", "url": user_toxiproxy, "marker": "queue-chaos-0123456789abcdef"}))
    ledger.append(events.network_proxy("users", f"{run_dir.name}-users", user_toxiproxy))
    ledger.close()
    result = clean(tmp_path / "runs")
    assert result.code == 1, result.stdout + result.stderr
    assert f"its proxies {run_dir.name}-users on the Toxiproxy at {user_toxiproxy} are not touched" in result.stdout
    assert list(proxies(user_toxiproxy)) == [f"{run_dir.name}-users"]


def test_clean_keeps_the_proxies_it_cannot_delete_on_its_list(tmp_path: Path) -> None:
    """A user's Toxiproxy that is down: nothing is marked done, exit 1 saying what may be left."""
    runs = tmp_path / "runs"
    with subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"], cwd=REPO,
                          stdout=subprocess.PIPE, text=True) as server:
        assert server.stdout is not None
        url = _url(server.stdout.readline())
        try:
            with runner(runs, "pg_txlock", "partition_worker_from_broker", "-s", "mode=blackhole",
                        env={"TOXIPROXY_URL": url}) as proc:
                run_dir, _ = ledger_of(runs, partitioned, proc)
                kill(proc)
        finally:
            server.terminate()
            server.wait(10)
    wait_gone(run_dir)
    result = clean(runs)
    assert result.code == 1, result.stdout + result.stderr
    assert f"may be left on the Toxiproxy at {url}, which did not answer" in result.stdout, result.stdout
    assert read_events(run_dir / "ledger.sqlite")[-1].kind != "run.end", "not marked abandoned: a later clean retries"


def test_a_toxiproxy_binary_slow_to_listen_is_waited_for(tmp_path: Path,
                                                         slow_toxiproxy_on_path: dict[str, str]) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "partition_worker_from_broker", "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"), env=slow_toxiproxy_on_path)
    assert result.code == 0, result.stdout + result.stderr
    assert result.verdict["network"]["kind"] == "binary"
    assert not run_processes(result.dir)


def test_a_runner_killed_during_the_postgresql_boot_leaves_its_data_dir_to_clean(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with runner(runs, "pg_lease", "kill_after_effect_before_ack") as proc:
        run_dir, recorded = ledger_of(runs, booting("pgdata"), proc)
        kill(proc)
    prepared = next(e.data for e in recorded if e.kind == "backend.prepare")
    pgdata = Path(prepared["pgdata"])
    wait_gone(run_dir)
    assert not processes_mentioning(str(pgdata)) and not processes_mentioning(prepared["cluster_name"])
    assert not any(e.kind == "backend.start" for e in read_events(run_dir / "ledger.sqlite")), "killed mid-boot"
    assert pgdata.exists(), "a runner killed outright leaves the data dir it was making"
    result = clean(runs)
    assert result.code == 0 and f"removed its PostgreSQL data directory {pgdata}" in result.stdout, result.stdout
    assert not pgdata.exists()
    if pgdata.parent.name.startswith("queue-chaos-pgdata-"):
        assert not pgdata.parent.exists(), "the private directory holding it goes too"
    end = read_events(run_dir / "ledger.sqlite")[-1]
    assert end.data["status"] == "abandoned" and "nothing of it was left" not in end.data["detail"]
    report = chaos("report", str(run_dir), runs_dir=runs)
    assert report.code == 4 and "INCONCLUSIVE" in report.stdout, report.stdout + report.stderr


@pytest.mark.full  # slow: the full tier keeps the README's test command within minutes
def test_a_runner_killed_during_the_rabbitmq_boot_leaves_its_data_dir_to_clean(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with runner(runs, "rabbitmq_ack", "kill_after_effect_before_ack") as proc:
        run_dir, recorded = ledger_of(runs, booting("data_dir"), proc)
        prepared = next(e.data for e in recorded if e.kind == "backend.prepare")
        deadline = time.monotonic() + 30
        while not processes_marked({prepared["marker"]}) and time.monotonic() < deadline:
            time.sleep(0.01)  # the node is starting: its processes carry the marker
        kill(proc)
    data_dir = Path(prepared["data_dir"])
    wait_gone(run_dir)
    deadline = time.monotonic() + 15
    while processes_marked({prepared["marker"]}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(e.kind == "backend.start" for e in read_events(run_dir / "ledger.sqlite")), "killed mid-boot"
    assert data_dir.is_dir()
    result = clean(runs)
    assert result.code == 0 and f"removed its RabbitMQ data directory {data_dir}" in result.stdout, result.stdout
    assert not data_dir.exists()
    assert not processes_marked({prepared["marker"]}) and not run_processes(run_dir), \
        "the leftovers check knows a server killed mid-boot by the marker its backend.prepare journaled"


@pytest.fixture
def fresh_template_dir() -> Iterator[Path]:
    """A template location with no template yet (reachable by the server user, unlike pytest's tmp_path)."""
    where = Path(tempfile.mkdtemp(prefix="qc-template-test-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_runner_killed_while_building_the_template_leaves_it_to_clean(tmp_path: Path,
                                                                         fresh_template_dir: Path) -> None:
    runs, env = tmp_path / "runs", {"CHAOS_POSTGRES_TEMPLATE_DIR": str(fresh_template_dir)}

    def initdb_writing(_: list[Event]) -> bool:
        return any((build / "pgdata" / "PG_VERSION").exists() for build in fresh_template_dir.glob("*.tmp-*"))

    with runner(runs, "pg_lease", "kill_after_effect_before_ack", env=env) as proc:
        run_dir, _ = ledger_of(runs, initdb_writing, proc)
        kill(proc)
        (build,) = fresh_template_dir.glob("*.tmp-*")
    builder = run_pid(run_dir)  # the run's own process, which `chaos run` forked
    assert f".tmp-{builder}-" in build.name, "a build is named by its builder's pid"
    wait_gone(run_dir)
    # initdb's bootstrap postgres (single-user mode) runs every command initdb already wrote into its pipe
    # before it reads the end of it: seconds on an idle machine, over 15 s with both cores busy.
    deadline = time.monotonic() + 60
    while processes_mentioning(str(build)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_mentioning(str(build)), "initdb outlived its runner"
    assert build.exists() and not (build / "ok").exists(), "a half-built template was left"
    live_build = fresh_template_dir / f"{build.name.split('.tmp-')[0]}.tmp-{os.getpid()}-building"
    not_ours = fresh_template_dir / f"somebody-elses.tmp-{builder}-x"
    live_build.mkdir()
    not_ours.mkdir()
    result = clean(runs, env=env)
    assert result.code == 0, result.stdout + result.stderr
    assert f"removed a half-built PostgreSQL template {build} (its builder, pid {builder}, is gone)" in \
        result.stdout, result.stdout
    assert not build.exists()
    assert live_build.is_dir() and not_ours.is_dir(), "a build in progress, or a dir not named as ours, is kept"
