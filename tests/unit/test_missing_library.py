"""A target whose library is not installed is the user's setup to fix, not a bug of the suite: the run is
refused (exit 2) before anything starts, naming the pip install that fixes it, and `chaos doctor` shows
the bundled adapters' libraries that are missing. The CLI runs in a fresh interpreter where the library
does not import: a finder first on sys.meta_path refuses it, as an interpreter without it would."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chaos import ConfigError
from chaos.target import load_target

REPO = Path(__file__).resolve().parents[2]
# `python -c WITHOUT <packages> -- <chaos arguments>`: the CLI, with those top-level packages unimportable.
WITHOUT = """
import runpy, sys
blocked = set(sys.argv[1:sys.argv.index("--")])
class Without:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Without())
sys.argv = ["chaos", *sys.argv[sys.argv.index("--") + 1:]]
runpy.run_module("chaos", run_name="__main__")
"""


def chaos_without(packages: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT, *packages, "--", *args], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_bundled_adapter_without_its_library_names_its_extra(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = chaos_without(["rq"], "run", "--target", "rq_redis", "--scenario", "no_faults", "--runs-dir", str(runs))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "a bug in queue-chaos" not in done.stderr
    assert re.search(r"control\.py imports rq, which is not installed for the suite's Python", done.stderr)
    assert "Install it: pip install 'queue-chaos[rq]'." in done.stderr
    assert not runs.exists() or not any(runs.iterdir()), "refused before a run folder is made"


def user_target(tmp_path: Path, imports: str) -> Path:
    """redis_basic, its control importing `imports` first."""
    folder = tmp_path / "mine"
    shutil.copytree(REPO / "targets" / "redis_basic", folder)
    control = folder / "control.py"
    control.write_text(f"import {imports}\n" + control.read_text())
    return folder


def test_a_users_library_that_is_not_installed_names_pip_install(tmp_path: Path) -> None:
    folder = user_target(tmp_path, "queue_lib_nobody_installed")
    done = chaos_without([], "run", "--target", str(folder), "--scenario", "no_faults", "--runs-dir",
                         str(tmp_path / "runs"))
    assert done.returncode == 2, done.stderr
    assert "imports queue_lib_nobody_installed, which is not installed" in done.stderr
    assert "Install it: pip install queue_lib_nobody_installed (or the distribution" in done.stderr
    assert "at control.py:1" in done.stderr


def test_a_missing_module_of_an_installed_package_is_the_files_mistake(tmp_path: Path) -> None:
    folder = user_target(tmp_path, "redis.no_such_module")
    done = chaos_without([], "run", "--target", str(folder), "--scenario", "no_faults", "--runs-dir",
                         str(tmp_path / "runs"))
    assert done.returncode == 2, done.stderr
    assert "failed to import (ModuleNotFoundError: No module named 'redis.no_such_module' at control.py:1)" \
        in done.stderr
    assert "pip install" not in done.stderr


def test_doctor_shows_the_missing_library_and_its_extra() -> None:
    done = chaos_without(["celery"], "doctor")
    assert done.returncode == 0, done.stderr
    rows = {match[1]: match[2] for match in re.finditer(r"^library +(\S+) +(ok|missing)", done.stdout, re.M)}
    assert rows["celery"] == "missing", done.stdout
    here = "ok" if importlib.util.find_spec("rq") is not None else "missing"
    assert rows["rq"] == here, "a library that is not blocked is as this interpreter has it"
    assert "celery does not import here (the celery extra of queue-chaos" in done.stdout
    assert "pip install 'queue-chaos[celery]'" in done.stdout


def test_workers_in_containers_without_the_docker_extra_name_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = chaos_without(["docker", "testcontainers"], "run", "--target", "redis_basic", "--scenario", "no_faults",
                         "--worker-image", "queue-chaos/python", "--runs-dir", str(runs))
    assert done.returncode == 2, done.stderr
    assert "pip install 'queue-chaos[docker]'" in done.stderr and "Traceback" not in done.stderr
    assert not runs.exists() or not any(runs.iterdir()), "refused before a run folder is made"


def test_clean_without_the_docker_extra_has_no_container_of_its_own_to_reap(tmp_path: Path) -> None:
    """Where an engine's socket exists but the SDK does not import, this install started no container."""
    done = chaos_without(["docker", "testcontainers"], "clean", "--runs-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "nothing to clean" in done.stdout


def test_an_observers_missing_library_is_refused_unless_the_run_goes_without_it(tmp_path: Path) -> None:
    folder = user_target(tmp_path, "json")
    (folder / "observer.py").write_text("import queue_lib_nobody_installed\n")
    toml = folder / "target.toml"
    toml.write_text(toml.read_text().replace('control = "control:Control"\n',
                                             'control = "control:Control"\nobserver = "observer:Observer"\n'))
    target = load_target(folder)
    with pytest.raises(ConfigError, match=r"observer module .* imports queue_lib_nobody_installed, which is not "
                                          r"installed .* Install it: pip install queue_lib_nobody_installed"):
        target.check_modules()
    target.check_modules(observer=False)
