"""`chaos merge DIR...`: shards' outputs joined into one suite report, as if one machine had run them all,
with nothing in it taken on a shard's word.

Each DIR is what `chaos suite --shard K/N --out DIR` wrote, and each records the whole plan
(chaos.suite.plan). The shards must share one plan (one suite as resolved, dealt one way: the same
`--durations`, or none) and make up its whole split, every K of one N once; between them they must
hold every run of the plan exactly once, each in the shard it was dealt to. A run left out (a machine
that died, a shard dealt by other durations, an emptied report) would otherwise be left out of a
passing report, so each of these is a usage error naming the runs.

Each run is then judged again, with the code `chaos suite` judges it with (chaos.suite.expect), from its
run dir's verdict.json against the plan's cell: a run whose recorded status differs, or a shard whose
own status is not its runs' worst, is refused, and the merged status and exit code are computed from
the runs so judged. A shard's run dirs keep their place, named relative to the merged output. The
duration is the longest shard's (they ran side by side).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any

from chaos.errors import ConfigError
from chaos.suite.cell import Planned
from chaos.suite.expect import STATUS_EXIT_CODES, STATUSES, judge_run, unreadable, worst
from chaos.suite.plan import Plan
from chaos.suite.report import SCHEMA, cell_record, fresh_output, suite_document, write_suite_reports
from chaos.suite.runner import CellRun, read_verdict

NAMED = 10  # runs a message names before it counts the rest
OUTPUT_TAIL = 4096  # bytes of a run's output.log read back for the reason a run that wrote no verdict gives
EDITED = "The report was edited or damaged; run the shard again."


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


# What a merge reads from each run's record in a shard's suite.json, and what each must be.
RECORD_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "status": (lambda value: value in STATUSES, f"one of {', '.join(STATUSES)}"),
    "exit_code": (_whole, "a whole number"),
    "duration_s": (_seconds, "a number of seconds"),
    "run_dir": (lambda value: value is None or isinstance(value, str), "a path or null"),
    "shared_server": (lambda value: isinstance(value, bool), "true or false"),
    "left_behind": (lambda value: isinstance(value, list) and all(_whole(pid) for pid in value), "a list of pids"),
}


@dataclass(frozen=True)
class Shard:
    """One DIR: its suite.json and the plan it records."""

    directory: Path
    document: dict[str, Any]
    plan: Plan

    @property
    def slices(self) -> list[str]:
        """The K/N slices it holds (an unsharded suite's output holds the one slice 1/1)."""
        return list(self.document["shards"]) or ["1/1"]

    @property
    def where(self) -> str:
        return str(self.directory / "suite.json")


def merge(dirs: list[Path], out: Path) -> dict[str, Any]:
    shards = [_read(directory) for directory in dirs]
    suites = {str(shard.document["suite"]) for shard in shards}
    if len(suites) > 1:
        raise ConfigError(f"chaos merge: the directories hold runs of different suites ({', '.join(sorted(suites))}); "
                          "merge the shards of one suite at a time.")
    _check_one_suite(shards)
    _check_whole([slice_ for shard in shards for slice_ in shard.slices])
    plan = _one_dealing(shards)
    held = _held(shards, plan)
    missing = [run for run in plan.runs() if (run.key, run.repeat) not in held]
    if missing:
        raise ConfigError(f"chaos merge: {len(missing)} of the plan's {len(plan.runs())} runs ran in no shard given: "
                          + _named([f"{_label(run)} (dealt to {plan.dealt[run.key]}/{plan.shards})"
                                    for run in missing])
                          + ". A report without them could pass where they would not. Pass every shard's whole "
                            "--out directory; a shard whose machine stopped early, or whose report lists no run, must "
                            "be run again.")
    runs = _judged(shards, plan, held, out)
    fresh_output(out, "Pick another --out for the merge.")
    order = {(run.key, run.repeat): place for place, run in enumerate(plan.runs())}
    cells = [cell_record(run, order[(run.planned.key, run.planned.repeat)]) for run in runs]
    merged = suite_document(cells, suite=suites.pop(),
                            shards=sorted({slice_ for shard in shards for slice_ in shard.document["shards"]}),
                            duration_s=max(float(shard.document["duration_s"]) for shard in shards),
                            plan=plan.to_json())
    write_suite_reports(out, merged)
    return merged


def _check_one_suite(shards: list[Shard]) -> None:
    """One resolved suite: the same cells, known answers, seeds and repeats in every shard."""
    groups: dict[str, list[Shard]] = {}
    for shard in shards:
        groups.setdefault(shard.plan.digest, []).append(shard)
    if len(groups) > 1:
        described = "; ".join(
            f"{', '.join(str(shard.directory) for shard in group)}: {digest[:19]} ({len(group[0].plan.suite.cells)} "
            f"cells, {len(group[0].plan.dealt)} run keys)" for digest, group in groups.items())
        raise ConfigError(f"chaos merge: the shards were planned from different suites ({described}): the suite file "
                          "changed between them (another commit, an edited file), or their --seeds or --repeat "
                          "differed, so their slices do not make up one suite. Run every shard from one suite file "
                          "with the same options.")


def _check_whole(slices: list[str]) -> None:
    """Every K of one N, once each."""
    split = [tuple(int(part) for part in slice_.split("/")) for slice_ in slices]
    counts = {n for _, n in split}
    if len(counts) != 1:
        raise ConfigError(f"chaos merge: the shards come from different splits ({', '.join(slices)}); merge the "
                          "shards of one `--shard K/N` split, all with the same N.")
    (count,) = counts
    given = Counter(k for k, _ in split)
    twice = sorted(k for k, times in given.items() if times > 1)
    if twice or len(given) != count or not all(1 <= k <= count for k in given):
        missing = list(islice((k for k in range(1, count + 1) if k not in given), NAMED))
        raise ConfigError("chaos merge: the shards do not make up the whole suite: "
                          + (f"missing {', '.join(f'{k}/{count}' for k in missing)}" if missing else "")
                          + ("; " if missing and twice else "")
                          + (f"given twice {', '.join(f'{k}/{count}' for k in twice)}" if twice else "")
                          + ". A missing shard's runs would be left out of the report; run it, or pass its output.")


def _one_dealing(shards: list[Shard]) -> Plan:
    """The plan every shard dealt its keys by; shards dealt differently (one machine's --durations, another's
    none) each ran a slice of another split, which together leave runs out."""
    if len({json.dumps(sorted(shard.plan.dealt.items())) for shard in shards}) == 1:
        return shards[0].plan
    ran = Counter(key for shard in shards for key in {str(cell["key"]) for cell in shard.document["cells"]})
    nowhere = [key for key in shards[0].plan.dealt if key not in ran]
    twice = [key for key, times in ran.items() if times > 1]
    how = "; ".join(f"{', '.join(shard.slices)} ({shard.directory}) {shard.plan.dealing()}" for shard in shards)
    raise ConfigError(f"chaos merge: the shards dealt the suite's runs differently ({how}), so each ran its slice of "
                      f"another split: run keys no shard ran: {_named(nowhere) if nowhere else 'none'}; run twice: "
                      f"{_named(twice) if twice else 'none'}. Give every shard the same --durations file (one every "
                      "machine gets, such as a file in the repository), or none, and run them again.")


def _held(shards: list[Shard], plan: Plan) -> dict[tuple[str, int], tuple[Shard, dict[str, Any]]]:
    """Each run of the plan with the shard that holds it and its record there: every one a run of the plan,
    in the shard it was dealt to, once."""
    planned = {(run.key, run.repeat) for run in plan.runs()}
    held: dict[tuple[str, int], tuple[Shard, dict[str, Any]]] = {}
    for shard in shards:
        for cell in shard.document["cells"]:
            run = (str(cell["key"]), int(cell["repeat"]))
            if run not in planned:
                raise ConfigError(f"chaos merge: {shard.where} holds {run[0]} (repeat {run[1]}), a run its plan has "
                                  f"no place for. {EDITED}")
            dealt = f"{plan.dealt[run[0]]}/{plan.shards}"
            if dealt not in shard.slices:
                raise ConfigError(f"chaos merge: {shard.where} ({', '.join(shard.slices)}) holds {run[0]}, which its "
                                  f"plan deals to shard {dealt}. {EDITED}")
            if run in held:
                raise ConfigError(f"chaos merge: {run[0]} (repeat {run[1]}) was run by both {held[run][0].directory} "
                                  f"and {shard.directory}: the shards overlap. Merge the outputs of one `--shard K/N` "
                                  "split.")
            held[run] = (shard, cell)
    return held


def _judged(shards: list[Shard], plan: Plan, held: dict[tuple[str, int], tuple[Shard, dict[str, Any]]],
            out: Path) -> list[CellRun]:
    """Every run judged again against the plan's cell, in the plan's order; refused where a shard recorded
    another status."""
    runs: list[CellRun] = []
    differing: list[str] = []
    by_shard: dict[Path, list[str]] = {}
    for (key, repeat), planned in {(run.key, run.repeat): run for run in plan.runs()}.items():
        shard, record = held[(key, repeat)]
        stored, exit_code, duration_s, run_dir, shared, left_behind = _facts(shard, record, planned)
        verdict, output = _run_files(shard, planned, run_dir)
        outcome = judge_run(planned.cell, verdict, exit_code, output, left_behind)
        if outcome.status != stored:
            differing.append(f"{shard.where}: {_label(planned)} says {stored}, judged again {outcome.status}"
                             + (f" ({outcome.reasons[0]})" if outcome.reasons else " (its known answer)"))
        by_shard.setdefault(shard.directory, []).append(outcome.status)
        moved = os.path.relpath(shard.directory / run_dir, out) if run_dir is not None else None
        runs.append(CellRun(planned, outcome, exit_code, duration_s, moved, verdict, shared, left_behind))
    if differing:
        raise ConfigError(f"chaos merge: {len(differing)} run(s) carry a status their own run does not give, judged "
                          f"from its verdict.json against the plan's cell as `chaos suite` judges it: "
                          f"{_named(differing)}. {EDITED}")
    for shard in shards:
        status = worst(by_shard.get(shard.directory, []))
        said = (shard.document.get("status"), shard.document.get("exit_code"))
        if said != (status, STATUS_EXIT_CODES[status]):
            raise ConfigError(f"chaos merge: {shard.where} says its status is {str(said[0])[:40]!r} (exit code "
                              f"{str(said[1])[:20]}), but its runs, judged again, make {status} (exit code "
                              f"{STATUS_EXIT_CODES[status]}): a shard's status is its worst run's. {EDITED}")
    return runs


def _facts(shard: Shard, record: dict[str, Any],
           planned: Planned) -> tuple[str, int, float, str | None, bool, tuple[int, ...]]:
    """What a merge takes from a run's record besides its run dir: the status it checks, and what the
    run dir cannot say (the run's exit code, its time, the processes it left behind)."""
    for name, (fits, kind) in RECORD_KINDS.items():
        if name not in record or not fits(record[name]):
            found = f"{name} = {str(record[name])[:40]!r}" if name in record else f"no {name}"
            raise ConfigError(f"chaos merge: {shard.where}: the run {_label(planned)} has {found}; expected "
                              f"{kind}, as `chaos suite` writes it. {EDITED}")
    return (str(record["status"]), int(record["exit_code"]), float(record["duration_s"]), record["run_dir"],
            bool(record["shared_server"]), tuple(record["left_behind"]))


def _run_files(shard: Shard, planned: Planned, run_dir: str | None) -> tuple[dict[str, Any] | None, str]:
    """The run's verdict.json (None where it wrote none) and the tail of its output, from where `chaos
    suite` put them for this very run (cells/<run key>/), never from elsewhere."""
    output = _tail(shard.directory / "cells" / planned.run_key / "output.log")
    if run_dir is None:
        return None, output
    parts = PurePosixPath(run_dir).parts
    if len(parts) != 4 or parts[:3] != ("cells", planned.run_key, "runs") or parts[3] == "..":
        raise ConfigError(f"chaos merge: {shard.where}: the run {_label(planned)} names the run dir "
                          f"{run_dir[:200]!r}, not one in cells/{planned.run_key}/runs/, where `chaos suite` puts "
                          f"that run's. {EDITED}")
    path = shard.directory / run_dir
    if not path.is_dir():
        raise ConfigError(f"chaos merge: the run dir of {_label(planned)}, {path}, is missing: a merge judges every "
                          "run again from its run dir's verdict.json. Pass each shard's whole --out directory (as "
                          "the CI templates upload it).")
    verdict = read_verdict(path)
    if verdict is None:
        return None, output
    problem = unreadable(verdict)
    if problem is None and verdict.get("seed") not in (None, planned.seed):
        problem = f"it is the verdict of seed {str(verdict.get('seed'))[:20]}, not of seed {planned.seed}"
    if problem is not None:
        raise ConfigError(f"chaos merge: {path / 'verdict.json'} cannot be judged: {problem}. The run dir was "
                          "edited or damaged; run the shard again.")
    return verdict, output


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, path.stat().st_size - OUTPUT_TAIL))
            return stream.read().decode(errors="replace")
    except OSError:
        return ""


