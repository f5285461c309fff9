"""Each backend kind declares the Debian package of its local server, which ci/setup.sh installs when
missing (`python3 -m chaos.backends.packages`), and the bundled correct target `chaos target new` starts
from: a new kind needs no edit of the setup script or the scaffold."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.backends.packages import DebianPackage, missing
from chaos.backends.registry import KINDS, reference_target
from chaos.discovery import find_target
from chaos.known_answers import correct_targets

REPO = Path(__file__).resolve().parents[2]


def test_every_kind_declares_its_server_package() -> None:
    for package in KINDS.values():
        assert isinstance(importlib.import_module(package).SERVER_PACKAGE, DebianPackage), package


def test_every_kind_names_a_correct_reference_target_of_its_own_kind() -> None:
    for kind in KINDS:
        name = reference_target(kind)
        assert name in correct_targets() and find_target(name).backend == kind, (kind, name)


def test_a_package_is_present_by_a_binary_on_path_or_a_path_that_exists(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "bin" / "myserver"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(binary.parent))
    assert DebianPackage("x", ("myserver",)).present()
    assert not DebianPackage("x", ("nothere",)).present()
    assert DebianPackage("x", (), (str(tmp_path / "b*" / "myserver"),)).present()
    assert not DebianPackage("x", (), (str(tmp_path / "nothing*"),)).present()


def test_the_setup_script_reads_the_missing_ones_from_the_module(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no server binary on PATH: only the packages found by path stay
    names = missing()
    assert "redis-server" in names and "beanstalkd" in names
    printed = subprocess.run([sys.executable, "-m", "chaos.backends.packages"], cwd=REPO, capture_output=True,
                             text=True, check=True, env={"PATH": str(tmp_path)}).stdout.split()
    assert printed == names
    assert "python3 -m chaos.backends.packages" in (REPO / "ci" / "setup.sh").read_text()
