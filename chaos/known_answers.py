"""The known-answer matrix, as data beside the bundled targets (targets/known_answers.toml): which
verdict each target and variant must give on each scenario, every time, and which violation it must
name. The matrix test, the README check, the repeat and the mutation-score benchmarks read it from here.

Every target the file calls `correct` passes every bundled scenario: a pass cell is made for each pair
the file does not list itself, so a new scenario is a known answer for every correct target at once.
The listed cells are the ones with something to say (a broken variant and the violation that catches
it, exact counts, a recovery bound), and README's table shows exactly those."""

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
    contract: tuple[str, ...] = ()  # `-c key=value`: a promise the variant is held to beyond target.toml's
    rule: str | None = None  # for a broken variant: the rule it breaks
    scenario_params: tuple[str, ...] = ()  # `-s key=value`: the scenario's PARAMS
    anomalies: tuple[str, ...] | None = None  # exactly the anomaly kinds the report must show (None: unchecked)
    min_recovery_s: float | None = None  # every recovery slower than this (a timeout the queue must wait out)
    server_bug: str | None = None  # a known bug of the server that can leave the job unrecovered (the test says so)
    listed: bool = True  # written in the file (else made for a correct target)

    @property
    def variant(self) -> str:
        return " ".join([self.target, *self.params, *(f"-c {c}" for c in self.contract)])

    @property
    def id(self) -> str:
        return "-".join([self.target, *self.params, *self.contract, self.scenario, *self.scenario_params])

    @property
    def scenario_variant(self) -> str:
        return " ".join([self.scenario, *(f"-s {p}" for p in self.scenario_params)])

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def argv(self, seed: int, runs_dir: Path) -> list[str]:
        """The `chaos run` arguments of this cell."""
        args = ["run", "--target", self.target, "--scenario", self.scenario, "--seed", str(seed),
                "--runs-dir", str(runs_dir)]
        for param in self.params:
            args += ["-p", param]
        for key in self.contract:
            args += ["-c", key]
        for key in self.scenario_params:
            args += ["-s", key]
        return args


def matrix_file() -> Path:
    return bundled("targets") / "known_answers.toml"


def load(path: Path | None = None) -> list[Cell]:
    """The listed cells, then a pass cell for each correct target and bundled scenario not listed."""
    file = path or matrix_file()
    raw = _read(file)
    try:
        listed = [_cell(entry) for entry in raw["cell"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(file, exc) from exc
    plain = {(c.target, c.scenario) for c in listed if not c.params and not c.contract and not c.scenario_params}
    made = [Cell(target, scenario, "pass", listed=False) for target in _correct(raw, file)
            for scenario in bundled_scenarios() if (target, scenario) not in plain]
    return listed + made


def correct_targets(path: Path | None = None) -> list[str]:
    """The targets that must pass every scenario (except where a listed cell says otherwise)."""
    file = path or matrix_file()
    return _correct(_read(file), file)


def _correct(raw: dict[str, Any], file: Path) -> list[str]:
    correct = raw.get("correct", [])
    if not isinstance(correct, list):
        raise _unreadable(file, TypeError(f"correct = {correct!r}"))
    return [str(target) for target in correct]


def bundled_scenarios() -> list[str]:
    return sorted(p.stem for p in bundled("scenarios").glob("*.py") if not p.name.startswith("_"))


def _read(file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise _unreadable(file, exc) from exc


def _unreadable(file: Path, exc: Exception) -> ConfigError:
    return ConfigError(f"{file} is not a readable known-answer matrix ({exc!r}): expected [[cell]] tables with "
                       "target, scenario and verdict (pass or fail), and correct = [target, ...].")


def _cell(entry: dict[str, Any]) -> Cell:
    if entry["verdict"] not in EXIT_CODES:
        raise ValueError(f"verdict {entry['verdict']!r}")
    return Cell(entry["target"], entry["scenario"], entry["verdict"], entry.get("violation"),
                tuple(entry.get("params", ())), entry.get("max_recovery_s"), dict(entry.get("counts", {})),
                tuple(entry.get("witness_order", ())), tuple(entry.get("contract", ())), entry.get("rule"),
                tuple(entry.get("scenario_params", ())),
                None if entry.get("anomalies") is None else tuple(entry["anomalies"]),
                min_recovery_s=entry.get("min_recovery_s"), server_bug=entry.get("server_bug"))
