"""A third party extends the suite through entry points, as pytest plugins do: tests/plugin is such a
package (chaos-plugin-memq), built into a wheel and pip-installed into a fresh virtualenv, that adds the
backend kind memq (its own queue server), the fault kind freeze and the target memq_pop, and edits nothing
of the suite. `chaos` lists all three, starts a new target from the plugin's reference target, and runs a
scenario that applies the plugin's fault, through the context's generic verb, to the plugin's target on
the plugin's server. A plugin that does not load, or takes a built-in name, ends every command with a
one-paragraph error and exit 2.

The suite itself comes from this checkout (PYTHONPATH), so the test sees this tree's registries; the
virtualenv is built as the installed-wheel test builds its own (tests/integration/test_installed_wheel.py).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaos import events
from chaos.ledger import read_events
from tests.integration.runner import REPO
from tests.integration.test_installed_wheel import (
    SETUP_TIMEOUT_S,
    build_wheel,
    clean_env,
    empty_dir_outside_repo,
    make_venv,
    run,
)

PLUGIN = REPO / "tests" / "plugin"
LIST_TIMEOUT_S = 30
RUN_TIMEOUT_S = 90
SCENARIO = '''"""Freeze the owner of job-0001 while it holds it (the plugin's fault kind), then let it finish."""

FAULTS = ("freeze",)


def run(ctx):
    ctx.enqueue(3)
    gate = ctx.arm("after:claim", job="job-0001")
    ctx.start_worker()
    held = ctx.wait(gate)
    ctx.hold_until("freeze", held.worker, lambda event: False, 0.5, gate)
    ctx.wait_drained(ctx.recovery_deadline())
'''


@dataclass(frozen=True)
class Venv:
    python: Path
    site_packages: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    base = tmp_path_factory.mktemp("plugin")
    assert not base.resolve().is_relative_to(REPO), f"{base} is inside the repository"
    env = {**clean_env(), "PYTHONPATH": str(REPO)}
    source = base / "src"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    wheel = build_wheel(source, base / "dist", env, "chaos_plugin_memq-*.whl")
    cwd = empty_dir_outside_repo(base / "setup_cwd")
    site_packages = make_venv(base / "venv", cwd, env)
    python = base / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", wheel], cwd, env,
        SETUP_TIMEOUT_S)
    return Venv(python, site_packages, env)


def chaos(venv: Venv, cwd: Path, *args: str | Path, timeout: float = LIST_TIMEOUT_S,
          ) -> tuple[int, str, str]:
    proc = run([venv.python, "-m", "chaos", *args], cwd, venv.env, timeout, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_chaos_lists_the_plugins_kind_fault_and_target(venv: Venv, tmp_path: Path) -> None:
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    code, listed, stderr = chaos(venv, cwd, "list")
    assert code == 0, listed + stderr
    lines = [line.split() for line in listed.splitlines() if line.startswith("  ")]
    assert ["memq", "local", "(none)"] in lines, listed
    assert ["freeze", "freeze", "a", "worker", "(SIGSTOP,", "then", "SIGCONT)"] in lines, listed
    (target,) = [line for line in lines if line[0] == "memq_pop"]
    assert "plugin's" in target, listed
    # The plugin's reference target is where a new target of its kind starts.
    code, out, stderr = chaos(venv, cwd, "target", "new", "mine", "--backend", "memq", "--dir", tmp_path / "mine")
    assert code == 0, out + stderr
    assert 'backend = "memq"' in (tmp_path / "mine" / "mine" / "target.toml").read_text()


def test_a_run_applies_the_plugins_fault_to_its_target_on_its_server(venv: Venv, tmp_path: Path) -> None:
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    scenario = tmp_path / "freeze_owner.py"
    scenario.write_text(SCENARIO)
    runs = tmp_path / "runs"
    code, out, stderr = chaos(venv, cwd, "run", "--target", "memq_pop", "--scenario", scenario, "--seed", "1",
                              "--runs-dir", runs, timeout=RUN_TIMEOUT_S)
    assert code == 0 and out.startswith("PASS"), out + stderr
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["verdict"] == "pass" and verdict["counts"].get("completed") == 3, verdict
    (fault,) = verdict["faults"]
    assert fault["kind"] == "freeze" and fault["exercised"] and "frozen by SIGSTOP" in fault["why"], fault
    ledger = read_events(run_dir / "ledger.sqlite")
    (started,) = [e for e in ledger if e.kind == events.BACKEND_START]
    assert started.data.get("provider") == "local", started.data
    applied = [e for e in ledger if e.kind == events.FAULT_APPLIED]
    healed = [e for e in ledger if e.kind == events.FAULT_HEALED]
    assert applied and applied[0].data["pids"] and healed and healed[0].data["pids"] == applied[0].data["pids"]


@pytest.fixture
def installed_dist(venv: Venv) -> Iterator[Path]:
    """A distribution installed beside the plugin, whose entry points a test writes (its metadata only)."""
    dist_info = venv.site_packages / "chaos_plugin_bad-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: chaos-plugin-bad\nVersion: 0.1\n")
    yield dist_info / "entry_points.txt"
    shutil.rmtree(dist_info)


@pytest.mark.parametrize(("entry_points", "phrases"), [
    ("[queue_chaos.fault_kinds]\nkill = chaos_plugin_memq.freeze:KIND\n",
     ["chaos-plugin-bad 0.1 adds a fault kind named 'kill'", "already has a fault kind of that name",
      "pip uninstall chaos-plugin-bad"]),
    ("[queue_chaos.targets]\npg_lease = chaos_plugin_memq.memq_pop\n",
     ["adds a target named 'pg_lease'", "already has a target of that name"]),
    ("[queue_chaos.backend_kinds]\nghost = chaos_plugin_ghost.kind\n",
     ["adds the backend kind 'ghost'", "failed to load: ModuleNotFoundError", "chaos_plugin_ghost"]),
    ("[queue_chaos.backend_kinds]\nhalf = chaos_plugin_memq.client\n",
     ["adds the backend kind 'half'", "declares no PROVIDERS, SERVER_PACKAGE, REFERENCE_TARGET"]),
])
def test_a_plugin_that_fails_or_collides_is_one_paragraph_and_exit_2(
        venv: Venv, installed_dist: Path, tmp_path: Path, entry_points: str, phrases: list[str]) -> None:
    installed_dist.write_text(entry_points)
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    code, out, stderr = chaos(venv, cwd, "list")
    assert code == 2, out + stderr
    assert "Traceback" not in stderr and stderr.startswith("chaos: ") and stderr.count("\n") == 1, stderr
    assert all(phrase in stderr for phrase in phrases), stderr
