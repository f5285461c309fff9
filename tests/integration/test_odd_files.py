"""Disk and odd files: a full disk under the runs dir, a run dir `chaos report` cannot write to, a ledger
whose run.start row is missing or damaged, a port past 65535. Each is one paragraph and exit 2, never a
traceback, and nothing is left running."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from chaos.leftovers import run_processes
from tests.integration.runner import CliResult, chaos


def assert_one_paragraph(result: CliResult, *phrases: str) -> None:
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Exception in thread" not in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


@contextmanager
def mounted(target: Path, *options: str) -> Iterator[Path]:
    """A real filesystem mount (tmpfs, or a read-only bind), which needs root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a filesystem needs root")
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", *options, str(target)], check=True)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = chaos("run", "--target", "redis_basic", "--scenario", "no_faults", "--seed", "1", "--runs-dir", str(runs))
    assert result.code == 0, result.stdout + result.stderr
    return result.dir


def copy_of(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy)
    return copy


def test_a_full_disk_under_the_runs_dir_is_one_paragraph_and_leaves_nothing_running(tmp_path: Path) -> None:
    with mounted(tmp_path / "small", "-t", "tmpfs", "-o", "size=300k", "tmpfs") as small:
        result = chaos("run", "--target", "redis_basic", "--scenario", "many_workers_no_faults", "--seed", "1",
                       "--runs-dir", str(small / "runs"))
        assert_one_paragraph(result, "Cannot write the run's ledger", "disk is full", "--runs-dir")
        assert result.stderr.count("Cannot write") == 1, "said once, by the controller"
        assert not run_processes(result.dir)


def test_report_on_a_read_only_run_dir_says_where_it_cannot_write(finished_run: Path, tmp_path: Path) -> None:
    source = copy_of(finished_run, tmp_path / "source")
    with mounted(tmp_path / "ro", "--bind", "-o", "ro", str(source)) as read_only:
        with pytest.raises(OSError):
            (read_only / "probe").write_text("x")  # the mount is read-only, even for root
        result = chaos("report", str(read_only), runs_dir=tmp_path)
    assert_one_paragraph(result, f"Cannot write the reports into {read_only / 'regenerated'}", "the verdict was PASS")


@pytest.mark.parametrize(("sql", "phrase"), [
    ("DELETE FROM events WHERE kind = 'run.start'", "has no run.start row"),
    ("""UPDATE events SET data = '{"target": 5, "contract": 7}' WHERE kind = 'run.start'""",
     "its run.start row (seq 1) is damaged"),
    ("UPDATE events SET data = '[1, 2]' WHERE kind = 'run.start'", "its run.start row (seq 1) is damaged"),
    ("""UPDATE events SET data = json_set(data, '$.contract', json('{"lease_s": -1}')) WHERE kind = 'run.start'""",
     "run.start's contract"),
])
def test_report_on_a_ledger_whose_run_start_is_missing_or_damaged(finished_run: Path, tmp_path: Path, sql: str,
                                                                   phrase: str) -> None:
    copy = copy_of(finished_run, tmp_path)
    with closing(sqlite3.connect(copy / "ledger.sqlite")) as db:
        assert db.execute(sql).rowcount == 1
        db.commit()
    result = chaos("report", str(copy), runs_dir=tmp_path)
    assert_one_paragraph(result, phrase)
    assert not (copy / "regenerated").exists()


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_toxiproxy_serve_on_a_port_that_is_no_port_is_a_usage_error(tmp_path: Path, port: str) -> None:
    result = chaos("toxiproxy", "serve", "--port", port, runs_dir=tmp_path, timeout=30)
    assert_one_paragraph(result, "is not a TCP port: expected 0 to 65535")
