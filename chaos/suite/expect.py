"""Whether a run gave what its cell says it must: the verdict, the violation (with its witness, in the
order stated), every fault exercised, the exact counts, the recovery bounds and the anomalies.

A cell's status in the suite:
- `pass`: the run gave its known answer, whatever that answer is (a broken variant failing as it must);
- `fail`: it did not (another verdict, or the right verdict without what the cell says it shows);
- `inconclusive`: the run proved nothing (a fault never exercised, no job judged) where that was not the
  answer: the suite cannot say whether the queue keeps its promise;
- `error`: the harness, the target's code or the run itself broke (no verdict, or an `error` verdict),
  unless the cell expects that error (`verdict = "error"`, a variant that breaks the probe protocol:
  then it is `pass` when the error says the cell's `harness_error`, else `fail`);
- `xfail`: the one deviation a cell forgives: no recovery at all where it names a known bug of the server
  (`server_bug`), otherwise its known answer exactly;
- `skipped`: the cell's known answer is that the scenario cannot run against the variant's contract (its
  REQUIRES), and the run was skipped with the reason; counted apart from passes, as nothing was proven. A
  skipped run where the cell expects another verdict is a `fail` (the known answer changed).

`chaos suite` judges each run as it ends, and `chaos merge` judges it again from the shard's files with
the same code (`judge_run`), after checking that what it reads is what this code can read (`unreadable`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from chaos.check.verdict import PREMISE_NOT_HELD
from chaos.suite.cell import Cell

STATUSES = ("pass", "xfail", "skipped", "inconclusive", "fail", "error")
# A suite's exit code is its worst cell's: a harness error over a wrong answer over a run that proved nothing;
# a skipped cell is below a pass (a suite of skipped cells alone proved nothing, so exits 5, not 0).
SEVERITY = {"skipped": -1, "pass": 0, "xfail": 0, "inconclusive": 1, "fail": 2, "error": 3}
STATUS_EXIT_CODES = {"pass": 0, "xfail": 0, "skipped": 5, "inconclusive": 4, "fail": 1, "error": 3}


@dataclass(frozen=True)
class Outcome:
    status: str
    reasons: list[str] = field(default_factory=list)  # why it is not a pass, one line each


def judge_cell(cell: Cell, verdict: dict[str, Any] | None, exit_code: int, output: str = "") -> Outcome:
    """The cell's status from its run's verdict.json (None: the run wrote none) and exit code."""
    if verdict is None:
        tail = " | ".join(output.strip().splitlines()[-3:])
        return Outcome("error", [f"the run wrote no verdict (exit code {exit_code}): {tail or 'no output'}"])
    got = verdict.get("verdict")
    if got == "error" or exit_code in (2, 3):
        error = str(verdict.get("error") or "").strip().splitlines()
        if cell.verdict == "error":
            return _expected_error(cell, "\n".join(error), exit_code)
        return Outcome("error", [f"harness error (exit code {exit_code}): {error[0] if error else 'no detail'}"])
    if got == "inconclusive" and cell.verdict != "inconclusive":
        if cell.server_bug and not (verdict.get("recovery") or {}).get("jobs") and any(
                str(note).startswith(PREMISE_NOT_HELD) for note in verdict.get("notes") or []):
            return Outcome("xfail", [f"no recovery at all: {cell.server_bug}"])  # the bug left the premise unmet
        return Outcome("inconclusive", [f"inconclusive: {'; '.join(verdict.get('notes') or []) or 'no reason given'}"])
    reasons = _differences(cell, verdict, exit_code)
    if got == "skipped" and not reasons:
        return Outcome("skipped", [str(note) for note in verdict.get("notes") or []][:1])
    if (reasons and cell.server_bug and not (verdict.get("recovery") or {}).get("jobs")
            and not _differences(replace(cell, min_recovery_s=None), *_unrecovered_forgiven(verdict, exit_code))):
        return Outcome("xfail", [f"no recovery at all: {cell.server_bug}"])  # otherwise its known answer
    return Outcome("fail" if reasons else "pass", reasons)


def _unrecovered_forgiven(verdict: dict[str, Any], exit_code: int) -> tuple[dict[str, Any], int]:
    """The run as it would be without the missing recovery the server's bug caused: the checker proves that
    reclaim owed (`recovery_bound_exceeded` that nobody reclaimed, its owner back to a lease nobody honoured),
    which is the bug's doing; a run failing on nothing else is otherwise its known answer."""
    violations = list(verdict.get("violations") or [])
    kept = [v for v in violations if v.get("kind") != "recovery_bound_exceeded" or (v.get("detail") or {}).get("by")]
    if len(kept) == len(violations):
        return verdict, exit_code
    if kept:
        return dict(verdict, violations=kept), exit_code
    return dict(verdict, violations=[], verdict="pass"), 0


def _expected_error(cell: Cell, error: str, exit_code: int) -> Outcome:
    """A broken variant whose workers break the probe protocol: the run must be the target's harness error
    (exit 3) whose message names what it did wrong (`harness_error`)."""
    reasons = []
    if exit_code != cell.exit_code:
        reasons.append(f"expected ERROR with exit code {cell.exit_code}, got exit code {exit_code}")
    if cell.harness_error is not None and cell.harness_error not in error:
        first = error.splitlines()[0] if error else "no detail"
        reasons.append(f"expected the harness error to say {cell.harness_error!r}, got: {first}")
    return Outcome("fail" if reasons else "pass", reasons)


