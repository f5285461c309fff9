"""The library adapters' findings stay written down: each adapter in the libraries' suite file has a README
that names every bundled scenario with no known-answer cell of its own (not applicable to its backend, a
verdict that varies, a run too long for CI), and names every scenario it has a cell for, so that the README
and the suite cannot drift apart silently. The findings table of docs/library-findings.md lists every adapter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from chaos.known_answers import bundled_scenarios, load
from chaos.suite.spec import load_suite

REPO = Path(__file__).resolve().parent.parent.parent
LIBRARIES = REPO / "targets" / "libraries.toml"


HUEY = "huey_redis"  # the first adapter, written for the target seam: its cells are in the main matrix


def adapters() -> dict[str, set[str]]:
    """Each adapter in the libraries' suite file (and huey's), with the scenarios it has a cell for."""
    found: dict[str, set[str]] = {}
    for cell in [*load_suite(LIBRARIES).cells, *(cell for cell in load() if cell.target == HUEY)]:
        found.setdefault(cell.target, set()).add(cell.scenario)
    return found


def test_the_libraries_suite_lists_every_adapter() -> None:
    folders = {path.parent.name for path in (REPO / "targets").glob("*/README.md")}
    assert {HUEY, "celery_rabbitmq", "celery_redis", "rq_redis", "arq_redis", "dramatiq_redis", "dramatiq_rabbitmq",
            "procrastinate_pg", "pgqueuer_pg"} <= set(adapters()) <= folders


@pytest.mark.parametrize("target", sorted(adapters()))
def test_each_adapter_readme_accounts_for_every_scenario(target: str) -> None:
    readme = (REPO / "targets" / target / "README.md").read_text()
    unnamed = [scenario for scenario in bundled_scenarios() if f"`{scenario}" not in readme]
    assert not unnamed, f"targets/{target}/README.md never names {unnamed}: say what each gave, or why it has no cell"


@pytest.mark.parametrize("target", sorted(adapters()))
def test_the_findings_table_names_each_adapter(target: str) -> None:
    page = (REPO / "docs" / "library-findings.md").read_text()
    assert f"`{target}`" in page, f"docs/library-findings.md's findings table has no row for {target}"


def imported_modules(path: Path) -> list[str]:
    """Every module (and name imported from one) that `path` imports, dotted."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


@pytest.mark.parametrize("target", sorted(adapters()))
def test_no_adapter_imports_a_private_module(target: str) -> None:
    # The rule: an adapter reports what the library does through its public API (signals, hooks,
    # middleware, the task body), never through a private module or name of the library's.
    private = [f"{path.name}: {name}" for path in sorted((REPO / "targets" / target).glob("*.py"))
               for name in imported_modules(path) if any(part.startswith("_") for part in name.split("."))
               and name != "__future__.annotations"]
    assert not private, private
