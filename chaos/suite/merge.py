"""`chaos merge DIR...`: shards' outputs joined into one suite report, as if one machine had run them all.

Each DIR is what `chaos suite --shard K/N --out DIR` wrote. The shards must be of one suite, and no run
may appear twice (overlapping shards); a shard's run dirs keep their place, named relative to the
merged output. The duration is the longest shard's (they ran side by side).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from chaos.errors import ConfigError
from chaos.suite.report import SCHEMA, suite_document, write_suite_reports


def merge(dirs: list[Path], out: Path) -> dict[str, Any]:
    documents = [(directory, _read(directory)) for directory in dirs]
    suites = {str(document["suite"]) for _, document in documents}
    if len(suites) > 1:
        raise ConfigError(f"chaos merge: the directories hold runs of different suites ({', '.join(sorted(suites))}); "
                          "merge the shards of one suite at a time.")
    out.mkdir(parents=True, exist_ok=True)
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
    shards = sorted({shard for _, document in documents for shard in document["shards"]})
    merged = suite_document(cells, suite=suites.pop(), shards=shards,
                            duration_s=max(float(document["duration_s"]) for _, document in documents))
    write_suite_reports(out, merged)
    return merged


def _read(directory: Path) -> dict[str, Any]:
    path = directory / "suite.json"
    try:
        document: dict[str, Any] = json.loads(path.read_text())
        if document.get("schema") != SCHEMA or not isinstance(document.get("cells"), list):
            raise ValueError(f"schema {document.get('schema')!r}")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"chaos merge: {path} is no suite report ({exc}); expected the directory a "
                          "`chaos suite --out DIR` wrote, holding its suite.json.") from exc
    return document
