"""Runs the real `chaos` CLI in a subprocess, as a user or CI would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


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
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "chaos", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if runs_dir is None:
        runs_dir = Path(args[args.index("--runs-dir") + 1])
    dirs = sorted(p for p in runs_dir.glob("*") if p.is_dir()) if runs_dir.is_dir() else []
    return CliResult(proc.returncode, proc.stdout, proc.stderr, dirs[-1] if dirs else None)
