"""Runs the real `chaos` CLI in a subprocess, as a user or CI would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str
    run_dir: Path | None

    @property
    def verdict(self) -> dict[str, Any]:
        assert self.run_dir is not None, self.stdout + self.stderr
        loaded: dict[str, Any] = json.loads((self.run_dir / "verdict.json").read_text())
        return loaded


def chaos(*args: str, runs_dir: Path | None = None, env: dict[str, str] | None = None,
          timeout: float = 180) -> CliResult:
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "chaos", *args], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if runs_dir is None:
        runs_dir = Path(args[args.index("--runs-dir") + 1])
    dirs = sorted(p for p in runs_dir.glob("*") if p.is_dir()) if runs_dir.is_dir() else []
    return CliResult(proc.returncode, proc.stdout, proc.stderr, dirs[-1] if dirs else None)


def run_processes(run_dir: Path) -> list[psutil.Process]:
    """Every process the run's ledger says it started (workers, reconcilers, the backend) still alive
    or stopped, plus any process whose command line mentions the run dir."""
    from chaos.ledger import read_events

    pids: set[int] = set()
    for event in read_events(run_dir / "ledger.sqlite"):
        if event.kind in ("process.start", "backend.start"):
            pids.add(int(event.data["pid"]))
        elif event.kind == "backend.restart" and event.data.get("new_pid"):
            pids.add(int(event.data["new_pid"]))
    alive = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive + processes_mentioning(str(run_dir))


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live processes whose command line or working directory mentions `text` (a run dir)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if text in " ".join(proc.info["cmdline"] or []) or text in (proc.info["cwd"] or ""):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found
