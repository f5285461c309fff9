"""Real witnesses for the violations page: for each violation kind, the message and witness lines a real run
gave, as the text report prints them, with that run's reproduce line. `python3 -m chaos.reference.witnesses`
captures them into WITNESSES (docs/reference/witnesses.json) by running each kind's first known-answer cell
(a kind no cell names has its run in RUNS); `--from DIR` takes them from the runs already under DIR instead
(the output of `chaos suite targets/known_answers.toml`, say), preferring each kind's cell. The page shows only
what this file holds, never invented text."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos import events
from chaos.check.checker import judge
from chaos.check.violation_kinds import VIOLATION_KINDS
from chaos.discovery import bundled
from chaos.known_answers import bundled_scenarios, load
from chaos.ledger import Ledger
from chaos.reference import DOCS, REPO
from chaos.reports.text import witness_line
from chaos.runtime.sink import Sink
from chaos.suite.cell import Cell
from chaos.suite.spec import load_suite

WITNESSES = DOCS / "reference" / "witnesses.json"
LIBRARIES = REPO / "targets" / "libraries.toml"
LINES = 10  # the witness's last lines: where the violation shows (with the lines its proof cites)
# Kinds no bundled target's cell names (none, or only a library adapter's, which needs that library and its
# broker): the `chaos run` of a bundled target that shows each.
RUNS: dict[str, tuple[str, ...]] = {
    "heartbeat_gap": ("--target", "pg_lease", "--scenario", "lease_shorter_than_handler", "-p", "heartbeat=inline"),
    # pg_lease redelivers a killed owner's job, as at-least-once allows; held to exactly-once-effect, it fails
    "redelivered": ("--target", "pg_lease", "--scenario", "kill_after_effect_before_ack", "-c",
                    "delivery=exactly-once-effect"),
}
# A job no one enqueued: no target does that on its own, so a real worker process reports an effect for one
# through the real sink into a real ledger, which the checker then judges.
GHOST = ("import chaos.probe as probe; probe.claim('ghost', 't1'); probe.effect('ghost', 't1'); "
         "probe.ack('ghost', 't1', True)")


@dataclass(frozen=True)
class Witness:
    kind: str
    command: str  # how to see it again
    source: str  # what that command is
    job: str | None
    message: str
    lines: list[str]
    # the violation's minimal proof as the run gave it ({says, seq, t} each) and its conclusion; empty in a
    # witness captured before the checker gave proofs
    proof: list[dict[str, Any]] = field(default_factory=list)
    conclusion: str = ""


def load_witnesses(path: Path = WITNESSES) -> dict[str, Witness]:
    return {entry["kind"]: Witness(**entry) for entry in json.loads(path.read_text())}


def _cell_of(kind: str) -> tuple[Cell, str] | None:
    """The first known-answer cell that names `kind`, with its file."""
    cells = ([(cell, "targets/known_answers.toml") for cell in load()]
             + [(cell, f"targets/{cell.target}/known_answers.toml") for cell in load_suite(LIBRARIES).cells])
    return next(((cell, file) for cell, file in cells if cell.violation == kind), None)


def _found(kind: str, verdict: dict[str, Any], source: str) -> Witness | None:
    for violation in verdict["violations"]:
        if violation["kind"] == kind:
            # the last lines, where the violation shows, and each earlier one a premise of its proof cites
            cited = {p.get("seq") for p in violation.get("proof") or []}
            entries = violation["witness"]
            lines = [witness_line(entry) for n, entry in enumerate(entries)
                     if n >= len(entries) - LINES or entry.get("seq") in cited]
            command = verdict["reproduce"] or f'python3 -c "{GHOST}"'
            return Witness(kind, command, source, violation["job"], violation["message"], lines,
                           list(violation.get("proof") or []), str(violation.get("conclusion") or ""))
    return None


def _run(argv: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="chaos-witness-") as runs:
        subprocess.run([sys.executable, "-m", "chaos", "run", "--seed", "1", "--runs-dir", runs, *argv],
                       capture_output=True, text=True, check=False)
        found = sorted(Path(runs).glob("*/verdict.json"))
        if not found:
            raise SystemExit(f"chaos run {' '.join(argv)} wrote no verdict.json")
        verdict: dict[str, Any] = json.loads(found[0].read_text())
        return verdict


def _ghost() -> dict[str, Any]:
    """A real ledger with an effect for a job that was never enqueued, judged."""
    with tempfile.TemporaryDirectory(prefix="chaos-witness-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        try:
            ledger.append(events.run_start(target="ghost", scenario="ghost", seed=1,
                                           contract={"recovery_bound_s": 1.0}))
            with Sink(ledger) as sink:
                env = {"CHAOS_SINK_URL": sink.url, "CHAOS_RUN_TOKEN": sink.token, "CHAOS_WORKER_ID": "w1",
                       "PYTHONPATH": str(REPO)}
                subprocess.run([sys.executable, "-c", GHOST], env=env, check=True)
            ledger.append(events.snapshot_taken(0))
            ledger.append(events.run_end("completed", ""))
            return judge(ledger.events()).to_dict()
        finally:
            ledger.close()


def capture(kind: str) -> Witness | None:
    """Run what shows `kind` and take its witness (None: the run showed none)."""
    if kind == "unexpected":
        return _found(kind, _ghost(), "a worker's probes through the real sink, judged")
    cell = _cell_of(kind)
    if kind in RUNS or cell is None:
        return _found(kind, _run(list(RUNS[kind])), "a run of a bundled target")
    argv = ["--target", cell[0].target, "--scenario", cell[0].scenario, *cell[0].settings_argv()]
    return _found(kind, _run(argv), f"a cell of {cell[1]}")


def _verdicts(roots: list[Path]) -> Iterator[dict[str, Any]]:
    for root in roots:
        for path in sorted(root.rglob("verdict.json")):
            if not (path.parent / "ledger.sqlite").exists():
                continue  # not a run's (a suite's report, a test's hand-made file)
            try:
                found: dict[str, Any] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if found.get("reproduce") and found.get("violations"):
                yield found


def _same_run(reproduce: str, cell: Cell) -> bool:
    """Whether `reproduce` (a verdict's `chaos run` line) runs `cell`, whatever its seed."""
    argv = shlex.split(reproduce)[2:]
    if "--seed" in argv:
        del argv[argv.index("--seed"):argv.index("--seed") + 2]
    return sorted(argv) == sorted(["--target", cell.target, "--scenario", cell.scenario, *cell.settings_argv()])


def harvest(kind: str, roots: list[Path]) -> Witness | None:
    """The witness of `kind` in the runs under `roots` (each a run dir with its ledger) of a bundled target and
    scenario: a run of its known-answer cell if there is one."""
    cell = _cell_of(kind)
    fallback = None
    targets, scenarios = {p.parent.name for p in bundled("targets").glob("*/target.toml")}, bundled_scenarios()
    for verdict in _verdicts(roots):
        if verdict.get("target") not in targets or verdict.get("scenario") not in scenarios:
            continue  # a test's own target or scenario, which a reader cannot run
        if cell is not None and _same_run(verdict["reproduce"], cell[0]):
            found = _found(kind, verdict, f"a cell of {cell[1]}")
            if found is not None:
                return found
        fallback = fallback or _found(kind, verdict, "a run of a bundled target")
    return fallback


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m chaos.reference.witnesses", description=__doc__)
    parser.add_argument("kinds", nargs="*", help="the kinds to capture (default: every one)")
    parser.add_argument("--from", dest="roots", type=Path, action="append", default=[],
                        help="take witnesses from the runs under this directory instead of running (repeatable)")
    args = parser.parse_args(argv)
    missing = []
    for kind in args.kinds or list(VIOLATION_KINDS):
        found = harvest(kind, args.roots) if args.roots and kind != "unexpected" else capture(kind)
        print(f"{kind}: {found.command if found else 'NOT FOUND'}", flush=True)
        if found is None:
            missing.append(kind)
            continue
        kept = {**(load_witnesses() if WITNESSES.exists() else {}), kind: found}  # the file as it is now
        WITNESSES.write_text(json.dumps([asdict(kept[k]) for k in VIOLATION_KINDS if k in kept], indent=2) + "\n")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