def judge_run(cell: Cell, verdict: dict[str, Any] | None, exit_code: int, output: str = "",
              left_behind: tuple[int, ...] = ()) -> Outcome:
    """`judge_cell`, and a run that left processes behind (their pids) is an error whatever its verdict:
    cleanup is part of correctness."""
    outcome = judge_cell(cell, verdict, exit_code, output)
    if not left_behind:
        return outcome
    return Outcome("error", [f"the run left {len(left_behind)} process(es) behind after it ended: "
                             + ", ".join(f"pid {pid}" for pid in left_behind)] + outcome.reasons)


def unreadable(verdict: object) -> str | None:
    """What in a verdict.json from elsewhere (a shard's artifact) `judge_cell` could not read, or None."""
    if not isinstance(verdict, dict):
        return f"it holds {type(verdict).__name__}, not a table"
    lists = {"violations": "kind", "faults": "id", "anomalies": "kind"}
    for name, key in lists.items():
        items = verdict.get(name) or []
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            return f"its {name} are {str(items)[:80]}, not a list of tables each with its {key}"
    for violation in verdict.get("violations") or []:
        witness = violation.get("witness") or []
        if not isinstance(witness, list) or not all(isinstance(entry, dict) for entry in witness):
            return f"the witness of its violation {str(violation.get('kind'))[:40]} is not a list of events"
    if not all(anomaly.get("exposure_s") is None or _number(anomaly.get("exposure_s"))
               for anomaly in verdict.get("anomalies") or []):
        return "an anomaly's exposure_s is not a number"
    notes = verdict.get("notes") or []
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        return f"its notes are {str(notes)[:80]}, not a list of strings"
    if not isinstance(verdict.get("counts") or {}, dict):
        return f"its counts are {str(verdict.get('counts'))[:80]}, not a table"
    recovery = verdict.get("recovery") or {}
    if not isinstance(recovery, dict) or (recovery.get("jobs") and not (
            _number(recovery.get("max_s")) and _number(recovery.get("min_s")))):
        return f"its recovery is {str(recovery)[:80]}, not a table with the slowest and fastest (max_s, min_s)"
    return None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def worst(statuses: list[str]) -> str:
    return max(statuses, key=SEVERITY.__getitem__, default="pass")


def _differences(cell: Cell, verdict: dict[str, Any], exit_code: int) -> list[str]:
    reasons: list[str] = []
    got = verdict.get("verdict")
    violations: list[dict[str, Any]] = list(verdict.get("violations") or [])
    kinds = sorted({str(v.get("kind")) for v in violations})
    if got != cell.verdict or exit_code != cell.exit_code:
        reasons.append(f"expected {cell.verdict.upper()}, got {str(got).upper()} (exit code {exit_code})"
                       + (f" with {', '.join(kinds)}" if kinds else ""))
    if cell.violation is None and kinds and got == cell.verdict:
        reasons.append(f"expected no violation, got {', '.join(kinds)}")
    if cell.violation is not None:
        named = [v for v in violations if v.get("kind") == cell.violation]
        if not named:
            reasons.append(f"expected the violation {cell.violation}, got {', '.join(kinds) or 'none'}")
        elif not all(v.get("witness") for v in named):
            reasons.append(f"the violation {cell.violation} came without its witness")
    for violation in violations if cell.witness_order else []:
        witness = [str(entry.get("kind")) for entry in violation.get("witness") or []]
        if not _in_order(witness, cell.witness_order):
            reasons.append(f"the witness of {violation.get('kind')} does not show {' then '.join(cell.witness_order)}")
    unexercised = [str(f.get("id")) for f in verdict.get("faults") or [] if not f.get("exercised")]
    if unexercised and cell.verdict != "fail":
        reasons.append(f"fault(s) {', '.join(unexercised)} not exercised")
    counts = dict(verdict.get("counts") or {})
    differing = {name: counts.get(name) for name, want in cell.counts.items() if counts.get(name) != want}
    if differing:
        reasons.append(f"expected counts {cell.counts}, got {differing}")
    reasons += _recovery_differences(cell, dict(verdict.get("recovery") or {}))
    if cell.anomalies is not None:
        anomalies = list(verdict.get("anomalies") or [])
        shown = sorted({str(a.get("kind")) for a in anomalies})
        if shown != sorted(cell.anomalies):
            reasons.append(f"expected the anomalies {sorted(cell.anomalies)}, got {shown}")
        if not all((a.get("exposure_s") or 0) > 0 for a in anomalies):
            reasons.append("an anomaly came without its exposure time")
    return reasons


def _recovery_differences(cell: Cell, recovery: dict[str, Any]) -> list[str]:
    reasons = []
    if cell.max_recovery_s is not None and not (recovery.get("jobs") and recovery["max_s"] < cell.max_recovery_s):
        reasons.append(f"expected every recovery under {cell.max_recovery_s}s, got "
                       + (f"{recovery.get('max_s')}s at the slowest" if recovery.get("jobs") else "no recovery at all"))
    if cell.min_recovery_s is not None and not (recovery.get("jobs") and recovery["min_s"] > cell.min_recovery_s):
        reasons.append(f"expected every recovery over {cell.min_recovery_s}s, got "
                       + (f"{recovery.get('min_s')}s" if recovery.get("jobs") else "no recovery at all"))
    return reasons


def _in_order(kinds: list[str], expected: tuple[str, ...]) -> bool:
    """Whether `expected` occurs in `kinds` as a subsequence."""
    remaining = iter(kinds)
    return all(kind in remaining for kind in expected)
