"""The suite as a user installs it: a wheel built from this checkout, installed into a fresh virtualenv
outside the repository, finds its bundled targets and scenarios as package data (`chaos/bundled/...`)
and runs a real scenario whose workers import the installed package.

Why a test of its own: in the source checkout, discovery falls back to the repository's own `targets/`
and `scenarios/` folders and every process imports `chaos` from the checkout. So every other test
still passes when pyproject.toml forgets a subpackage or a data file. Only an installed wheel, run away
from the repository, shows it.

How the test makes sure it exercises the wheel and not the checkout:

- The wheel is built from a copy of the files git tracks or would track (`git ls-files --cached --others
  --exclude-standard`): uncommitted changes are included, ignored files (runs/, caches, *.egg-info) are
  not. Every file of the copy's `chaos/`, `targets/` and `scenarios/` must be in the installed package.
- The wheel is built with the running interpreter's own setuptools (`--no-build-isolation`, no network)
  when that setuptools can build wheels (70.1 or later, or an older one with a `wheel` package that
  provides bdist_wheel). Otherwise pip builds it in an isolated environment, from the configured index,
  as `pip install -e .` in ci/setup.sh does.
- The virtualenv uses `--system-site-packages`, so psutil and psycopg come from the running interpreter's
  environment without network access. (When the tests themselves run in a virtualenv, whose packages
  `--system-site-packages` would not see, a .pth file adds its site-packages.) That environment may hold
  an editable install of this repository: setuptools' `__editable__` .pth appends a finder to
  sys.meta_path. The installed wheel still wins, because the venv's own site-packages come before the
  system ones on sys.path and the default PathFinder, which searches sys.path, comes before the appended
  editable finder. `-I` or `-s` are no help here: they would drop the site directories the dependencies
  come from. The test does not rely on that reasoning alone: it asserts that `chaos.__file__`, the
  bundled folders, the workers' scripts and the package the workers import are all inside the venv.
- pip installs with `--ignore-installed`: pip would otherwise see the editable install (same name and
  version) and try to uninstall it first.
- Every command runs in an empty directory outside the repository (`python -m` puts the current
  directory first on sys.path, and discovery looks in ./targets and ./scenarios), with PYTHONPATH and the
  CHAOS_* variables removed from the environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaos import events
from chaos.ledger import read_events
from chaos.leftovers import run_processes
from tests.integration.runner import REPO

TARGET = "pg_lease"
SCENARIO = "kill_after_effect_before_ack"
BUILD_TIMEOUT_S = 60
SETUP_TIMEOUT_S = 60
LIST_TIMEOUT_S = 30
RUN_TIMEOUT_S = 60
# The folders whose every tracked file must be in the wheel, and where each lands in site-packages.
SHIPPED = {"chaos": "chaos", "targets": "chaos/bundled/targets", "scenarios": "chaos/bundled/scenarios"}
CAN_BUILD_IN_PLACE = "from setuptools.dist import Distribution; Distribution().get_command_class('bdist_wheel')"
WHERE = ("import json, chaos, chaos.discovery as d; print(json.dumps({'chaos': chaos.__file__, "
         "'targets': str(d.bundled('targets')), 'scenarios': str(d.bundled('scenarios'))}))")


@dataclass(frozen=True)
class Installed:
    source: Path  # the copy of the checkout the wheel was built from
    python: Path  # the venv's interpreter
    site_packages: Path  # the venv's own site-packages, where the wheel went
    env: dict[str, str]  # the environment every command of the installed suite runs with


def clean_env() -> dict[str, str]:
    """This process's environment without anything that could point Python or discovery at the checkout."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP") and not name.startswith("CHAOS_")}


