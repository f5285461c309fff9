"""The NATS providers against real nats-servers: a crash keeps what the stream's storage keeps, a runner
SIGKILLed mid-run leaves nothing of its server after `chaos clean`, an external run keeps to its own
streams and deletes them (or `chaos clean` does, after its runner was killed), and a missing nats-server is
a one-paragraph error naming its Debian package."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.js.api import StreamConfig

from chaos.backends.base import BackendSettings
from chaos.backends.local_server import server_processes
from chaos.backends.nats.control import NatsQueueControl
from chaos.backends.nats.external import ExternalNats
from chaos.backends.nats.local import LocalNats
from chaos.contract import Contract
from chaos.events import Event, Record
from chaos.queue_model import Job
from chaos.worker.nats import JetStream
from tests.integration.runner import chaos
from tests.integration.test_killed_runner_leaves_nothing import clean, kill, ledger_of, runner

pytestmark = pytest.mark.full

CONTRACT = Contract(lease_s=1.0, max_attempts=3, recovery_bound_s=3.0)
# Loaded by the runner's interpreter before anything else: nats-server is nowhere to be found.
NO_NATS_SERVER = """import shutil
_which = shutil.which
shutil.which = lambda name, *args, **kwargs: None if name == "nats-server" else _which(name, *args, **kwargs)
"""


def streams(url: str) -> list[str]:
    client = JetStream(url)
    try:
        return sorted(info.config.name or "" for info in client.run(client.js.streams_info(), 5.0))
    finally:
        client.close()


@pytest.mark.parametrize(("storage", "state"), [("file", "pending"), ("memory", "absent")])
def test_a_nats_crash_keeps_a_file_stream_and_loses_a_memory_one(tmp_path: Path, storage: str, state: str) -> None:
    with LocalNats.open(BackendSettings(tmp_path, "run-1")) as server:
        control = NatsQueueControl(server, {"storage": storage}, CONTRACT)
        try:
            control.setup()
            control.enqueue([Job("job-0001"), Job("job-0002")])
            old_pid, port = server.pid, server.port
            server.restart("immediate")  # SIGKILL: no shutdown
            assert server.pid != old_pid and server.port == port
            assert [(s.job, s.state) for s in control.snapshot()] == [("job-0001", state), ("job-0002", state)]
        finally:
            control.close()


def test_a_runner_killed_mid_run_leaves_no_nats_server_after_clean(tmp_path: Path) -> None:
    runs = tmp_path / "runs"

    def working(recorded: list[Event]) -> bool:
        return any(e.kind == "probe.claim" for e in recorded)

    with runner(runs, "nats_jetstream", "lease_shorter_than_handler") as proc:
        run_dir, recorded = ledger_of(runs, working, proc)
        started = next(e for e in recorded if e.kind == "backend.start")
        kill(proc)
    marker, data_dir = str(started.data["marker"]), Path(started.data["data_dir"])
    result = clean(runs)
    assert result.code == 0, result.stdout + result.stderr
    assert f"removed its NATS data directory {data_dir}" in result.stdout
    assert server_processes(marker) == [] and not data_dir.exists()
    assert run_dir.is_dir()


def test_an_external_nats_run_keeps_to_its_own_streams_and_deletes_them(tmp_path: Path) -> None:
    with LocalNats.open(BackendSettings(tmp_path / "users-server", "users")) as server:
        client = JetStream(server.endpoint.url)
        try:
            client.run(client.js.add_stream(StreamConfig(name="users", subjects=["users.>"])), 5.0)
        finally:
            client.close()
        result = chaos("run", "--target", "nats_jetstream", "--scenario", "no_faults", "--backend", "external",
                       "--runs-dir", str(tmp_path / "runs"), env={"CHAOS_NATS_URL": server.endpoint.url})
        assert result.code == 0, result.stdout + result.stderr
        assert result.verdict["counts"]["completed"] == result.verdict["counts"]["enqueued"] > 0
        assert streams(server.endpoint.url) == ["users"]


def test_clean_deletes_the_streams_of_an_external_run_whose_runner_was_killed(tmp_path: Path) -> None:
    """What `chaos clean --backend-url` does for it: the ledger's backend.prepare names the run's stream."""
    with LocalNats.open(BackendSettings(tmp_path / "users-server", "users")) as server:
        started: list[Record] = []
        external = ExternalNats.open(BackendSettings(Path("/nonexistent"), "run-4", server.endpoint.url,
                                                     on_event=started.append))
        control = NatsQueueControl(external, {}, CONTRACT)
        try:
            control.setup()
            control.enqueue([Job("job-0001")])
        finally:
            control.close()
        assert streams(server.endpoint.url) == ["chaos-run-4", "chaos-run-4-dead"]
        done, said = ExternalNats.clean_after_killed_run(started[0].data, tmp_path / "run-4",
                                                         server.endpoint.url)
        assert done and said == f"removed its NATS namespace chaos-run-4 on {server.endpoint.url}"
        assert streams(server.endpoint.url) == []


def test_a_missing_nats_server_names_its_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NATS_SERVER)
    result = chaos("run", "--target", "nats_jetstream", "--scenario", "no_faults", "--runs-dir",
                   str(tmp_path / "runs"), env={"PYTHONPATH": str(site)})
    assert result.code == 2, result.stdout + result.stderr
    assert "apt-get install nats-server" in result.stderr and "Traceback" not in result.stderr
