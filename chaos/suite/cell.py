"""A suite's cell: one target variant (its -p and -c overrides) on one scenario variant (its -s choices),
with the verdict it must give and what else its verdict must show; and one planned run of it (a seed, a
repeat), keyed so that shards, merges and stored durations agree on which run is which. A cell's JSON
form is what a shard's plan records of it, read back by a merge from a file it did not write."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.check.verdict import EXIT_CODES
from chaos.names import id_part

# What a cell may expect: skipped (the scenario's REQUIRES refuses the contract), error (the target's,
# with harness_error)
VERDICTS = ("pass", "fail", "inconclusive", "skipped", "error")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# What the JSON of each kind of field a Cell declares must be.
_JSON_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "str": (lambda value: isinstance(value, str), "a string"),
    "str | None": (lambda value: value is None or isinstance(value, str), "a string or null"),
    "bool": (lambda value: isinstance(value, bool), "true or false"),
    "float | None": (lambda value: value is None or _number(value), "a number or null"),
    "tuple[str, ...]": (_strings, "a list of strings"),
    "tuple[str, ...] | None": (lambda value: value is None or _strings(value), "a list of strings or null"),
    "dict[str, int]": (lambda value: isinstance(value, dict) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value.values()), "a table of whole numbers"),
}


@dataclass(frozen=True)
class Cell:
    target: str
    scenario: str
    verdict: str = "pass"
    violation: str | None = None
    params: tuple[str, ...] = ()  # `-p key=value`: the target's [params] or [server] settings
    max_recovery_s: float | None = None  # every recovery faster than this
    counts: dict[str, int] = field(default_factory=dict)  # exact job counts in verdict.json
    witness_order: tuple[str, ...] = ()  # event kinds the violation's witness shows, in this order
    contract: tuple[str, ...] = ()  # `-c key=value`: a promise the variant is held to beyond target.toml's
    rule: str | None = None  # for a broken variant: the rule it breaks
    scenario_params: tuple[str, ...] = ()  # `-s key=value`: the scenario's PARAMS
    anomalies: tuple[str, ...] | None = None  # exactly the anomaly kinds the report must show (None: unchecked)
    min_recovery_s: float | None = None  # every recovery slower than this (a timeout the queue must wait out)
    server_bug: str | None = None  # a known bug of the server that can leave the job unrecovered
    listed: bool = True  # written in the file (else made for a target that passes every scenario)
    backend: str | None = None  # --backend: the provider of the target's backend kind (None: local)
    worker_image: str | None = None  # --worker-image: the workers run in containers of it
    # Why this variant's answer stands for the plain target's on the scenario (which then gets no pass cell):
    # a setting the answer needs to be the same on every machine, such as a longer lease.
    instead_of_default: str | None = None
    # For a broken variant whose workers break the probe protocol (verdict "error"): a text the verdict's
    # error must contain, naming what the target did wrong (a harness error of the target, not the suite's).
    harness_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The fields that differ from their defaults, in JSON's types."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        defaults = Cell(self.target, self.scenario)
        return {name: list(value) if isinstance(value, tuple) else value for name, value in fields.items()
                if name in ("target", "scenario") or value != getattr(defaults, name)}

    @classmethod
    def from_json(cls, raw: object) -> Cell:
        """The cell `to_json` gave; ValueError naming the first field that is not of its kind."""
        if not isinstance(raw, dict):
            raise ValueError(f"a cell is {str(raw)[:80]!r}, not a table")
        declared = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - set(declared))
        if unknown or "target" not in raw or "scenario" not in raw:
            raise ValueError(f"a cell of fields {sorted(raw)[:20]}; expected target, scenario and among "
                             f"{', '.join(declared)}")
        values: dict[str, Any] = {}
        for name, value in raw.items():
            fits, kind = _JSON_KINDS[str(declared[name].type)]
            if not fits(value):
                raise ValueError(f"the cell {raw['target']!r} x {raw['scenario']!r} has {name} = {str(value)[:80]}, "
                                 f"not {kind}")
            values[name] = tuple(value) if isinstance(value, list) else float(value) if _number(value) else value
        if values.get("verdict", "pass") not in VERDICTS:
            raise ValueError(f"the cell {raw['target']!r} x {raw['scenario']!r} expects the verdict "
                             f"{values['verdict']!r}, not one of {', '.join(VERDICTS)}")
        return cls(**values)

    @property
    def variant(self) -> str:
        return " ".join([self.target, *self.params, *(f"-c {c}" for c in self.contract), *self._settings(" ")])

    def _settings(self, sep: str) -> list[str]:
        """Where it runs, where that is not the default: its provider, its workers' image."""
        return ([f"--backend{sep}{self.backend}"] if self.backend else []) + (
            [f"--worker-image{sep}{self.worker_image}"] if self.worker_image else [])

    @property
    def id(self) -> str:
        """The cell's name in keys and test ids: a contract or scenario setting is marked as such (c:, s:),
        so that no two different cells share one."""
        return "-".join([self.target, *self.params, *(f"c:{c}" for c in self.contract), *self._settings("="),
                         self.scenario,
                         *(f"s:{p}" for p in self.scenario_params)])

    @property
    def scenario_variant(self) -> str:
        return " ".join([self.scenario, *(f"-s {p}" for p in self.scenario_params)])

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def argv(self, seed: int, runs_dir: Path) -> list[str]:
        """The `chaos run` arguments of this cell."""
        return ["run", "--target", self.target, "--scenario", self.scenario, "--seed", str(seed),
                "--runs-dir", str(runs_dir), *self.settings_argv()]

    def settings_argv(self) -> list[str]:
        """The arguments of its settings: -p, -c, -s, where it runs."""
        args: list[str] = []
        for param in self.params:
            args += ["-p", param]
        for key in self.contract:
            args += ["-c", key]
        for key in self.scenario_params:
            args += ["-s", key]
        if self.backend:
            args += ["--backend", self.backend]
        if self.worker_image:
            args += ["--worker-image", self.worker_image]
        return args


@dataclass(frozen=True)
class Planned:
    """One run of a cell: its seed and, under --repeat, which repetition."""

    cell: Cell
    seed: int
    repeat: int = 1

    @property
    def key(self) -> str:
        """Stable across machines and runs: what a shard, a merge and stored durations key by."""
        return f"{self.cell.id}-seed{self.seed}"

    @property
    def run_key(self) -> str:
        """This very repetition as a directory name: the key in a safe alphabet, cut short, and a digest
        of it whole (two keys may reduce to one spelling)."""
        whole = self.key if self.repeat == 1 else f"{self.key}-r{self.repeat}"
        return f"{id_part(whole)[:120]}-{hashlib.sha1(whole.encode()).hexdigest()[:8]}"
