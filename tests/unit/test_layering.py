"""The packages import one way, downward, and each audience loads only what it needs: a checker that
pulls in process code is no longer pure, and a worker that pulls in the checker (or a newer Python's
syntax) no longer runs inside the queue's own virtualenv."""

from __future__ import annotations

import ast
import graphlib
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import chaos
import chaos.worker
from chaos.backends.registry import BUILT_IN, exports, worker_helpers
from chaos.discovery import bundled

PACKAGE = Path(chaos.__file__).parent
WORKER_HELPERS = [importlib.import_module(module) for module in worker_helpers(BUILT_IN)]
# A kind's control and observer classes are public at the module that defines them (its package's EXPORTS),
# where mypy sees their types, and also as untyped `chaos.<Name>`.
KIND_CLASSES = {module: {name for name, of in exports().items() if of == module} for module in set(exports().values())}
PUBLIC = {"chaos": set(chaos.__all__) | set(exports()), "chaos.worker": set(chaos.worker.__all__),
          **{helper.__name__: set(helper.__all__) for helper in WORKER_HELPERS}, **KIND_CLASSES}
# What runs inside a worker process, or is imported by it: it must parse on the oldest Python a queue uses.
WORKER_SIDE = [PACKAGE / "__init__.py", PACKAGE / "events.py", PACKAGE / "probe.py",
               *sorted((PACKAGE / "worker").glob("*.py"))]
# What each part of the library may import of the rest (longest prefix wins). Imports under
# `if TYPE_CHECKING:` count too: an annotation names what its module depends on, and mypy follows it.
# docs/development.md's layout table says the same.
LAYERS: dict[str, tuple[str, ...]] = {
    "chaos.events": (),
    "chaos.errors": (),
    "chaos.procs": (),
    "chaos.ownership": (),
    "chaos.ports": ("chaos.errors",),
    "chaos.worker": ("chaos.events", "chaos.worker"),
    "chaos.probe": ("chaos.worker",),
    "chaos.contract": ("chaos.errors",),
    "chaos.contract_params": ("chaos.contract", "chaos.errors"),
    "chaos.usercode": ("chaos.errors",),
    "chaos.plugins": ("chaos.errors",),
    "chaos.names": ("chaos.errors",),
    "chaos.pythons": ("chaos.errors",),
    "chaos.ledger": ("chaos.errors", "chaos.events"),
    # The queue's vocabulary (Job, JobState, QueueRecord, Control, Observer), which the backends' helpers speak.
    "chaos.queue_model": ("chaos.backends.base",),
    # A backend's control shares its wire format (keys, entries) with the worker side. It imports nothing of
    # chaos.target, which sits above the backend kinds (it checks [server] against them).
    "chaos.backends": ("chaos.backends", "chaos.errors", "chaos.events", "chaos.procs", "chaos.ports", "chaos.contract",
                       "chaos.queue_model", "chaos.worker", "chaos.containers", "chaos.ownership"),
    # The Docker engine, the images built here and workers in containers.
    "chaos.containers": ("chaos.containers", "chaos.errors"),
    "chaos.backends.base": ("chaos.events",),
    "chaos.backends.options": ("chaos.errors",),
    "chaos.backends.registry": ("chaos.backends.base", "chaos.backends.options", "chaos.errors", "chaos.plugins"),
    "chaos.target": ("chaos.backends.base", "chaos.backends.options", "chaos.backends.registry", "chaos.contract",
                     "chaos.contract_params", "chaos.errors", "chaos.names", "chaos.pythons", "chaos.queue_model",
                     "chaos.usercode"),
    "chaos.faults": ("chaos.faults", "chaos.events", "chaos.errors", "chaos.backends.base", "chaos.containers.engine",
                     "chaos.plugins"),
    "chaos.check": ("chaos.check", "chaos.faults", "chaos.events", "chaos.contract"),
    "chaos.reports": ("chaos.reports", "chaos.check", "chaos.errors", "chaos.events", "chaos.faults"),
    "chaos.scenario": ("chaos.contract", "chaos.errors", "chaos.events", "chaos.faults", "chaos.names",
                       "chaos.queue_model", "chaos.target", "chaos.usercode"),
    "chaos.discovery": ("chaos.events", "chaos.errors", "chaos.plugins", "chaos.scenario", "chaos.target"),
    "chaos.known_answers": ("chaos.discovery", "chaos.errors", "chaos.suite"),
    "chaos.containment": ("chaos.events", "chaos.procs"),
    "chaos.leftovers": ("chaos.events", "chaos.ledger", "chaos.containment", "chaos.procs"),
    "chaos.toxiproxy": ("chaos.toxiproxy", "chaos.errors", "chaos.ports", "chaos.procs"),
    "chaos.runtime": ("chaos",),
    "chaos.authoring": ("chaos",),
    "chaos.suite": ("chaos",),
    "chaos.explore": ("chaos",),
    # What a found scenario file imports when it runs: the schedule language and its interpreter only.
    "chaos.explore.schedule": ("chaos.errors", "chaos.events", "chaos.faults"),
    "chaos.explore.play": ("chaos.errors", "chaos.events", "chaos.explore.schedule", "chaos.scenario"),
    "chaos.pytest_plugin": ("chaos",),
    "chaos.cli": ("chaos",),
    "chaos.reference": ("chaos",),  # the docs' generated pages: read anything, imported by nothing
    "chaos.doctor": ("chaos.backends", "chaos.containers", "chaos.errors", "chaos.faults"),
    "chaos.__main__": ("chaos.cli",),
    # The package itself names every export for mypy (under TYPE_CHECKING); when it runs it imports nothing,
    # and the registry (for a backend kind's exported names) on first use.
    "chaos": ("chaos",),
}


def loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after `statement` (this one may hold anything already)."""
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_the_checker_loads_no_runtime_backend_or_process_code() -> None:
    loaded = loaded_by("import chaos.check.checker, chaos.reports")
    assert "chaos.check.checker" in loaded and "chaos.faults.kill" in loaded
    forbidden = ("chaos.runtime", "chaos.backends.postgres", "chaos.backends.registry", "psutil", "psycopg",
                 "subprocess", "socket")
    assert sorted(m for m in loaded if m.startswith(forbidden)) == []


def test_the_package_itself_loads_nothing_of_chaos_when_imported() -> None:
    assert sorted(m for m in loaded_by("import chaos") if m.startswith("chaos.")) == []


@pytest.mark.parametrize("statement", ["from chaos import probe", "import chaos.probe as probe"])
def test_a_workers_probe_import_loads_no_checker_sqlite_or_toml(statement: str) -> None:
    loaded = loaded_by(f"{statement}; assert probe.send")
    assert "chaos.worker.probe" in loaded
    forbidden = ("chaos.check", "chaos.runtime", "chaos.backends", "chaos.faults", "chaos.reports", "chaos.ledger",
                 "sqlite3", "_sqlite3", "tomllib", "psutil", "psycopg")
    assert sorted(m for m in loaded if m.startswith(forbidden)) == []


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _chaos_imports(tree: ast.Module) -> list[str]:
    """The chaos names a file imports: at the top, inside functions and under `if TYPE_CHECKING:` alike."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chaos"):
            found += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("chaos")]
    return found


LIBRARY = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", LIBRARY, ids=[str(p.relative_to(PACKAGE)) for p in LIBRARY])
def test_imports_point_one_way_down_the_layers(path: Path) -> None:
    module = _module(path)
    layer = max((name for name in LAYERS if module == name or module.startswith(name + ".")), key=len)
    allowed = LAYERS[layer]
    upward = [imported for imported in _chaos_imports(ast.parse(path.read_text()))
              if not any(imported == a or imported.startswith(a + ".") for a in allowed)]
    assert upward == [], f"{module} (layer {layer}) may import only {allowed}"


MODULES = {_module(path): path for path in LIBRARY}


def _imported_module(name: str) -> str:
    """The module an imported name lives in: itself where it is a module, else the module that defines it."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """Each chaos module -> the chaos modules its import statements name (TYPE_CHECKING ones included). A
    package's own __init__, which Python runs before any of its modules, is an edge only where named."""
    return {module: {_imported_module(name) for name in _chaos_imports(ast.parse(path.read_text()))} - {module}
            for module, path in MODULES.items()}


def test_no_import_cycle_among_chaos_modules() -> None:
    graph = import_graph()
    assert "chaos.check.history" in graph["chaos.check.scan"] and "chaos.events" in graph["chaos.faults.base"]
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as cycle:
        pytest.fail(f"import cycle: {' -> '.join(cycle.args[1])}")


@pytest.mark.parametrize("path", WORKER_SIDE, ids=[p.name for p in WORKER_SIDE])
def test_worker_side_code_parses_as_python_3_8(path: Path) -> None:
    ast.parse(path.read_text(), str(path), feature_version=(3, 8))


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every `from M import N` of chaos, and (M, "") for every `import chaos...`."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chaos"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name.startswith("chaos")]
    return found


BUNDLED = sorted([*bundled("targets").glob("*/*.py"), *bundled("scenarios").glob("*.py")])


@pytest.mark.parametrize("path", BUNDLED, ids=[f"{p.parent.name}/{p.name}" for p in BUNDLED])
def test_bundled_targets_and_scenarios_use_only_the_public_surface(path: Path) -> None:
    private = [f"{module}.{name}" if name else module for module, name in _imports(path)
               if name not in PUBLIC.get(module, set())]
    assert private == [], f"{path} imports names outside chaos.__all__ / chaos.worker(.<backend>).__all__"


def test_every_public_name_resolves() -> None:
    for name in chaos.__all__:
        assert getattr(chaos, name) is not None
    assert sorted(chaos.__all__) == sorted(chaos._EXPORTS)
    # A kind's names come from its package's EXPORTS, each a class of the module it names.
    assert {"TableQueueControl", "SqsQueueControl", "StreamObserver"} <= set(exports())
    for name, module in exports().items():
        assert getattr(chaos, name).__module__ == module, name
    assert set(dir(chaos)) >= set(chaos.__all__) | set(exports())
