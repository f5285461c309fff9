"""Shared fixtures: a real ledger and sink, and a check that no test leaves a process behind.

Every test is marked by where it lives: `unit` (tests/unit: pure and fast, no server and no worker, at
most a fresh interpreter to see what an import loads; `pytest -m unit` runs them alone in seconds) or
`integration` (everything else: real servers, processes, sockets, tools). The `full` tier (the whole
known-answer suite, and the CI templates run shard by shard) is left out of the README's test command to
keep it within minutes; `.ci/run` runs it right after (`-m full`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from chaos.ledger import Ledger
from chaos.runtime.sink import Sink

UNIT_DIR = Path(__file__).parent / "unit"
# Long files of the full tier besides those marked in themselves: the matrix, the CI templates, and (to keep
# the README's command within its five minutes: 381 s in a clean-clone CI run with them) the end-to-end runs
# of the pytest plugin, the observers, suites, the scaffold of every kind, Sidekiq, the RabbitMQ node, the
# interrupted and killed runners, the installed wheel, runs that user code tries to keep going, and the
# target check's broken little targets (each a three-job check run), and the docs' example outputs, run again.
FULL_TIER = ("test_matrix.py", "test_ci_templates.py", "test_pytest_plugin.py", "test_observers.py",
             "test_broker_backends.py", "test_suite_cli.py", "test_target_authoring.py", "test_sidekiq_worker.py",
             "test_interrupt.py", "test_killed_runner_leaves_nothing.py", "test_installed_wheel.py",
             "test_run_ends_whatever_user_code_does.py", "test_target_check_paths.py", "test_plugins.py",
             "test_doc_examples.py")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "unit: pure, fast tests of the checker and the code's structure (no server)")
    config.addinivalue_line("markers", "integration: real servers, worker processes, sockets or tools")
    config.addinivalue_line("markers", "full: the long tier .ci/run runs after the README's test command")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.unit if item.path.is_relative_to(UNIT_DIR) else pytest.mark.integration)
        if item.path.name in FULL_TIER:
            item.add_marker(pytest.mark.full)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger(tmp_path / "ledger.sqlite")
    yield led
    led.close()


@pytest.fixture
def sink(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sink]:
    """A running sink, with this process's environment pointing chaos.probe at it."""
    with Sink(ledger) as running:
        monkeypatch.setenv("CHAOS_SINK_URL", running.url)
        monkeypatch.setenv("CHAOS_RUN_TOKEN", running.token)
        monkeypatch.setenv("CHAOS_WORKER_ID", "w-test")
        yield running


def descendants() -> list[psutil.Process]:
    alive = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


def describe(proc: psutil.Process) -> str:
    try:
        return f"{proc.pid} {' '.join(proc.cmdline())}"
    except psutil.Error:
        return f"{proc.pid} (exited)"


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Cleanup is part of correctness: every test must end with no child process of ours alive.

    A process already dying (killed, not yet reaped by its parent) gets a moment to finish.
    """
    before = {p.pid for p in descendants()}
    yield
    left = [p for p in descendants() if p.pid not in before]
    _, still = psutil.wait_procs(left, timeout=2)
    still = [p for p in still if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    for proc in still:
        proc.kill()
    assert not still, f"processes left behind: {[describe(p) for p in still]}"
