"""The known-answer matrix, as data beside the bundled targets (targets/known_answers.toml): which
verdict each target and variant must give on each scenario, every time, and which violation it must
name. It is a suite file (`chaos suite targets/known_answers.toml` runs it, `chaos.suite.spec` reads it);
the matrix test, the docs' check, the repeat and the mutation-score benchmarks read it from here.

Every target the file calls `correct` passes every scenario found (chaos.discovery: in this repository,
the bundled ones): a pass cell is made for each pair the file does not list itself, so a new scenario is
a known answer for every correct target at once.
The listed cells are the ones with something to say (a broken variant and the violation that catches
it, exact counts, a recovery bound), and docs/reference/known-answers.md shows exactly those."""

from __future__ import annotations

import tomllib
from pathlib import Path

from chaos.discovery import bundled
from chaos.errors import ConfigError
from chaos.suite.cell import Cell
from chaos.suite.spec import load_suite

__all__ = ["Cell", "bundled_scenarios", "correct_targets", "load", "matrix_file"]


def matrix_file() -> Path:
    return bundled("targets") / "known_answers.toml"


def load(path: Path | None = None) -> list[Cell]:
    """The listed cells, then a pass cell for each correct target and scenario not listed."""
    return list(load_suite(path or matrix_file()).cells)


def correct_targets(path: Path | None = None) -> list[str]:
    """The targets that must pass every scenario (except where a listed cell says otherwise)."""
    file = path or matrix_file()
    try:
        correct = tomllib.loads(file.read_text()).get("correct", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{file} is not a readable known-answer matrix ({exc!r}).") from exc
    return [str(target) for target in correct]


def bundled_scenarios() -> list[str]:
    return sorted(p.stem for p in bundled("scenarios").glob("*.py") if not p.name.startswith("_"))
