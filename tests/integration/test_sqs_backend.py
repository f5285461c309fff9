"""The SQS providers against real moto servers: a local run's verdict names moto as an emulator, a
scenario that needs a restart is refused (moto keeps nothing through one), a runner SIGKILLed mid-run
leaves nothing that `chaos clean` does not remove, and an external run keeps to its own queues and deletes
them at its end."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from chaos.backends.base import BackendSettings
from chaos.backends.local_server import server_processes
from chaos.backends.sqs.external import ExternalSqs
from chaos.backends.sqs.local import LocalSqs
from chaos.events import Record
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from chaos.worker.sqs import connect, queue_names
from tests.integration.runner import chaos
from tests.integration.test_interrupt import wait_gone
from tests.integration.test_killed_runner_leaves_nothing import clean, kill, ledger_of, runner

pytestmark = pytest.mark.full

MOTO = f"moto {importlib.metadata.version('moto')}"


def test_a_local_runs_verdict_names_moto_as_an_emulator(tmp_path: Path) -> None:
    result = chaos("run", "--target", "sqs_visibility", "--scenario", "no_faults", "--seed", "1",
                   "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    assert any(MOTO in note and "emulator" in note for note in result.verdict["notes"]), result.verdict["notes"]
    assert MOTO in result.stdout
    started = [e.data for e in read_events(result.dir / "ledger.sqlite") if e.kind == "backend.start"]
    assert [s["emulator"] for s in started] == [MOTO]
    assert not run_processes(result.dir)


def test_a_scenario_that_restarts_the_backend_is_refused_on_moto(tmp_path: Path) -> None:
    result = chaos("run", "--target", "sqs_visibility", "--scenario", "restart_backend_during_recovery",
                   "--seed", "1", "--runs-dir", str(tmp_path))
    assert result.code == 2, result.stdout + result.stderr
    assert "needs the backend capability restart, which the sqs local backend does not offer" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_moto_server_is_a_config_error(tmp_path: Path) -> None:
    """An interpreter without moto's server: a `moto` package shadowing the real one has no `moto.server`."""
    shim = tmp_path / "shim"
    (shim / "moto").mkdir(parents=True)
    (shim / "moto" / "__init__.py").write_text("")
    result = chaos("run", "--target", "sqs_visibility", "--scenario", "no_faults", "--seed", "1",
                   "--runs-dir", str(tmp_path / "runs"), env={"PYTHONPATH": str(shim)})
    assert result.code == 2, result.stdout + result.stderr
    assert "pip install 'moto[server]==5.2.6'" in result.stderr
    assert "Traceback" not in result.stderr
    if result.dir is not None:
        assert not run_processes(result.dir)


def test_a_killed_runs_moto_server_is_swept_by_its_marker(tmp_path: Path) -> None:
    """What `chaos clean` does with a run's backend.prepare alone: here the server outlives the caller's
    record of it (its parent, this test, is alive)."""
    started: list[Record] = []
    server = LocalSqs.open(BackendSettings(tmp_path / "sqs", "run-1", on_event=started.append))
    try:
        assert server_processes(server.marker)
        done, said = LocalSqs.clean_after_killed_run(started[0].data, tmp_path, None)
        assert done and "removed" in said
        assert server_processes(server.marker) == []
        assert not server.data_dir.exists()
    finally:
        server.close()


def test_a_runner_killed_mid_run_leaves_nothing_after_chaos_clean(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with runner(runs, "sqs_visibility", "lease_shorter_than_handler") as proc:
        run_dir, recorded = ledger_of(runs, lambda events: any(e.kind == "probe.claim" for e in events), proc)
        marker = next(e.data["marker"] for e in recorded if e.kind == "backend.start")
        kill(proc)
    wait_gone(run_dir)
    result = clean(runs)
    assert result.code == 0, result.stdout + result.stderr
    assert not run_processes(run_dir)
    assert server_processes(marker) == []
    assert not (run_dir / "sqs" / "data").exists()


def test_an_external_run_keeps_to_its_own_queues_and_deletes_them(tmp_path: Path) -> None:
    with LocalSqs.open(BackendSettings(tmp_path / "moto", "users-server")) as server:
        client = connect(server.endpoint.url)
        client.create_queue(QueueName="users-queue")
        result = chaos("run", "--target", "sqs_visibility", "--scenario", "poison_job_dead_letters", "--seed", "1",
                       "--runs-dir", str(tmp_path / "runs"), "--backend-url", server.endpoint.url)
        assert result.code == 0, result.stdout + result.stderr
        made = [e.data["namespace"] for e in read_events(result.dir / "ledger.sqlite") if e.kind == "backend.start"]
        assert made and made[0].startswith("chaos-")
        queues = [url.rsplit("/", 1)[-1] for url in client.list_queues().get("QueueUrls", [])]
        assert queues == ["users-queue"]
        client.close()


def test_a_killed_external_runs_queues_are_deleted_by_clean_from_its_journal(tmp_path: Path) -> None:
    """What `chaos clean --backend-url` has of a runner killed before its backend.start: the prepare alone."""
    with LocalSqs.open(BackendSettings(tmp_path / "moto", "users-server")) as server:
        started: list[Record] = []
        external = ExternalSqs.open(BackendSettings(Path("/nonexistent"), "run-3", server.endpoint.url,
                                                    on_event=started.append))
        client = connect(server.endpoint.url)
        client.create_queue(QueueName="users-queue")
        listed = sorted(url.rsplit("/", 1)[-1] for url in client.list_queues()["QueueUrls"])
        assert listed == sorted([*queue_names("chaos-run-3"), "users-queue"])
        done, said = ExternalSqs.clean_after_killed_run(started[0].data, tmp_path / "run-3",
                                                        server.endpoint.url)
        assert done and said.startswith("removed its SQS namespace chaos-run-3 on http://chaos:***@"), said
        assert [url.rsplit("/", 1)[-1] for url in client.list_queues()["QueueUrls"]] == ["users-queue"]
        external.close()  # its queues are gone already: nothing to delete, no error
        client.close()
