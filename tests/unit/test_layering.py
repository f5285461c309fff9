"""The packages import one way, downward, and each audience loads only what it needs: a checker that
pulls in process code is no longer pure, and a worker that pulls in the checker (or a newer Python's
syntax) no longer runs inside the queue's own virtualenv."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import chaos
import chaos.worker
import chaos.worker.postgres
from chaos.discovery import bundled

PACKAGE = Path(chaos.__file__).parent
PUBLIC = {"chaos": set(chaos.__all__), "chaos.worker": set(chaos.worker.__all__),
          "chaos.worker.postgres": set(chaos.worker.postgres.__all__)}
# What runs inside a worker process, or is imported by it: it must parse on the oldest Python a queue uses.
WORKER_SIDE = [PACKAGE / "__init__.py", PACKAGE / "events.py", *sorted((PACKAGE / "worker").glob("*.py"))]


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


def test_a_workers_probe_import_loads_no_checker_sqlite_or_toml() -> None:
    loaded = loaded_by("from chaos import probe; assert probe.send")
    assert "chaos.worker.probe" in loaded
    forbidden = ("chaos.check", "chaos.runtime", "chaos.backends", "chaos.faults", "chaos.reports", "chaos.ledger",
                 "sqlite3", "_sqlite3", "tomllib", "psutil", "psycopg")
    assert sorted(m for m in loaded if m.startswith(forbidden)) == []


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
    assert private == [], f"{path} imports names outside chaos.__all__ / chaos.worker(.postgres).__all__"


def test_every_public_name_resolves() -> None:
    for name in chaos.__all__:
        assert getattr(chaos, name) is not None
    assert sorted(chaos.__all__) == sorted(chaos._EXPORTS)
