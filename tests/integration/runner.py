"""Runs the real `chaos` CLI in a subprocess, as a user or CI would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RUN_DIR_FILE = "--run-dir-file"


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str
    run_dir: Path | None

    @property
    def dir(self) -> Path:
        """The run directory, which a run that started must have made."""
        assert self.run_dir is not None, self.stdout + self.stderr
        return self.run_dir

    @property
    def verdict(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.dir / "verdict.json").read_text())
        return loaded


def chaos(*args: str, runs_dir: Path | None = None, env: dict[str, str] | None = None,
          timeout: float = 180, cwd: Path = REPO) -> CliResult:
    """`chaos ARGS...` in `cwd`. The run dir of `chaos run` is the one it names (--run-dir-file: never
    another run's beside it); of any other command, the newest dir in `runs_dir` (default: its --runs-dir)."""
    full_env = dict(os.environ, **(env or {}))
    with tempfile.TemporaryDirectory() as scratch:
        if args[:1] == ("run",) and RUN_DIR_FILE not in args:
            args = ("run", RUN_DIR_FILE, str(Path(scratch) / "run-dir"), *args[1:])
        proc = subprocess.run([sys.executable, "-m", "chaos", *args], cwd=cwd, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
        if args[:1] == ("run",):
            named = Path(args[args.index(RUN_DIR_FILE) + 1])
            return CliResult(proc.returncode, proc.stdout, proc.stderr, named_run_dir(named))
    if runs_dir is None:
        runs_dir = Path(args[args.index("--runs-dir") + 1])
    dirs = sorted(p for p in runs_dir.glob("*") if p.is_dir()) if runs_dir.is_dir() else []
    return CliResult(proc.returncode, proc.stdout, proc.stderr, dirs[-1] if dirs else None)


def named_run_dir(named: Path) -> Path | None:
    """The run dir `chaos run` named in the file, if it made one (the path is written just before)."""
    run_dir = Path(named.read_text().strip()) if named.is_file() else None
    return run_dir if run_dir is not None and run_dir.is_dir() else None
