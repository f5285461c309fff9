"""Workers run in the queue's own virtualenv, often on an older Python than the suite's: the probe client
and the worker helpers must import and talk to a real sink from Python 3.8, with only the `chaos`
package on their path (as the launcher gives it to them)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import chaos
from chaos.ledger import Ledger
from chaos.runtime.sink import Sink


def python38() -> str | None:
    """A Python 3.8 that runs (a pyenv shim on PATH may name a version it cannot start)."""
    candidates = [*sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8"))),
                  shutil.which("python3.8")]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "--version"], capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.startswith("Python 3.8"):
            return candidate
    return None


PYTHON38 = python38()


WORKER = """
import sys
from chaos import probe
from chaos.worker import settings
cfg = settings()
assert sys.version_info[:2] == (3, 8), sys.version
probe.claim("job-1", "t1")
assert probe.effect("job-1", "t1")["accepted"] is True
probe.ack("job-1", "t1", True)
heavy = [m for m in sys.modules if m in ("sqlite3", "tomllib", "psutil") or m.startswith("chaos.check")]
assert not heavy, heavy
print(cfg.worker_id)
"""


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter on this machine (syntax is still checked)")
def test_a_python_3_8_worker_reports_its_probes(sink: Sink, ledger: Ledger, tmp_path: Path) -> None:
    path = tmp_path / "pythonpath"
    path.mkdir()
    (path / "chaos").symlink_to(Path(chaos.__file__).parent, target_is_directory=True)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(path), "PYTHONDONTWRITEBYTECODE": "1",
           "CHAOS_SINK_URL": sink.url, "CHAOS_RUN_TOKEN": sink.token, "CHAOS_WORKER_ID": "w38"}
    assert PYTHON38 is not None
    done = subprocess.run([PYTHON38, "-c", WORKER], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "w38"
    probes = [(e.kind, e.worker) for e in ledger.events() if e.kind.startswith("probe.")]
    assert probes == [("probe.claim", "w38"), ("probe.effect", "w38"), ("probe.ack", "w38")]
