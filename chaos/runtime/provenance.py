"""What a run records at its start so a red build can say where it came from: the suite's version, the
target folder's git commit, the Python that ran it (the server's version is backend.start's to record).
Asked once per run, cheaply; a folder outside git says so rather than failing the run."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

NOT_IN_GIT = "not in git"
GIT_TIMEOUT_S = 5.0


def suite_version() -> str:
    try:
        return importlib.metadata.version("queue-chaos")
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH, never installed
        return "unknown (not installed)"


def git_commit(folder: Path) -> str:
    """The commit of the checkout holding `folder` (short), `+modified` when the folder has uncommitted
    changes, or NOT_IN_GIT."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                                  timeout=GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short=12", "HEAD")
    if not commit:
        return NOT_IN_GIT
    changed = git("status", "--porcelain", "--", ".")
    return f"{commit}+modified" if changed else commit


def run_provenance(target_folder: Path) -> dict[str, Any]:
    """run.start's provenance fields."""
    return {"suite_version": suite_version(), "target_commit": git_commit(target_folder),
            "python": platform.python_version()}
