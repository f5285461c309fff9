"""A target's `[worker] python` in a real run: redis_basic's control in the suite's process, its workers
started under Python 3.12 (the virtualenv ci/setup_pythons.sh builds, which has redis-py), importing
chaos.probe through the launcher's PYTHONPATH and reporting their probes to the sink. Each worker prints
the interpreter it runs under before it serves, and the ledger's process starts name that interpreter."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from chaos import events
from chaos.ledger import read_events
from tests.integration.runner import REPO, chaos

VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "queue-chaos" / "venvs" / "py3.12"
PYTHON = VENV / "bin" / "python"
# The worker, wrapped: it says which Python runs it, then is redis_basic's own worker in the same process.
REPORT = """import runpy, sys
print("worker python", sys.version.split()[0], sys.executable, flush=True)
runpy.run_path(sys.argv[1], run_name="__main__")
"""


@pytest.mark.skipif(not PYTHON.exists(), reason=f"no Python 3.12 virtualenv at {VENV}: bash ci/setup_pythons.sh")
def test_the_workers_run_under_the_python_the_target_names(tmp_path: Path) -> None:
    folder = tmp_path / "basic312"
    shutil.copytree(REPO / "targets" / "redis_basic", folder)
    (folder / "report_python.py").write_text(REPORT)
    toml = (folder / "target.toml").read_text()
    old = 'worker = ["{python}", "{target_dir}/worker.py"]\n'
    assert old in toml
    toml = toml.replace(old, "").replace('name = "redis_basic"', 'name = "basic312"')
    toml += (f'\n[worker]\ncommand = ["{{python}}", "{{target_dir}}/report_python.py", "{{target_dir}}/worker.py"]\n'
             f'python = "{PYTHON}"\n')
    (folder / "target.toml").write_text(toml)
    result = chaos("run", "--target", str(folder), "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    assert result.verdict["verdict"] == "pass"
    ledger = read_events(result.dir / "ledger.sqlite")
    starts = [e for e in ledger if e.kind == events.PROCESS_START and e.data.get("role") == "worker"]
    assert starts, "the scenario started workers"
    for start in starts:
        assert start.data["argv"][0] == str(PYTHON), start.data
        log = (result.dir / "logs" / f"{start.worker}.log").read_text()
        assert "worker python 3.12." in log, log
    claimers = {e.worker for e in ledger if e.kind == events.PROBE_CLAIM}
    assert claimers and claimers <= {start.worker for start in starts}, "the 3.12 workers sent the claims"
