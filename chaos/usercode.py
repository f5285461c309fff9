"""Loading the user's own Python files (a target's control module, a scenario): a file that fails to
import is the user's mistake, told as one paragraph naming their file and line, never as a traceback
blamed on the suite."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType

from chaos.errors import ConfigError


def load_module(path: Path, name: str, what: str) -> ModuleType:
    """Import `path` as module `name`; `what` says what it is for the message ("scenario", "control module")."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ConfigError(f"Cannot load {what} {path}: expected a Python file there.")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        missing = missing_package(exc)
        if missing is None:
            raise ConfigError(f"The {what} {path} failed to import ({where(exc, path)}). Fix that file; the suite "
                              "imports it in its own process before the run starts.") from exc
        raise ConfigError(f"The {what} {path} imports {missing}, which is not installed for the suite's Python "
                          f"({sys.executable}): {where(exc, path)}. Install it: {pip_install(missing)}. The suite "
                          "imports this file in its own process, so the package is needed there, whatever "
                          "Python the target's workers run under.") from exc
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: where it broke, as one paragraph
        raise ConfigError(f"The {what} {path} failed to import ({where(exc, path)}). Fix that file; the suite "
                          "imports it in its own process before the run starts.") from exc
    return module


def where(exc: BaseException, path: Path) -> str:
    """`ExcType: message at file:line` for the deepest frame in the user's file."""
    line = exc.lineno if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(sys.exc_info()[2] or exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return f"{type(exc).__name__}: {exc}" + (f" at {path.name}:{line}" if line else "")


def missing_package(exc: ModuleNotFoundError) -> str | None:
    """The top-level package a failed import names when that package is not installed at all (a missing
    submodule of an installed package is the file's mistake, not a missing install), else None."""
    top = (exc.name or "").partition(".")[0]
    if not top:
        return None
    try:
        return top if importlib.util.find_spec(top) is None else None
    except (ImportError, ValueError):
        return top


def pip_install(package: str) -> str:
    """The pip command that installs `package`: the extra of queue-chaos that pins it, where one does (the
    bundled library adapters'), else the package by its import name."""
    requirement = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;\s*extra\s*==\s*[\"']([^\"']+)[\"']")
    try:
        declared = importlib.metadata.metadata("queue-chaos").get_all("Requires-Dist") or []
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH, never installed
        declared = []
    wanted = _normal(package)
    for line in declared:
        found = requirement.match(line)
        if found and _normal(found[1]) == wanted:
            return f"pip install 'queue-chaos[{found[2]}]'"
    return f"pip install {package} (or the distribution that provides the module {package}, where its name differs)"


def _normal(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()
