"""Network faults through a real Toxiproxy: a run on an external server (TOXIPROXY_URL, here a `chaos
toxiproxy serve` process) partitions only its victim, records which server it used, and leaves no proxy,
disabled state or toxic behind, also when it is interrupted mid-partition."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.leftovers import run_processes
from tests.integration.runner import REPO, chaos
from tests.integration.test_interrupt import wait_for_event


@pytest.fixture
def toxiproxy_url() -> Iterator[str]:
    server = subprocess.Popen([sys.executable, "-m", "chaos", "toxiproxy", "serve", "--port", "0"], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        found = re.search(r"(http://[\d.]+:\d+)", server.stdout.readline())
        assert found is not None
        yield found.group(1)
    finally:
        server.terminate()
        server.wait(10)


def proxies(url: str) -> dict[str, object]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/proxies")
    found: dict[str, object] = json.loads(conn.getresponse().read())
    return found


def test_a_partition_on_an_external_toxiproxy_is_recorded_and_leaves_nothing(tmp_path: Path,
                                                                              toxiproxy_url: str) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "partition_worker_from_broker", "-s",
                   "mode=blackhole", "--seed", "1", "--runs-dir", str(tmp_path), env={"TOXIPROXY_URL": toxiproxy_url})
    assert result.code == 0, result.stdout + result.stderr
    verdict = result.verdict
    assert verdict["network"] == {"kind": "external", "url": toxiproxy_url, "marker": verdict["network"]["marker"]}
    assert verdict["network"]["marker"].startswith("queue-chaos-"), "its proxies' names carry it"
    (fault,) = verdict["faults"]
    assert fault["kind"] == "partition" and fault["exercised"], fault
    assert "-s mode=blackhole" in verdict["reproduce"]
    assert proxies(toxiproxy_url) == {}, "the run deletes its proxies (and with them toxics and disabled state)"


def test_the_embedded_server_is_used_without_toxiproxy_url_and_proves_the_cut(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_txlock", "--scenario", "partition_worker_from_broker", "--seed", "1",
                   "--runs-dir", str(tmp_path), env={"TOXIPROXY_URL": ""})
    assert result.code == 0, result.stdout + result.stderr
    assert result.verdict["network"]["kind"] == "embedded"
    (fault,) = result.verdict["faults"]
    assert "connection(s) closed" in fault["why"], fault


def test_ctrl_c_during_a_partition_heals_it_and_deletes_the_proxies(tmp_path: Path, toxiproxy_url: str) -> None:
    # pg_txlock under a black hole: nobody can take the job, so the partition lasts long enough to interrupt
    proc = subprocess.Popen([sys.executable, "-m", "chaos", "run", "--target", "pg_txlock", "--scenario",
                             "partition_worker_from_broker", "-s", "mode=blackhole", "--seed", "1", "--runs-dir",
                             str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TOXIPROXY_URL": toxiproxy_url})
    try:
        run_dir = wait_for_event(tmp_path, "fault.applied")
        assert any(p for p in proxies(toxiproxy_url)), "the run's proxies exist while it runs"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert proxies(toxiproxy_url) == {}
    assert not run_processes(run_dir)


def test_an_unknown_scenario_param_is_a_usage_error(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "partition_worker_from_broker", "-s", "mode=sever",
                   "--runs-dir", str(tmp_path))
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "mode='sever' is not one of disable, blackhole" in result.stderr
