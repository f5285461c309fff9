"""The plan: the suite as `chaos suite` resolved it (every cell with its known answer, the seeds, the
repeats) and dealt it into shards, which every shard records whole in its suite.json.

From it a merge proves that its shards come from one suite and one dealing, that every run of the suite
ran exactly once and in the shard it was dealt to, and it judges each run against the plan's cell rather
than against what a shard's report says of the run. The digest names the resolved suite (not its file:
one file resolves differently after an edit, under other --seeds, or with other targets installed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.suite.cell import Cell, Planned
from chaos.suite.shard import deal, durations_digest
from chaos.suite.spec import Suite


@dataclass(frozen=True)
class Plan:
    suite: Suite
    shards: int  # N: how many shards the runs were dealt into (1: not sharded)
    durations: str | None  # the digest of the stored durations the keys were dealt by; None: round-robin
    dealt: dict[str, int]  # each run key's shard, 1 to N

    @classmethod
    def of(cls, suite: Suite, shards: int, durations: dict[str, float] | None) -> Plan:
        """`suite` dealt into `shards` (by `durations` where given, as `chaos suite --durations` does)."""
        dealt = deal((run.key for run in suite.planned()), shards, durations)
        return cls(suite, shards, durations_digest(durations) if durations else None, dealt)

    @property
    def digest(self) -> str:
        """The resolved suite's fingerprint: every cell with its known answer, the seeds and the repeats."""
        text = json.dumps({"cells": [cell.to_json() for cell in self.suite.cells], "seeds": list(self.suite.seeds),
                           "repeat": self.suite.repeat}, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def runs(self) -> list[Planned]:
        """Every run of the plan, in the whole suite's order."""
        return self.suite.planned()

    def dealing(self) -> str:
        """How the keys were dealt, in words."""
        return (f"by the --durations of digest {self.durations[:19]}" if self.durations
                else "round-robin, without --durations")

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "cells": [cell.to_json() for cell in self.suite.cells],
                "seeds": list(self.suite.seeds), "repeat": self.suite.repeat, "shards": self.shards,
                "durations": self.durations, "dealt": self.dealt}

    @classmethod
    def from_json(cls, raw: object, path: Path) -> Plan:
        """The plan a suite.json records, of the suite file at `path`; ValueError saying what
        is not as `to_json` writes it, or does not hold together (a digest that is not its cells', keys
        dealt that its cells do not make)."""
        if not isinstance(raw, dict) or set(raw) != {"digest", "cells", "seeds", "repeat", "shards", "durations",
                                                    "dealt"}:
            raise ValueError(f"its plan is {str(raw)[:120]}, not the table `chaos suite` writes")
        cells, seeds = raw["cells"], raw["seeds"]
        if not isinstance(cells, list) or not cells:
            raise ValueError(f"its plan's cells are {str(cells)[:80]}, not a list of cells")
        if not isinstance(seeds, list) or not seeds or not all(_whole(seed, 0) for seed in seeds):
            raise ValueError(f"its plan's seeds are {str(seeds)[:80]}, not a list of whole numbers")
        if not _whole(raw["repeat"], 1) or not _whole(raw["shards"], 1):
            raise ValueError(f"its plan's repeat ({raw['repeat']!r}) and shards ({raw['shards']!r}) are not both "
                             "whole numbers from 1")
        if not (raw["durations"] is None or isinstance(raw["durations"], str)):
            raise ValueError(f"its plan's durations are {str(raw['durations'])[:80]}, not a digest or null")
        dealt = raw["dealt"]
        if not isinstance(dealt, dict) or not all(_whole(shard, 1) and shard <= raw["shards"]
                                                  for shard in dealt.values()):
            raise ValueError(f"its plan deals {str(dealt)[:80]}, not each run key to a shard from 1 to "
                             f"{raw['shards']}")
        plan = cls(Suite(path, tuple(Cell.from_json(cell) for cell in cells), tuple(seeds), raw["repeat"]),
                   raw["shards"], raw["durations"], dealt)
        if plan.digest != raw["digest"]:
            raise ValueError(f"its plan's digest {str(raw['digest'])[:80]} is not that of the plan's cells, seeds "
                             f"and repeat ({plan.digest}): the plan was edited")
        if set(dealt) != {run.key for run in plan.runs()}:
            raise ValueError("its plan deals other run keys than its cells and seeds make: the plan was edited")
        return plan


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least