def _read(directory: Path) -> Shard:
    path = directory / "suite.json"
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or document.get("schema") != SCHEMA:
            raise ValueError(f"schema {document.get('schema') if isinstance(document, dict) else None!r}")
        _check_shape(document)
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"chaos merge: {path} is no suite report ({str(exc)[:200]}); expected the directory a "
                          "`chaos suite --out DIR` wrote, holding its suite.json.") from exc
    if "plan" not in document:
        raise ConfigError(f"chaos merge: {path} records no plan, so nothing shows which runs its suite has: it was "
                          "written by an older queue-chaos, or not by `chaos suite`. Run the shard again with this "
                          "version.")
    try:
        plan = Plan.from_json(document["plan"], Path(document["suite"]))
    except ValueError as exc:
        raise ConfigError(f"chaos merge: {path}: {str(exc)[:300]}. {EDITED}") from exc
    counts = {int(slice_.split("/")[1]) for slice_ in document["shards"]} or {1}
    if counts != {plan.shards}:
        raise ConfigError(f"chaos merge: {path} holds the shard(s) {', '.join(document['shards']) or '1/1'}, but its "
                          f"plan dealt the suite into {plan.shards} shard(s). {EDITED}")
    return Shard(directory, document, plan)


def _check_shape(document: dict[str, Any]) -> None:
    """The keys a merge reads, present and of their kind (ValueError naming the first that is not)."""
    for key, kind in (("suite", str), ("shards", list), ("cells", list)):
        if not isinstance(document.get(key), kind):
            raise ValueError(f"its {key} is {str(document.get(key))[:80]!r}")
    if not _seconds(document.get("duration_s")):
        raise ValueError(f"its duration_s is {str(document.get('duration_s'))[:40]!r}")
    for shard in document["shards"]:
        if not isinstance(shard, str) or not re.fullmatch(r"\d+/\d+", shard):
            raise ValueError(f"its shard {str(shard)[:40]!r} is no K/N")
    for cell in document["cells"]:
        if not (isinstance(cell, dict) and isinstance(cell.get("key"), str) and _whole(cell.get("repeat"))):
            raise ValueError(f"a cell without its key and repeat: {str(cell)[:120]}")


def _label(run: Planned) -> str:
    return run.key + (f" (repeat {run.repeat})" if run.repeat > 1 else "")


def _named(items: list[str]) -> str:
    return "; ".join(items[:NAMED]) + (f"; and {len(items) - NAMED} more" if len(items) > NAMED else "")
