"""A target's `[worker] python` names the interpreter its worker runs under (a library that needs 3.12
beside a suite on 3.11): a version found as pyenv or PATH has it, or a path; one that is not here is a
usage error (exit 2) saying how to install it, before anything starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chaos import ConfigError
from chaos.pythons import ask, find
from chaos.target import load_target

REPO = Path(__file__).resolve().parents[2]
BASIC = REPO / "targets" / "redis_basic"


def target_folder(tmp_path: Path, worker: str) -> Path:
    """redis_basic's control and worker, under a target.toml whose worker setting is `worker`."""
    folder = tmp_path / "py_target"
    folder.mkdir()
    for name in ("control.py", "worker.py"):
        shutil.copy(BASIC / name, folder / name)
    (folder / "target.toml").write_text(f'backend = "redis"\n{worker}\n[contract]\ndelivery = "at-least-once"\n'
                                        'recovery_bound_s = 2.0\nstale_ack = "rejected"\noverlap = "never"\n'
                                        'max_attempts = 3\n')
    return folder


def test_a_version_names_an_interpreter_that_is_that_version(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, '[worker]\ncommand = ["{python}", "{target_dir}/worker.py"]\npython = "3.12"')
    target = load_target(folder)
    target.check_programs()
    argv = target.command(target.worker, "w1", "redis://x", "ns")
    found = ask(Path(argv[0]))
    assert found is not None and found.minor == "3.12", argv
    assert argv[1:] == [str(folder.resolve() / "worker.py")]


def test_the_list_form_keeps_the_suites_own_interpreter(tmp_path: Path) -> None:
    target = load_target(target_folder(tmp_path, 'worker = ["{python}", "{target_dir}/worker.py"]'))
    assert target.python is None
    assert target.command(target.worker, "w1", "", "")[0] == sys.executable


def test_a_path_is_taken_relative_to_the_target_folder(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, '[worker]\ncommand = ["{python}", "worker.py"]\npython = "venv/bin/python"')
    (folder / "venv" / "bin").mkdir(parents=True)
    (folder / "venv" / "bin" / "python").symlink_to(sys.executable)
    target = load_target(folder)
    assert target.command(target.worker, "w1", "", "")[0] == str(folder.resolve() / "venv" / "bin" / "python")


def test_a_missing_version_says_how_to_install_it(tmp_path: Path) -> None:
    target = load_target(target_folder(tmp_path, '[worker]\ncommand = ["{python}", "worker.py"]\npython = "3.99"'))
    with pytest.raises(ConfigError, match=r'python = "3.99" names Python 3.99, which is not on this machine') as err:
        target.check_programs()
    assert "pyenv install 3.99" in str(err.value) and "[worker]" in str(err.value)


def test_a_path_that_is_no_python_is_refused(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, '[worker]\ncommand = ["{python}", "worker.py"]\npython = "worker.py"')
    with pytest.raises(ConfigError, match="does not start as a Python interpreter"):
        load_target(folder).check_programs()


@pytest.mark.parametrize("table", ['python = "3.12"', 'command = ["x"]\npython = 3.12',
                                   'command = ["x"]\npythn = "3.12"'])
def test_a_worker_table_without_its_command_or_with_a_stray_key_is_refused(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match=r"\[worker\]"):
        load_target(target_folder(tmp_path, f"[worker]\n{table}"))


def test_a_worker_in_a_container_cannot_name_a_host_python(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, 'image = "queue-chaos/python"\n[worker]\ncommand = ["{python}", "worker.py"]\n'
                                     'python = "3.12"')
    with pytest.raises(ConfigError, match="runs the image's Python"):
        load_target(folder).check_programs()


def test_a_run_whose_python_is_missing_exits_2_before_it_starts_anything(tmp_path: Path) -> None:
    folder = target_folder(tmp_path, '[worker]\ncommand = ["{python}", "worker.py"]\npython = "3.99"')
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "chaos", "run", "--target", str(folder), "--scenario", "no_faults",
                           "--runs-dir", str(runs)], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done.stderr
    assert "names Python 3.99, which is not on this machine" in done.stderr and "pyenv install 3.99" in done.stderr
    assert not runs.exists() or not any(runs.iterdir()), "nothing started, so no run folder"


def test_chaos_pythons_prints_the_path_or_exits_2(tmp_path: Path) -> None:
    assert find(f"{sys.version_info.major}.{sys.version_info.minor}", tmp_path, "here").version.startswith(
        f"{sys.version_info.major}.{sys.version_info.minor}.")
    missing = subprocess.run([sys.executable, "-m", "chaos.pythons", "3.99"], capture_output=True, text=True,
                             timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert missing.returncode == 2 and "pyenv install 3.99" in missing.stderr
