"""The suite's power, measured: every broken variant of the known-answer matrix (a reference target with
one rule broken on purpose) against every bundled scenario. Prints which scenarios catch each variant and
with which violations, then the mutation score: variants caught by at least one scenario / all variants.
A variant no scenario catches is a finding (a missing scenario or rule), so it exits 1 then."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from chaos.known_answers import Cell, bundled_scenarios, correct_targets, load  # noqa: E402
from chaos.suite.spec import runnable  # noqa: E402


def variants() -> dict[str, Cell]:
    """One failing cell per broken variant (params or contract overrides on a reference target) or broken
    model (a target that is not correct), by name. A correct target's documented weakness is not one."""
    correct = set(correct_targets())
    found: dict[str, Cell] = {}
    for cell in load():
        if cell.verdict == "fail" and (cell.params or cell.contract or cell.target not in correct):
            found.setdefault(cell.variant, cell)
    return found


def judged(cell: Cell, scenario: str, runs_root: Path) -> tuple[str, list[str]]:
    """The verdict of one run of the variant against the scenario, and the violations it named."""
    probe = Cell(cell.target, scenario, "fail", params=cell.params, contract=cell.contract)
    runs_dir = Path(tempfile.mkdtemp(dir=runs_root))
    done = subprocess.run([sys.executable, "-m", "chaos", *probe.argv(1, runs_dir)], cwd=REPO, capture_output=True,
                          text=True, check=False)
    made = list(runs_dir.iterdir())
    if len(made) != 1 or not (verdict_file := made[0] / "verdict.json").exists():
        return f"no verdict (exit {done.returncode}: {done.stderr.strip()[-200:]})", []
    verdict = json.loads(verdict_file.read_text())
    return verdict["verdict"], sorted({v["kind"] for v in verdict["violations"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="run only variants whose name contains this text")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each is its own server and workers)")
    args = parser.parse_args()
    runs_dir = Path(tempfile.mkdtemp(prefix="queue-chaos-mutants-"))
    scenarios = bundled_scenarios()
    chosen = {name: cell for name, cell in variants().items() if args.only in name}
    caught = 0
    began = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        # each variant against every scenario a run of it can take here (not those needing containers)
        taken = {name: [scenario for scenario in scenarios if runnable(cell.target, scenario)]
                 for name, cell in chosen.items()}
        results = {name: [pool.submit(judged, cell, scenario, runs_dir) for scenario in taken[name]]
                   for name, cell in chosen.items()}
        for name, cell in chosen.items():
            outcomes = [(scenario, *future.result())
                        for scenario, future in zip(taken[name], results[name], strict=True)]
            catchers = [f"{scenario} ({', '.join(kinds)})" for scenario, verdict, kinds in outcomes
                        if verdict == "fail"]
            caught += bool(catchers)
            print(f"{'caught' if catchers else 'MISSED'} {name}  [{cell.rule}]", flush=True)
            for catcher in catchers:
                print(f"    by {catcher}", flush=True)
    print(f"mutation score: {caught}/{len(chosen)} broken variants caught, up to {len(scenarios)} scenarios each, "
          f"{time.monotonic() - began:.0f}s; run dirs in {runs_dir}")
    sys.exit(0 if caught == len(chosen) else 1)


if __name__ == "__main__":
    main()
