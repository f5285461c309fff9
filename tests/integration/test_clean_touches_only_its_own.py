"""A run dir can come from anywhere (a restored CI cache, an artifact, a shared volume, a directory planted
in a suite's --out), and `chaos clean`, like the start of every run in that runs dir, acts on what its
ledger says. Nothing it names is acted on unless the thing itself proves it was made for that run: a data
dir in the run dir beside the owner file with the run's marker, a process carrying the marker, a namespace
of the exact form named for the run dir holding a marker object. What does not is reported, with its
path, and left alone; and clean finds every run dir under the path it is given."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from chaos import events
from chaos.backends.base import BackendSettings
from chaos.backends.redis.local import LocalRedis
from chaos.events import Record
from chaos.ledger import Ledger, read_events
from chaos.leftovers import processes_marked, run_processes
from tests.integration.runner import REPO, CliResult, chaos
from tests.integration.test_interrupt import wait_gone
from tests.integration.test_killed_runner_leaves_nothing import clean, kill, ledger_of, runner

RUN = "20260101-000000-000000-redis_basic-no_faults"  # a run dir's name as the suite gives it
MARKER = "queue-chaos-0123456789abcdef"  # of the form the suite's markers take
USERS_KEYS = {"chaos:important": "payroll", "chaosmonkey:cfg": "on"}


def plant(run_dir: Path, backend_kind: str, *made: Record, host: str | None = None) -> None:
    """A run dir as a runner killed mid-run leaves it: a start whose runner is gone, what its backend
    journaled, no end."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(run_dir / "ledger.sqlite")
    ledger.append(events.run_start(target="redis_basic", scenario="no_faults", pid=dead.pid, pid_create_time=0.0,
                                   host=host or socket.gethostname(), backend_kind=backend_kind))
    for record in made:
        ledger.append(record)
    ledger.close()


