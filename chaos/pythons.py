"""Python interpreters by version: the one a target's `[worker] python = "3.12"` names, and the ones CI runs
the unit tier under (`python3 -m chaos.pythons 3.12` prints its path; ci/setup_pythons.sh uses it), found
the same way both times.

A version is looked for as `python3.12` on PATH, then under pyenv's versions folder, then as this very
interpreter; each candidate is run once and asked its version, since a pyenv shim on PATH exists for every
installed version but starts only the one pyenv has selected. A path is taken as it is, and asked too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from chaos.errors import ConfigError

VERSION = re.compile(r"^3\.(\d+)$")
ASK_TIMEOUT_S = 20.0
INSTALL = ("Install it with pyenv (pyenv install {v}), your distribution's package (apt-get install python{v}, "
           "where it has one) or uv (uv python install {v}), or name the interpreter's path instead, such as "
           "python = \"/opt/venvs/mylib/bin/python\" (a virtualenv's python, with the library installed, is the "
           "usual choice).")


@dataclass(frozen=True)
class Interpreter:
    """A Python that answered: its path and its version (`3.12.1`)."""

    path: Path
    version: str

    @property
    def minor(self) -> str:
        """`3.12`: what a target names."""
        return ".".join(self.version.split(".")[:2])


def is_version(spec: str) -> bool:
    """Whether `spec` names a version (`3.12`) rather than a path."""
    return VERSION.match(spec) is not None


def find(spec: str, base: Path, where: str) -> Interpreter:
    """The interpreter `spec` names: a version such as `3.12`, or a path (relative to `base`, or absolute,
    or a command on PATH). `where` says who named it, for the error: a missing interpreter is a ConfigError
    saying how to install one."""
    if is_version(spec):
        for candidate in _candidates(spec):
            found = ask(candidate)
            if found is not None and found.minor == spec:
                return found
        raise ConfigError(f"{where}: python = \"{spec}\" names Python {spec}, which is not on this machine (no "
                          f"python{spec} that starts on PATH, none under {_pyenv_root() / 'versions'}). "
                          + INSTALL.format(v=spec))
    path = Path(spec) if "/" in spec else Path(shutil.which(spec) or spec)
    path = path if path.is_absolute() else base / path
    found = ask(path)
    if found is None:
        raise ConfigError(f"{where}: python = \"{spec}\" names {path}, which does not start as a Python "
                          "interpreter here (it is missing, not executable, or not Python 3). Fix the path, or "
                          "name a version (python = \"3.12\") for the suite to find an installed one.")
    return found


def ask(path: Path) -> Interpreter | None:
    """The interpreter at `path`, if it starts and says its version; None if it does not."""
    if not path.is_file() or not os.access(path, os.X_OK):
        return None
    try:
        answer = subprocess.run([str(path), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                capture_output=True, text=True, timeout=ASK_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = answer.stdout.strip()
    if answer.returncode != 0 or not re.fullmatch(r"3\.\d+\.\d+", version):
        return None
    return Interpreter(path, version)


def _candidates(version: str) -> list[Path]:
    """Where Python `version` may be, most likely first."""
    found: list[Path] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        found.append(Path(on_path))
    versions = _pyenv_root() / "versions"
    if versions.is_dir():
        installed = [folder for folder in versions.iterdir() if folder.name.startswith(f"{version}.")]
        for folder in sorted(installed, key=_patch, reverse=True):
            found.append(folder / "bin" / f"python{version}")
    found.append(Path(sys.executable))
    return found


def _patch(folder: Path) -> int:
    """3.12.10 after 3.12.9; a folder named otherwise (3.12-dev) last."""
    tail = folder.name.split(".")[2] if folder.name.count(".") >= 2 else ""
    return int(tail) if tail.isdigit() else -1


def _pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def main(argv: list[str]) -> int:
    """`python3 -m chaos.pythons 3.12`: print the interpreter's path (exit 0), or say how to get it (exit 2)."""
    if len(argv) != 1:
        print("usage: python3 -m chaos.pythons VERSION|PATH", file=sys.stderr)
        return 2
    try:
        print(find(argv[0], Path.cwd(), "chaos.pythons").path)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
