"""Suite files: which cells a suite runs, with which seeds, how many times, and what each must give.

A suite file is `chaos.toml`, or the `[tool.chaos]` table of `pyproject.toml` (found in the current
directory when `chaos suite` names no file), or any TOML file of the same keys, such as the bundled
known-answer matrix (targets/known_answers.toml):

    seeds = [1, 2, 3]            # or "1-3", or 1 (default: [1])
    repeat = 1                   # runs of each cell and seed; over 1, the report says whether they agreed
    correct = ["pg_lease"]       # targets that pass every scenario their backend's local provider takes
                                 # (a pass cell for each one not listed)

    [[cell]]
    target = "pg_naive"
    scenarios = ["kill_after_effect_before_ack"]   # or scenario = "...", or scenarios = "all"
    params = { mode = "x" }      # -p (a table, or a list of "key=value"); contract (-c), scenario_params (-s)
    warmup = true                # -s warmup=true for each of its scenarios that takes it (default: false)
    verdict = "fail"             # pass (the default) | fail | inconclusive | skipped | error (+ harness_error)
    violation = "stuck"          # the violation a failing cell must name, with its witness

A file (for its cells) or a cell may say where it runs: `backend = "docker"` (the provider, --backend)
and `worker_image = "queue-chaos/python"` (--worker-image). A cell may also state `counts`,
`max_recovery_s`, `min_recovery_s`, `witness_order`, `anomalies`,
`rule`, `server_bug` and, for an expected `error`, `harness_error` (chaos.suite.expect says what each
checks). A cell of a variant may say
`instead_of_default = "why"`: its answer stands for the plain target's on that scenario (no pass cell is
made for the pair), for a setting the answer needs on every machine. Everything is checked when the file
is read: a mistake is one paragraph naming the file and the cell, before anything runs. A suite has
bounds (MAX_RUNS planned runs, includes MAX_INCLUDE_DEPTH deep), so a typo in a range or a runaway chain
of includes is a usage error, not a machine out of memory or stack.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.backends.registry import provider
from chaos.discovery import available_scenarios, find_scenario, find_target
from chaos.errors import ConfigError
from chaos.faults import KINDS as FAULT_KINDS
from chaos.suite.cell import VERDICTS, Cell, Planned

SUITE_FILE = "chaos.toml"
SETTINGS = ("backend", "worker_image")  # where a cell runs: in the file, for its cells; in a cell, for it
SUITE_KEYS = {"seeds", "repeat", "correct", "cell", "include", *SETTINGS}
CELL_KEYS = {*SETTINGS, "target", "scenario", "scenarios", "params", "contract", "scenario_params", "warmup",
             "verdict", "violation",
             "counts", "max_recovery_s", "min_recovery_s", "witness_order", "anomalies", "rule", "server_bug",
             "harness_error",
             "instead_of_default"}
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
MAX_RUNS = 100_000  # planned runs of one suite (cells x seeds x repeat): days of runs, far past any real one
MAX_INCLUDE_DEPTH = 32  # files in one chain of includes


@dataclass(frozen=True)
class Suite:
    path: Path
    cells: tuple[Cell, ...]
    seeds: tuple[int, ...] = (1,)
    repeat: int = 1

    def planned(self) -> list[Planned]:
        """Every run of the suite, in a stable order: cell by cell, seed by seed, repeat by repeat."""
        return [Planned(cell, seed, repeat) for cell in self.cells for seed in self.seeds
                for repeat in range(1, self.repeat + 1)]


def find_suite_file(given: Path | None) -> Path:
    """The file named, else ./chaos.toml, else ./pyproject.toml when it has a [tool.chaos] table."""
    if given is not None:
        if not given.is_file():
            problem = "is a directory" if given.is_dir() else "does not exist"
            raise ConfigError(f"Suite file {given} {problem}: expected a TOML file listing the suite's cells "
                              f"(a {SUITE_FILE}, a pyproject.toml with [tool.chaos], or targets/known_answers.toml).")
        return given
    if Path(SUITE_FILE).is_file():
        return Path(SUITE_FILE)
    pyproject = Path("pyproject.toml")
    if pyproject.is_file() and _has_tool_chaos(_read(pyproject)):
        return pyproject
    raise ConfigError(f"No suite file here: expected {SUITE_FILE}, or a pyproject.toml with a [tool.chaos] table, "
                      "in the current directory, or a file named on the command line (chaos suite FILE). "
                      "docs/suites-and-ci.md shows one.")


def load_suite(path: Path, *, seeds: tuple[int, ...] | None = None, repeat: int | None = None,
               _including: tuple[Path, ...] = ()) -> Suite:
    """The suite `path` describes; `seeds` and `repeat` (the command line's) override the file's. Its
    `include` files (paths relative to it) add their cells, so that each part of a big suite (one per
    adapter, per team) stays in a file of its own; their own seeds and repeat give way to this file's."""
    raw = _read(path)
    if path.name == "pyproject.toml":
        raw = _tool_chaos(raw, path)
        where = f"{path} [tool.chaos]"
    else:
        where = str(path)
    unknown = set(raw) - SUITE_KEYS
    if unknown:
        raise ConfigError(f"{where} sets {', '.join(sorted(unknown))}, which a suite file does not take; expected "
                          f"among {', '.join(sorted(SUITE_KEYS))}.")
    try:
        defaults = {key: _optional_str(raw, key) for key in SETTINGS}
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}: where its cells run (a provider, --backend; an image, --worker-image)."
                          ) from exc
    listed = [_cell({**{k: v for k, v in defaults.items() if v}, **entry}, f"{where}, cell {number}")
              for number, entry in enumerate(_tables(raw, where), 1)]
    cells = [cell for group in listed for cell in group]
    including = (*_including, path.resolve())
    for part in _includes(raw, path, where, including):
        cells += load_suite(part, _including=including).cells
    plain = {(c.target, c.scenario) for c in cells if c.instead_of_default or (
        not c.params and not c.contract and not c.scenario_params and c.backend == defaults["backend"]
        and c.worker_image == defaults["worker_image"])}
    correct = raw.get("correct", [])
    if not isinstance(correct, list) or not all(isinstance(name, str) for name in correct):
        raise ConfigError(f"{where}: correct = {correct!r}; expected a list of target names, each of which passes "
                          "every scenario.")
    twice = sorted(name for name, times in Counter(correct).items() if times > 1)
    if twice:
        raise ConfigError(f"{where}: correct lists {', '.join(twice)} more than once; each target there gets a pass "
                          "cell per scenario, so twice would be two cells of one name. Keep one of each.")
    made = [Cell(target, scenario, listed=False, backend=defaults["backend"], worker_image=defaults["worker_image"])
            for target in correct for scenario in _all_scenarios()
            if (target, scenario) not in plain and runnable(target, scenario, **defaults)]
    seen: dict[str, Cell] = {}
    for cell in cells:
        if cell.id in seen:
            raise ConfigError(f"{where} lists {cell.variant} x {cell.scenario_variant} twice: a cell is one target "
                              "variant on one scenario variant, with one known answer. Keep one of the two.")
        seen[cell.id] = cell
    if not cells and not made:
        raise ConfigError(f"{where} lists no cell: expected [[cell]] tables (target, scenario or scenarios) or "
                          "correct = [target, ...].")
    suite = Suite(path, tuple(cells + made), seeds or parse_seeds(raw.get("seeds", [1]), where),
                  repeat or _positive(raw.get("repeat", 1), "repeat", where))
    runs = len(suite.cells) * len(suite.seeds) * suite.repeat
    if runs > MAX_RUNS:
        raise ConfigError(f"{where} plans {runs:,} runs ({len(suite.cells)} cell(s) x {len(suite.seeds)} seed(s) x "
                          f"repeat {suite.repeat}), more than a suite takes ({MAX_RUNS:,}); fewer cells, "
                          "fewer seeds or a smaller repeat.")
    return suite


