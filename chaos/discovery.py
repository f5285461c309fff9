"""Where targets and scenarios are found: ./targets and ./scenarios, then the folders in
$CHAOS_TARGETS_PATH / $CHAOS_SCENARIOS_PATH, then the suite's bundled ones (the repository's own
folders in a source checkout; package data, `chaos/bundled/`, in an installed wheel) and the targets
installed packages add (an entry point in the group `queue_chaos.targets` naming a package whose folder
holds a target.toml: chaos.plugins), which may not take a bundled target's name."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from chaos import events
from chaos.errors import ConfigError
from chaos.plugins import Registry
from chaos.scenario import Scenario, load_scenario
from chaos.target import Target, load_target

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

Kind = Literal["targets", "scenarios"]
PACKAGE = Path(__file__).resolve().parent
_PATH_VARIABLES: dict[Kind, str] = {"targets": events.ENV_TARGETS_PATH, "scenarios": events.ENV_SCENARIOS_PATH}


def bundled(kind: Kind) -> Path:
    """The suite's own targets or scenarios: package data when installed, else the source checkout's."""
    installed = PACKAGE / "bundled" / kind
    return installed if installed.is_dir() else PACKAGE.parent / kind


def search_roots(kind: Kind) -> list[Path]:
    roots = [Path.cwd() / kind]
    extra = os.environ.get(_PATH_VARIABLES[kind])
    if extra:
        roots += [Path(p) for p in extra.split(os.pathsep) if p]
    roots.append(bundled(kind))
    unique: list[Path] = []
    for root in roots:
        if root.resolve() not in [u.resolve() for u in unique]:
            unique.append(root)
    return unique


def _folders(root: Path) -> dict[str, Path]:
    return {toml.parent.name: toml.parent for toml in sorted(root.glob("*/target.toml"))} if root.is_dir() else {}


def _plugin_target(point: EntryPoint) -> Path:
    """An entry point names a package; its folder is the target's (target.toml beside its __init__.py)."""
    package = point.load()
    if not isinstance(package, ModuleType) or not getattr(package, "__file__", None):
        raise ValueError(f"it names {package!r}, not a package whose folder holds a target.toml")
    folder = Path(str(package.__file__)).resolve().parent
    if not (folder / "target.toml").is_file():
        raise ValueError(f"its package {package.__name__} has no target.toml in {folder}")
    return folder


# The bundled targets, and those installed packages add.
TARGETS: Registry[Path] = Registry("targets", "target", lambda: _folders(bundled("targets")), _plugin_target)


def available_targets() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in search_roots("targets"):
        for name, folder in _folders(root).items():
            found.setdefault(name, folder)
    for name, folder in TARGETS.items():
        found.setdefault(name, folder)
    return found


def available_scenarios() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in search_roots("scenarios"):
        for file in sorted(root.glob("*.py")) if root.is_dir() else []:
            if not file.name.startswith("_"):
                found.setdefault(file.stem, file)
    return found


def find_target(name_or_path: str) -> Target:
    path = Path(name_or_path)
    if path.is_dir() and (path / "target.toml").is_file():
        return load_target(path)
    if path.name == "target.toml" and path.is_file():
        return load_target(path.parent)
    known = available_targets()
    if name_or_path in known:
        return load_target(known[name_or_path])
    raise ConfigError(f"Unknown target {name_or_path!r}: expected the name of a folder with a target.toml under "
                      f"{', '.join(str(r) for r in search_roots('targets'))}, or a path to one. Known targets: "
                      f"{', '.join(sorted(known)) or 'none'}. `chaos list` shows them.")


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
