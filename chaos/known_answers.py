"""The known-answer matrix, as data beside the bundled targets (targets/known_answers.toml): which
verdict each target and variant must give on each scenario, every time, and which violation it must
name. The matrix test, the README check and the repeat benchmark all read it from here."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.discovery import bundled
from chaos.errors import ConfigError

EXIT_CODES = {"pass": 0, "fail": 1}


@dataclass(frozen=True)
class Cell:
    target: str
    scenario: str
    verdict: str
    violation: str | None = None
    params: tuple[str, ...] = ()
    max_recovery_s: float | None = None
    counts: dict[str, int] = field(default_factory=dict)
    witness_order: tuple[str, ...] = ()

    @property
    def variant(self) -> str:
        return " ".join([self.target, *self.params])

    @property
    def id(self) -> str:
        return "-".join([self.target, *self.params, self.scenario])

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def argv(self, seed: int, runs_dir: Path) -> list[str]:
        """The `chaos run` arguments of this cell."""
        args = ["run", "--target", self.target, "--scenario", self.scenario, "--seed", str(seed),
                "--runs-dir", str(runs_dir)]
        for param in self.params:
            args += ["-p", param]
        return args


def matrix_file() -> Path:
    return bundled("targets") / "known_answers.toml"


def load(path: Path | None = None) -> list[Cell]:
    file = path or matrix_file()
    try:
        raw: dict[str, Any] = tomllib.loads(file.read_text())
        return [_cell(entry) for entry in raw["cell"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{file} is not a readable known-answer matrix ({exc!r}): expected [[cell]] tables "
                          "with target, scenario and verdict (pass or fail).") from exc


def _cell(entry: dict[str, Any]) -> Cell:
    if entry["verdict"] not in EXIT_CODES:
        raise ValueError(f"verdict {entry['verdict']!r}")
    return Cell(entry["target"], entry["scenario"], entry["verdict"], entry.get("violation"),
                tuple(entry.get("params", ())), entry.get("max_recovery_s"), dict(entry.get("counts", {})),
                tuple(entry.get("witness_order", ())))
