"""The known-answer suite's pace: cells per minute with the suite's shared servers and without them
(`--no-shared-servers`: a server boot per run), and each scenario's time to verdict against its lower
bound (the contract's lease where it has one, else its recovery bound: no run that waits out an
owner's loss can be faster than that).

    python3 benchmarks/suite_throughput.py [--only TEXT] [--jobs 2] [--modes shared,fresh]

--only keeps the cells whose id contains TEXT (e.g. rabbitmq, where sharing matters); the suite file is
written from targets/known_answers.toml. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from chaos.discovery import find_target  # noqa: E402
from chaos.known_answers import load  # noqa: E402


def suite_file(folder: Path, only: str) -> tuple[Path, int]:
    """A suite file of the matrix's cells whose id contains `only`, each with its verdict and violation."""
    lines = []
    cells = [cell for cell in load() if only in cell.id]
    for cell in cells:
        lines += ["[[cell]]", f"target = {json.dumps(cell.target)}", f"scenario = {json.dumps(cell.scenario)}",
                  f"verdict = {json.dumps(cell.verdict)}"]
        for key, values in (("params", cell.params), ("contract", cell.contract),
                            ("scenario_params", cell.scenario_params)):
            if values:
                lines.append(f"{key} = {json.dumps(list(values))}")
        if cell.violation:
            lines.append(f"violation = {json.dumps(cell.violation)}")
        lines.append("")
    path = folder / "chaos.toml"
    path.write_text("\n".join(lines))
    return path, len(cells)


def run(path: Path, folder: Path, mode: str, jobs: int) -> dict[str, Any]:
    out = folder / mode
    argv = [sys.executable, "-m", "chaos", "suite", str(path), "-j", str(jobs), "--out", str(out)]
    if mode == "fresh":
        argv.append("--no-shared-servers")
    began = time.monotonic()
    subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    took = time.monotonic() - began
    document: dict[str, Any] = json.loads((out / "suite.json").read_text())
    document["wall_s"] = took
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--modes", default="shared,fresh")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="queue-chaos-suite-bench-"))
    path, count = suite_file(folder, args.only)
    print(f"{count} cells{f' matching {args.only!r}' if args.only else ''}, -j {args.jobs}")
    first: dict[str, Any] = {}
    for mode in args.modes.split(","):
        document = run(path, folder, mode, args.jobs)
        cells, wall = document["cells"], float(document["wall_s"])
        shared = sum(1 for cell in cells if cell["shared_server"])
        print(f"{mode:>6}: {len(cells)} cells in {wall:.0f}s = {len(cells) / wall * 60:.1f} cells/min "
              f"({shared} on a shared server); statuses {document['counts']}")
        first = first or document
    print("time to verdict by scenario (median over its cells, the first mode's runs) against its lower bound:")
    by_scenario: dict[str, list[tuple[float, float]]] = {}
    for cell in first.get("cells", []):
        contract = find_target(cell["target"]).contract
        bound = contract.lease_s or contract.recovery_bound_s
        by_scenario.setdefault(cell["scenario"], []).append((float(cell["duration_s"]), float(bound)))
    for scenario, pairs in sorted(by_scenario.items()):
        took = statistics.median(t for t, _ in pairs)
        bound = statistics.median(b for _, b in pairs)
        print(f"  {scenario:<38} {took:6.1f}s  bound {bound:4.1f}s  x{took / bound:4.1f}  ({len(pairs)} cells)")


if __name__ == "__main__":
    main()