@contextmanager
def sleeping_in(directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process of the user's that works in `directory`."""
    sleep = subprocess.Popen(["sleep", "300"], cwd=directory)
    try:
        yield sleep
    finally:
        sleep.kill()
        sleep.wait()


@contextmanager
def users_redis(tmp_path: Path) -> Iterator[tuple[str, redis.Redis]]:
    """A Redis server of the user's, holding keys of the user's that begin as the suite's do."""
    with LocalRedis.open(BackendSettings(tmp_path / "users-redis", "users")) as server:
        client = redis.Redis.from_url(server.endpoint.url, decode_responses=True, socket_timeout=5)
        try:
            client.mset(USERS_KEYS)
            yield server.endpoint.url, client
        finally:
            client.close()


def last_kind(run_dir: Path) -> str:
    return read_events(run_dir / "ledger.sqlite")[-1].kind


@pytest.mark.parametrize("where", ["a_dir_of_the_users", "the_run_dir_unmarked", "the_run_dir_marked"])
def test_clean_never_kills_a_process_working_in_the_data_dir_a_planted_ledger_names(tmp_path: Path,
                                                                                     where: str) -> None:
    runs = tmp_path / "runs"
    data = tmp_path / "mine" if where == "a_dir_of_the_users" else runs / RUN / "redis" / "data"
    data.mkdir(parents=True)
    if where == "the_run_dir_marked":  # the data dir proves it is the run's, but the process carries no marker
        (data.parent / "queue-chaos-owner").write_text(MARKER)
    plant(runs / RUN, "redis", events.backend_prepare(provider="local", data_dir=str(data), marker=MARKER))
    with sleeping_in(data) as sleep:
        result = clean(runs)
        assert sleep.poll() is None, f"clean killed a process that only works in {data}: {result.stdout}"
    if where == "the_run_dir_marked":
        assert result.code == 0 and f"removed its Redis data directory {data}" in result.stdout, result.stdout
        assert not data.exists()
        return
    assert result.code == 1, result.stdout + result.stderr
    assert f"its Redis data directory {data} is not touched: " in result.stdout, result.stdout
    assert data.is_dir() and last_kind(runs / RUN) == "backend.prepare", "left alone, and not marked cleaned"


def test_a_runs_start_never_kills_a_process_working_in_the_data_dir_a_planted_ledger_names(tmp_path: Path) -> None:
    runs, mine = tmp_path / "runs", tmp_path / "mine"
    mine.mkdir()
    plant(runs / RUN, "redis", events.backend_prepare(provider="local", data_dir=str(mine), marker=MARKER))
    with sleeping_in(mine) as sleep:
        result = chaos("run", "--target", "redis_basic", "--scenario", "no_faults", "--seed", "1",
                       "--runs-dir", str(runs))
        assert sleep.poll() is None, "the run's start killed a process that only works in the dir a ledger names"
    assert result.code == 0 and result.dir.name != RUN, result.stdout + result.stderr
    cleaned = read_events(result.dir / "ledger.sqlite")[0].data["cleaned"]
    assert any(f"its Redis data directory {mine} is not touched" in line for line in cleaned), cleaned


@pytest.mark.parametrize("namespace", ["chaos", f"chaos:{RUN}:"])  # a prefix; the run's form, unmarked
@pytest.mark.parametrize("how", ["clean", "run"])
def test_a_planted_namespace_never_deletes_the_users_keys(tmp_path: Path, namespace: str, how: str) -> None:
    runs = tmp_path / "runs"
    with users_redis(tmp_path) as (url, client):
        client.set(f"{namespace}queue", "the user's")
        plant(runs / RUN, "redis", events.backend_prepare(provider="external", url=url, namespace=namespace,
                                                          marker=MARKER))
        if how == "clean":
            result = chaos("clean", "--runs-dir", str(runs), "--backend-url", url)
            assert result.code == 1, result.stdout + result.stderr
            said = result.stdout
        else:  # any ordinary run in that runs dir, even on a server of its own, while CHAOS_REDIS_URL is exported
            result = chaos("run", "--target", "redis_basic", "--scenario", "no_faults", "--seed", "1",
                           "--runs-dir", str(runs), env={"CHAOS_REDIS_URL": url})
            assert result.code == 0, result.stdout + result.stderr
            said = "\n".join(read_events(result.dir / "ledger.sqlite")[0].data["cleaned"])
        assert sorted(client.keys("*")) == sorted([*USERS_KEYS, f"{namespace}queue"])
    assert f"its Redis namespace {namespace} on {url} is not touched: " in said, said
    assert last_kind(runs / RUN) == "backend.prepare"


def test_a_killed_external_runs_namespace_is_removed_and_nothing_else(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with users_redis(tmp_path) as (url, client):
        with runner(runs, "redis_basic", "kill_after_effect_before_ack", "--backend-url", url) as proc:
            run_dir, recorded = ledger_of(runs, lambda done: any(e.kind == "probe.claim" for e in done), proc)
            kill(proc)
        wait_gone(run_dir)
        namespace = next(e.data["namespace"] for e in recorded if e.kind == "backend.start")
        assert client.keys(f"{namespace}*"), "the killed run left its keys"
        result = clean(runs, env={"CHAOS_REDIS_URL": url})
        assert result.code == 0 and f"removed its Redis namespace {namespace} on {url}" in result.stdout, \
            result.stdout + result.stderr
        assert sorted(client.keys("*")) == sorted(USERS_KEYS)


def test_clean_finds_a_killed_run_nested_in_a_suites_out(tmp_path: Path) -> None:
    """A suite's runs are in <out>/cells/<key>/runs/: `chaos clean --runs-dir <out>` looks there too."""
    out = tmp_path / "out"
    runs = out / "cells" / "pg_lease-kill_after_effect_before_ack-seed1" / "runs"
    with runner(runs, "pg_lease", "kill_after_effect_before_ack") as proc:
        run_dir, recorded = ledger_of(runs, lambda done: any(e.kind == "probe.claim" for e in done), proc)
        kill(proc)
    pgdata = Path(next(e.data["pgdata"] for e in recorded if e.kind == "backend.start"))
    wait_gone(run_dir)
    assert pgdata.is_dir(), "a runner killed outright leaves its data"
    result = clean(out)
    assert result.code == 0, result.stdout + result.stderr
    assert f"{run_dir}: removed its PostgreSQL data directory {pgdata}" in result.stdout, result.stdout
    assert not pgdata.exists() and last_kind(run_dir) == "run.end"


@pytest.mark.full  # slow: a RabbitMQ node boots in seconds
def test_clean_removes_the_shared_rabbitmq_node_a_killed_suite_left_in_its_out(tmp_path: Path) -> None:
    suite = tmp_path / "chaos.toml"
    suite.write_text('[[cell]]\ntarget = "rabbitmq_ack"\nscenario = "no_faults"\n')
    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "chaos", "suite", str(suite), "--out", str(out)], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not list(out.glob("cells/*/runs/*/ledger.sqlite")):
            time.sleep(0.1)  # a cell's run started: the node serves it
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(10)
    (node,) = out.glob("servers/*/ledger.sqlite")
    started = next(e.data for e in read_events(node) if e.kind == "backend.start")
    data = Path(started["data_dir"])
    for run_dir in out.glob("cells/*/runs/*"):
        wait_gone(run_dir)
    assert data.is_dir(), "a suite killed outright leaves its shared node's data"
    result = clean(out)
    assert result.code == 0, result.stdout + result.stderr
    assert f"removed its RabbitMQ data directory {data}" in result.stdout, result.stdout
    assert not data.exists() and not processes_marked({started["marker"]})
    assert not run_processes(node.parent)


def test_a_runs_namespace_on_a_shared_node_clean_removed_went_with_the_node(tmp_path: Path) -> None:
    """A suite killed while a cell made its vhost on the shared node: the cell's ledger names only the vhost
    it was about to make, on a URL no `--backend-url` gives. The node is cleaned first, and the vhost went
    with it: clean says so and exits 0 (it named the vhost as possibly left, exit 1, before)."""
    out = tmp_path / "out"
    node = out / "servers" / "20260101-000000-000000-rabbitmq-1"
    data = node / "rabbitmq" / "data"
    (node / "rabbitmq").mkdir(parents=True)
    (node / "rabbitmq" / "queue-chaos-owner").write_text(MARKER + "\n")
    data.mkdir()
    plant(node, "rabbitmq", events.backend_prepare(provider="local", data_dir=str(data), marker=MARKER),
          events.backend_start(provider="local", data_dir=str(data), marker=MARKER, port=45672,
                               ports={"amqp": 45672, "management": 45673}))
    cell = out / "cells" / "rabbitmq_ack-no_faults-seed1-0123abcd" / "runs" / RUN.replace("redis_basic", "rabbitmq_ack")
    vhost = f"chaos-{cell.name}"
    plant(cell, "rabbitmq", events.backend_prepare(provider="external", url="amqp://guest:***@127.0.0.1:45672/",
                                                   namespace=vhost, marker="queue-chaos-fedcba9876543210"))
    result = clean(out)
    assert result.code == 0, result.stdout + result.stderr
    assert f"removed its RabbitMQ data directory {data}" in result.stdout, result.stdout
    assert "went with the server on amqp://guest:***@127.0.0.1:45672/" in result.stdout, result.stdout
    assert not data.exists()


def test_a_run_of_another_host_is_reported_with_its_path_and_left(tmp_path: Path) -> None:
    """A runs dir restored from another machine's CI cache: that host's runner cannot be checked here."""
    runs = tmp_path / "runs"
    theirs = f"/home/runner/work/app/runs/{RUN}/redis/data"
    copy = runs / RUN / "redis" / "data"
    copy.mkdir(parents=True)
    (copy / "appendonly.aof").write_bytes(b"x" * 1_000_000)
    plant(runs / RUN, "redis", events.backend_prepare(provider="local", data_dir=theirs, marker=MARKER),
          host="ci-runner-7")
    result: CliResult = clean(runs)
    assert result.code == 1, result.stdout + result.stderr
    assert f"{runs / RUN}: not touched, since it is a run of host 'ci-runner-7'" in result.stdout, result.stdout
    assert f"its data directory {theirs}" in result.stdout
    assert copy.is_dir() and last_kind(runs / RUN) == "backend.prepare"