def run(argv: list[str | Path], cwd: Path, env: dict[str, str], timeout: float,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, f"{argv} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def empty_dir_outside_repo(path: Path) -> Path:
    path.mkdir()
    assert not path.resolve().is_relative_to(REPO), f"{path} is inside the repository"
    return path


def copy_checkout(dest: Path) -> None:
    """The files git tracks or would track, as they are in the working tree (deleted ones skipped)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True, timeout=30).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def build_wheel(source: Path, dist: Path, env: dict[str, str], pattern: str = "queue_chaos-*.whl") -> Path:
    in_place = run([sys.executable, "-c", CAN_BUILD_IN_PLACE], source.parent, env, SETUP_TIMEOUT_S, check=False)
    isolation = ["--no-build-isolation"] if in_place.returncode == 0 else []
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", *isolation, "-w", dist,
         source], source.parent, env, BUILD_TIMEOUT_S)
    (wheel,) = dist.glob(pattern)
    return wheel


def make_venv(venv: Path, cwd: Path, env: dict[str, str]) -> Path:
    """A virtualenv that sees this interpreter's packages, and returns its own site-packages."""
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd, env, SETUP_TIMEOUT_S)
    python = venv / "bin" / "python"
    site_packages = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd, env,
                             SETUP_TIMEOUT_S).stdout.strip())
    if sys.prefix != sys.base_prefix:  # tests in a venv: its packages are not the base's "system" ones
        outer = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        (site_packages / "_outer_environment.pth").write_text("".join(f"{p}\n" for p in sorted(outer)))
    return site_packages


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed_wheel")
    assert not base.resolve().is_relative_to(REPO), f"{base} is inside the repository"
    env = clean_env()
    source = base / "src"
    copy_checkout(source)
    wheel = build_wheel(source, base / "dist", env)
    cwd = empty_dir_outside_repo(base / "setup_cwd")
    site_packages = make_venv(base / "venv", cwd, env)
    python = base / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
         "--disable-pip-version-check", wheel], cwd, env, SETUP_TIMEOUT_S)
    return Installed(source, python, site_packages, env)


def inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_venv_imports_the_wheel_with_every_file_of_the_checkout(installed: Installed, tmp_path: Path) -> None:
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    where = json.loads(run([installed.python, "-c", WHERE], cwd, installed.env, LIST_TIMEOUT_S).stdout)
    assert inside(where["chaos"], installed.site_packages), f"chaos imported from {where['chaos']}, not the wheel"
    assert Path(where["targets"]).resolve() == (installed.site_packages / SHIPPED["targets"]).resolve()
    assert Path(where["scenarios"]).resolve() == (installed.site_packages / SHIPPED["scenarios"]).resolve()
    missing = []
    for folder, shipped_as in SHIPPED.items():
        root = installed.source / folder
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            if not (installed.site_packages / shipped_as / file.relative_to(root)).is_file():
                missing.append(str(file.relative_to(installed.source)))
    assert not missing, ("tracked files missing from the wheel; list their package in [tool.setuptools] packages "
                         f"or their pattern in [tool.setuptools.package-data] of pyproject.toml: {missing}")


def test_list_shows_the_bundled_targets_and_scenarios(installed: Installed, tmp_path: Path) -> None:
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    listed = run([installed.python, "-m", "chaos", "list"], cwd, installed.env, LIST_TIMEOUT_S).stdout
    names = {line.split()[0] for line in listed.splitlines() if line.startswith("  ")}
    assert {TARGET, SCENARIO} <= names, listed


def test_a_real_run_passes_with_workers_on_the_installed_package(installed: Installed, tmp_path: Path) -> None:
    cwd = empty_dir_outside_repo(tmp_path / "cwd")
    runs = tmp_path / "runs"
    proc = run([installed.python, "-m", "chaos", "run", "--target", TARGET, "--scenario", SCENARIO, "--seed", "1",
                "--runs-dir", runs], cwd, installed.env, RUN_TIMEOUT_S, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert proc.stdout.startswith("PASS"), output
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "pass"
    assert any(log.stat().st_size for log in (run_dir / "logs").glob("*.log")), "no worker log"
    # The workers ran the installed target's script on the venv's interpreter, and imported the installed chaos.
    bundled_target = installed.site_packages / SHIPPED["targets"] / TARGET
    workers = [e.data["argv"] for e in read_events(run_dir / "ledger.sqlite")
               if e.kind == events.PROCESS_START and e.data.get("role") == "worker"]
    assert workers
    for argv in workers:
        assert Path(argv[0]).absolute() == installed.python.absolute(), argv
        assert any(inside(arg, bundled_target) for arg in argv[1:]), argv
    assert inside(run_dir / "pythonpath" / "chaos", installed.site_packages)
    assert not run_processes(run_dir)
    assert not any(cwd.iterdir()), "the run wrote into its working directory"