def _includes(raw: dict[str, Any], path: Path, where: str, including: tuple[Path, ...]) -> list[Path]:
    """The files `include` names, relative to the including file; one that includes itself, at any depth,
    is refused rather than read forever."""
    names = raw.get("include", [])
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ConfigError(f"{where}: include = {names!r}; expected a list of suite files, relative to {path.parent}.")
    parts = [path.parent / name for name in names]
    if parts and len(including) >= MAX_INCLUDE_DEPTH:
        raise ConfigError(f"{where}, the last of a chain of {len(including)} files each including the next, "
                          f"includes {parts[0]}: a chain may be {MAX_INCLUDE_DEPTH} files long. Include the parts "
                          "from fewer levels (one file may include many).")
    for part in parts:
        if not part.is_file():
            raise ConfigError(f"{where} includes {part}, which is not a file: expected a suite file (TOML with "
                              "[[cell]] tables), its path relative to the including file.")
        if part.resolve() in including:
            raise ConfigError(f"{where} includes {part}, which includes it back: a suite file is read once; remove "
                              "one of the two include entries.")
    return parts


def parse_seeds(value: object, where: str) -> tuple[int, ...]:
    """1, [1, 2, 5] or "1-5" (inclusive), at most MAX_RUNS of them."""
    if isinstance(value, str) and (found := _RANGE.match(value)):
        first, last = int(found.group(1)), int(found.group(2))
        if last - first >= MAX_RUNS:
            raise ConfigError(f"{where}: seeds = {value!r} is {last - first + 1:,} seeds, more than a suite runs "
                              f"({MAX_RUNS:,} runs at most); pick a shorter range, such as \"1-5\".")
        if first <= last:
            return tuple(range(first, last + 1))
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                 for v in value):
        return tuple(dict.fromkeys(value))
    raise ConfigError(f"{where}: seeds = {value!r}; expected a seed (1), a list of them ([1, 2, 5]) or an inclusive "
                      "range (\"1-5\"), each a whole number from 0.")


