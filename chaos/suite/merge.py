"""`chaos merge DIR...`: shards' outputs joined into one suite report, as if one machine had run them all.

Each DIR is what `chaos suite --shard K/N --out DIR` wrote. The shards must be of one suite and make up
its whole split, every K of one N once (a shard that wrote nothing, say a machine that died, would
otherwise leave its runs out of a passing report); no run may appear twice. A shard's run dirs keep
their place, named relative to the merged output. The duration is the longest shard's (they ran side by
side).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from chaos.errors import ConfigError
from chaos.suite.report import SCHEMA, fresh_output, suite_document, write_suite_reports


def merge(dirs: list[Path], out: Path) -> dict[str, Any]:
    documents = [(directory, _read(directory)) for directory in dirs]
    suites = {str(document["suite"]) for _, document in documents}
    if len(suites) > 1:
        raise ConfigError(f"chaos merge: the directories hold runs of different suites ({', '.join(sorted(suites))}); "
                          "merge the shards of one suite at a time.")
    _check_whole([shard for _, document in documents for shard in document["shards"] or ["1/1"]])
    fresh_output(out, "Pick another --out for the merge.")
    cells: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], Path] = {}
    for directory, document in documents:
        for cell in document["cells"]:
            run = (str(cell["key"]), int(cell["repeat"]))
            if run in seen:
                raise ConfigError(f"chaos merge: {run[0]} (repeat {run[1]}) was run by both {seen[run]} and "
                                  f"{directory}: the shards overlap. Merge the outputs of one `--shard K/N` split.")
            seen[run] = directory
            moved = dict(cell)
            if cell.get("run_dir"):
                moved["run_dir"] = os.path.relpath(directory / str(cell["run_dir"]), out)
            cells.append(moved)
    cells.sort(key=lambda cell: (cell.get("order", 0), cell["key"], cell["repeat"]))  # the whole suite's order
    shards = sorted({shard for _, document in documents for shard in document["shards"]})
    merged = suite_document(cells, suite=suites.pop(), shards=shards,
                            duration_s=max(float(document["duration_s"]) for _, document in documents))
    write_suite_reports(out, merged)
    return merged


def _check_whole(shards: list[str]) -> None:
    """Every K of one N, once each."""
    split = [tuple(int(part) for part in shard.split("/")) for shard in shards]
    counts = {n for _, n in split}
    if len(counts) != 1:
        raise ConfigError(f"chaos merge: the shards come from different splits ({', '.join(shards)}); merge the "
                          "shards of one `--shard K/N` split, all with the same N.")
    (count,) = counts
    indexes = sorted(k for k, _ in split)
    if indexes != list(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - set(indexes))
        twice = sorted({k for k in indexes if indexes.count(k) > 1})
        raise ConfigError("chaos merge: the shards do not make up the whole suite: "
                          + (f"missing {', '.join(f'{k}/{count}' for k in missing)}" if missing else "")
                          + ("; " if missing and twice else "")
                          + (f"given twice {', '.join(f'{k}/{count}' for k in twice)}" if twice else "")
                          + ". A missing shard's runs would be left out of the report; run it, or pass its output.")


def _read(directory: Path) -> dict[str, Any]:
    path = directory / "suite.json"
    try:
        document: dict[str, Any] = json.loads(path.read_text())
        if document.get("schema") != SCHEMA:
            raise ValueError(f"schema {document.get('schema')!r}")
        _check_shape(document)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"chaos merge: {path} is no suite report ({exc}); expected the directory a "
                          "`chaos suite --out DIR` wrote, holding its suite.json.") from exc
    return document


def _check_shape(document: dict[str, Any]) -> None:
    """The keys a merge reads, present and of their kind (ValueError naming the first that is not)."""
    for key, kind in (("suite", str), ("shards", list), ("duration_s", (int, float)), ("cells", list)):
        if not isinstance(document.get(key), kind):
            raise ValueError(f"its {key} is {document.get(key)!r}")
    for shard in document["shards"]:
        if not isinstance(shard, str) or not re.fullmatch(r"\d+/\d+", shard):
            raise ValueError(f"its shard {shard!r} is no K/N")
    for cell in document["cells"]:
        if not (isinstance(cell, dict) and isinstance(cell.get("key"), str) and isinstance(cell.get("repeat"), int)):
            raise ValueError(f"a cell without its key and repeat: {str(cell)[:120]}")
