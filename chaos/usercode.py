"""Loading the user's own Python files (a target's control module, a scenario): a file that fails to
import is the user's mistake, told as one paragraph naming their file and line, never as a traceback
blamed on the suite."""

from __future__ import annotations

import importlib.util
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