def parse_seeds_text(text: str, where: str) -> tuple[int, ...]:
    """Seeds as a command line gives them: "3", "1,2,5" or "1-5"."""
    parts = [part.strip() for part in text.split(",")]
    value: object = text  # a range, or a mistake that parse_seeds names
    if all(part.isdecimal() for part in parts):
        value = [int(part) for part in parts] if len(parts) > 1 else int(parts[0])
    return parse_seeds(value, where)


def _positive(value: object, key: str, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(f"{where}: {key} = {value!r}; expected a whole number from 1.")


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read the suite file {path} ({exc.strerror or exc}).") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Suite file {path} is not UTF-8 text ({exc}); TOML files must be UTF-8. Save it as "
                          "UTF-8.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Suite file {path} is not valid TOML ({exc}); fix it where the message points.") from exc
    except RecursionError as exc:
        raise ConfigError(f"Suite file {path} nests its arrays or tables too deep to read; a suite file needs "
                          "a few levels (a [[cell]] table, its params table).") from exc


def _has_tool_chaos(raw: dict[str, Any]) -> bool:
    """Whether a pyproject.toml names a suite: a `chaos` key under its [tool] table."""
    tool = raw.get("tool")
    return isinstance(tool, dict) and "chaos" in tool


def _tool_chaos(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """A pyproject.toml's [tool.chaos] table, the suite it holds."""
    tool = raw.get("tool", {})
    suite = tool.get("chaos", {}) if isinstance(tool, dict) else tool
    if not isinstance(suite, dict):
        where = "tool.chaos" if isinstance(tool, dict) else "tool"
        raise ConfigError(f"{path}: {where} = {suite!r}; expected a [tool.chaos] table holding the suite (seeds, "
                          "[[tool.chaos.cell]] tables), as docs/suites-and-ci.md shows.")
    return suite


def _tables(raw: dict[str, Any], where: str) -> list[dict[str, Any]]:
    entries = raw.get("cell", [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ConfigError(f"{where}: cell must be [[cell]] tables, one per target variant and scenarios.")
    return entries


def _all_scenarios() -> list[str]:
    return sorted(available_scenarios())


def runnable(target: str, scenario: str, backend: str | None = None, worker_image: str | None = None) -> bool:
    """Whether the target's backend, from the suite's provider, offers every capability the scenario's
    faults need, and its workers run in containers where a fault acts on theirs: a server the suite cannot
    restart (an emulator without persistence) holds a correct target to the scenarios it can run, and
    `chaos run` refuses the others with exit 2."""
    found = find_target(target)
    capabilities = provider(found.backend, backend or "local").capabilities
    in_containers = bool(worker_image or found.image)
    return all(FAULT_KINDS[kind].needs <= capabilities and (in_containers or not FAULT_KINDS[kind].containers)
               for kind in find_scenario(scenario).faults if kind in FAULT_KINDS)


def _cell(entry: dict[str, Any], where: str) -> list[Cell]:
    """One [[cell]] table: a cell per scenario it names."""
    unknown = set(entry) - CELL_KEYS
    if unknown:
        raise ConfigError(f"{where} sets {', '.join(sorted(unknown))}, which a cell does not take; expected among "
                          f"{', '.join(sorted(CELL_KEYS))}.")
    target = entry.get("target")
    if not isinstance(target, str) or not target:
        raise ConfigError(f"{where} names no target: expected target = \"name\" (`chaos list` shows them) or a path.")
    verdict = entry.get("verdict", "pass")
    if verdict not in VERDICTS:
        raise ConfigError(f"{where}: verdict = {verdict!r}; expected one of {', '.join(VERDICTS)}.")
    _check_verdicts_keys(entry, verdict, where)
    try:
        return [Cell(target, scenario, verdict, _optional_str(entry, "violation"),
                     _pairs(entry.get("params", ())), _optional_float(entry, "max_recovery_s"),
                     _counts(entry.get("counts", {})), _strings(entry.get("witness_order", ())),
                     _pairs(entry.get("contract", ())), _optional_str(entry, "rule"),
                     _scenario_params(entry, scenario),
                     None if entry.get("anomalies") is None else _strings(entry["anomalies"]),
                     _optional_float(entry, "min_recovery_s"), _optional_str(entry, "server_bug"),
                     backend=_optional_str(entry, "backend"), worker_image=_optional_str(entry, "worker_image"),
                     instead_of_default=_optional_str(entry, "instead_of_default"),
                     harness_error=_optional_str(entry, "harness_error"))
                for scenario in _scenarios(entry)
                if entry.get("scenarios") != "all" or runnable(target, scenario, entry.get("backend"),
                                                               entry.get("worker_image"))]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} ({target}): {exc}.") from exc


# Keys only one expected verdict can show: a cell with one under another verdict could never pass, which the
# file's reader says at once rather than a run's failure after the servers started.
_ONLY_WITH = {"violation": "fail", "witness_order": "fail", "harness_error": "error"}


def _check_verdicts_keys(entry: dict[str, Any], verdict: str, where: str) -> None:
    """Refuse a key the cell's verdict cannot show, and an expected error that does not say which one (any
    harness error, the suite's own included, would then pass for the target's)."""
    for key, needs in _ONLY_WITH.items():
        if key in entry and verdict != needs:
            raise ConfigError(f"{where}: {key} goes with verdict = \"{needs}\", and this cell expects "
                              f"{verdict!r}; drop {key}, or expect {needs}.")
    if verdict == "error" and "harness_error" not in entry:
        raise ConfigError(f"{where}: verdict = \"error\" needs harness_error, the text the target's harness error "
                          "must contain (what its workers did wrong), e.g. harness_error = \"match no execution\"; "
                          "without it any harness error, the suite's own too, would pass for the cell's answer.")


def _scenario_params(entry: dict[str, Any], scenario: str) -> tuple[str, ...]:
    """The cell's -s settings; `warmup = true` adds -s warmup=true for each of its scenarios that takes it
    (not one that declares warmup itself, cold by design) and does not set it already."""
    chosen = _pairs(entry.get("scenario_params", ()))
    warmup = entry.get("warmup", False)
    if not isinstance(warmup, bool):
        raise ValueError(f"warmup = {warmup!r}; expected true or false (-s warmup=true for each of its scenarios)")
    set_already = any(param.partition("=")[0] == "warmup" for param in chosen)
    if warmup and not set_already and "true" in find_scenario(scenario).all_params.get("warmup", ()):
        return (*chosen, "warmup=true")
    return chosen


def _scenarios(entry: dict[str, Any]) -> list[str]:
    if "scenario" in entry and "scenarios" in entry:
        raise ValueError("it sets both scenario and scenarios; keep one")
    chosen = entry.get("scenarios", entry.get("scenario"))
    if chosen == "all":
        return _all_scenarios()
    if isinstance(chosen, str) and chosen:
        return [chosen]
    if isinstance(chosen, list) and chosen and all(isinstance(name, str) and name for name in chosen):
        return list(dict.fromkeys(chosen))
    raise ValueError(f"scenarios = {chosen!r}; expected scenario = \"name\", a list of names, or scenarios = \"all\"")


def _pairs(value: object) -> tuple[str, ...]:
    """-p/-c/-s settings: a table ({key = value}) or a list of "key=value" strings."""
    if isinstance(value, dict):
        return tuple(f"{key}={str(item).lower() if isinstance(item, bool) else item}" for key, item in value.items())
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) and "=" in item for item in value):
        return tuple(value)
    raise ValueError(f"{value!r} is no settings: expected a table (params = {{key = value}}) or a list of "
                     "\"key=value\" strings")


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ValueError(f"{value!r}: expected a list of strings")


def _counts(value: object) -> dict[str, int]:
    if isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        return {str(key): int(v) for key, v in value.items()}
    raise ValueError(f"counts = {value!r}: expected a table of whole numbers (counts = {{ lost = 0 }})")


def _optional_str(entry: dict[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{key} = {value!r}: expected a string")


def _optional_float(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ValueError(f"{key} = {value!r}: expected a number of seconds")
