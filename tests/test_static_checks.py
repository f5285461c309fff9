"""The code standard is part of the suite: strict types and a clean lint, on every CI run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TARGET_WORKERS = sorted(REPO.glob("targets/*/*.py"))


def run(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MYPYPATH=str(REPO))  # targets import chaos from the repo, as their workers do
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)


def test_the_library_is_strictly_typed() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_scenarios_and_tests_are_strictly_typed() -> None:
    result = run("mypy", "--strict", "scenarios", "tests", "--exclude", "tests/plugin/")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_test_plugin_package_is_strictly_typed() -> None:
    """tests/plugin is a package of its own (installed by test_plugins.py), checked from its own root."""
    result = run("mypy", "--strict", "-p", "chaos_plugin_memq", cwd=REPO / "tests" / "plugin")
    assert result.returncode == 0, result.stdout + result.stderr


# Each target folder is its own mypy run (seconds each, 20 folders): the full tier runs them, so the README's
# test command stays within minutes (it still checks the library, the scenarios and the tests).
@pytest.mark.full
@pytest.mark.parametrize("target", sorted({p.parent.name for p in TARGET_WORKERS}))
def test_each_reference_target_is_strictly_typed(target: str) -> None:
    # Targets are separate folders with modules of the same names, so each is checked on its own.
    folder = REPO / "targets" / target
    files = sorted(p.name for p in folder.glob("*.py"))
    result = run("mypy", "--strict", "--no-incremental", *files, cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr


def test_lint_is_clean() -> None:
    result = run("ruff", "check", "chaos", "tests", "targets", "scenarios", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr
