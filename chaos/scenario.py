"""Scenarios: one Python file each, a docstring naming the seed risk it probes and a `run(ctx)`."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from chaos.errors import ConfigError
from chaos.target import search_roots


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    doc: str
    run: Callable[[Any], None]


def available_scenarios() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in search_roots("scenarios"):
        for file in sorted(root.glob("*.py")) if root.is_dir() else []:
            if not file.name.startswith("_"):
                found.setdefault(file.stem, file)
    return found


def find_scenario(name_or_path: str) -> Scenario:
    path = Path(name_or_path)
    if path.suffix == ".py" and path.is_file():
        return load_scenario(path)
    known = available_scenarios()
    if name_or_path in known:
        return load_scenario(known[name_or_path])
    raise ConfigError(f"Unknown scenario {name_or_path!r}: expected a scenario name or a path to a .py file "
                      f"defining run(ctx). Known scenarios: {', '.join(sorted(known)) or 'none'}. "
                      "`chaos list` shows them.")


def load_scenario(path: Path) -> Scenario:
    spec = importlib.util.spec_from_file_location(f"chaos_scenario_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"Cannot load scenario {path}: expected a Python file defining run(ctx).")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = getattr(module, "run", None)
    if not callable(run):
        raise ConfigError(f"Scenario {path} defines no run(ctx) function; a scenario needs one.")
    return Scenario(path.stem, path.resolve(), (module.__doc__ or "").strip(), run)
