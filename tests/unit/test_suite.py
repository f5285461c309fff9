"""Suites without running anything: reading suite files (and their mistakes), judging a run against its
cell, splitting into shards, and the suite's reports (exit code, JUnit, the step summary's cap, merging)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from chaos.errors import ConfigError
from chaos.known_answers import bundled_scenarios, load, matrix_file
from chaos.suite.cell import Cell, Planned
from chaos.suite.expect import Outcome, judge_cell, worst
from chaos.suite.merge import merge
from chaos.suite.plan import Plan
from chaos.suite.report import cell_record, junit, markdown, suite_document, write_suite_reports
from chaos.suite.runner import CellRun
from chaos.suite.shard import deal, parse_shard
from chaos.suite.spec import Suite, find_suite_file, load_suite, parse_seeds, parse_seeds_text
from tests.suite_shards import edit, holder, record, write_shards
from tests.suite_shards import verdict as shards_verdict

# -- suite files ---------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "chaos.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_suite_file_expands_scenarios_seeds_and_repeats(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, """
seeds = "1-3"
repeat = 2
[[cell]]
target = "pg_naive"
scenarios = ["kill_after_effect_before_ack", "no_faults"]
params = { mode = "x", flag = true }
verdict = "fail"
violation = "stuck"
"""))
    assert [c.scenario for c in suite.cells] == ["kill_after_effect_before_ack", "no_faults"]
    assert suite.cells[0].params == ("mode=x", "flag=true") and suite.cells[0].violation == "stuck"
    planned = suite.planned()
    assert len(planned) == 2 * 3 * 2 and len({p.run_key for p in planned}) == 12
    assert len({p.key for p in planned}) == 6, "a key names a cell and seed, whatever the repeat"


CONTAINER_SCENARIOS = ["disconnect_backend_during_recovery", "pause_past_deadline"]  # docker provider, worker image


def on_the_host() -> list[str]:
    """The bundled scenarios a run on the local provider with no worker containers can take."""
    return [s for s in bundled_scenarios() if s not in CONTAINER_SCENARIOS]


def test_scenarios_all_and_correct_targets_cover_every_scenario_a_run_can_take(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, 'correct = ["pg_lease"]\n[[cell]]\ntarget = "pg_naive"\nscenarios = "all"\n'))
    assert sorted(c.scenario for c in suite.cells if c.target == "pg_naive") == on_the_host()
    assert sorted(c.scenario for c in suite.cells if c.target == "pg_lease") == on_the_host()
    assert all(not c.listed for c in suite.cells if c.target == "pg_lease")


def test_a_variant_instead_of_the_default_takes_the_plain_targets_pass_cell(tmp_path: Path) -> None:
    cell = ('[[cell]]\ntarget = "pg_lease"\nscenario = "stop_past_deadline"\ncontract = ["lease_s=3.0"]\n'
            'verdict = "pass"\n')
    pairs = {(c.variant, c.listed) for c in load_suite(write(tmp_path, 'correct = ["pg_lease"]\n' + cell)).cells
             if c.scenario == "stop_past_deadline"}
    assert pairs == {("pg_lease -c lease_s=3.0", True), ("pg_lease", False)}
    instead = cell + 'instead_of_default = "a longer lease gives the same answer on every machine"\n'
    pairs = {(c.variant, c.listed) for c in load_suite(write(tmp_path, 'correct = ["pg_lease"]\n' + instead)).cells
             if c.scenario == "stop_past_deadline"}
    assert pairs == {("pg_lease -c lease_s=3.0", True)}


def test_where_a_suite_runs_decides_which_scenarios_all_is(tmp_path: Path) -> None:
    """A suite on the docker provider with workers in containers takes the container scenarios too; a cell
    of its own says where it runs, and its id and command line say so."""
    suite = load_suite(write(tmp_path, 'backend = "docker"\nworker_image = "queue-chaos/python"\n'
                                       'correct = ["pg_lease"]\n[[cell]]\ntarget = "pg_naive"\nbackend = "local"\n'
                                       'worker_image = "queue-chaos/python"\nscenarios = "all"\n'))
    made = [c for c in suite.cells if c.target == "pg_lease"]
    assert sorted(c.scenario for c in made) == bundled_scenarios()
    assert all(c.backend == "docker" and c.worker_image == "queue-chaos/python" for c in made)
    naive = [c for c in suite.cells if c.target == "pg_naive"]
    assert sorted(c.scenario for c in naive) == [s for s in bundled_scenarios() if s != CONTAINER_SCENARIOS[0]]
    assert naive[0].argv(1, tmp_path)[-4:] == ["--backend", "local", "--worker-image", "queue-chaos/python"]
    assert "--backend=local" in naive[0].id and "--backend local" in naive[0].variant


def test_a_setting_of_where_a_suite_runs_that_is_no_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="backend"):
        load_suite(write(tmp_path, 'backend = 3\ncorrect = ["pg_lease"]\n'))


def test_a_correct_target_gets_no_cell_for_a_scenario_its_local_provider_refuses(tmp_path: Path) -> None:
    """moto keeps its queues in memory: the sqs kind's local provider cannot restart it, so a correct SQS
    target is held to every scenario but the one that restarts the backend (which `chaos run` refuses)."""
    suite = load_suite(write(tmp_path, 'correct = ["sqs_visibility", "pg_lease"]\n'))
    made = {target: sorted(c.scenario for c in suite.cells if c.target == target) for target in ("sqs_visibility",
                                                                                                   "pg_lease")}
    assert made["pg_lease"] == on_the_host()
    assert made["sqs_visibility"] == [s for s in on_the_host() if s != "restart_backend_during_recovery"]


def test_pyproject_tool_chaos_is_a_suite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, '[project]\nname = "x"\n[tool.chaos]\nseeds = [4, 5]\n[[tool.chaos.cell]]\ntarget = "pg_lease"\n'
                    'scenario = "no_faults"\n', "pyproject.toml")
    monkeypatch.chdir(tmp_path)
    path = find_suite_file(None)
    assert path.name == "pyproject.toml"
    suite = load_suite(path)
    assert suite.seeds == (4, 5) and [c.scenario for c in suite.cells] == ["no_faults"]


def test_the_known_answer_matrix_is_a_suite_file() -> None:
    assert list(load_suite(matrix_file()).cells) == load()


@pytest.mark.parametrize("text, phrase", [
    ('colour = 1\n[[cell]]\ntarget = "a"\nscenario = "b"\n', "sets colour, which a suite file does not take"),
    ('[[cell]]\ntarget = "a"\nscenario = "b"\nverdict = "maybe"\n', "verdict = 'maybe'; expected one of pass"),
    ('[[cell]]\ntarget = "a"\nscenario = "b"\nscenarios = ["c"]\n', "sets both scenario and scenarios"),
    ('[[cell]]\nscenario = "b"\n', "cell 1 names no target"),
    ('[[cell]]\ntarget = "a"\nscenario = "b"\nparams = ["x"]\n', "is no settings"),
    ('[[cell]]\ntarget = "a"\nscenario = "b"\nwhat = 1\n', "sets what, which a cell does not take"),
    ('seeds = "5-1"\n[[cell]]\ntarget = "a"\nscenario = "b"\n', "seeds = '5-1'"),
    ("seeds = [1]\n", "lists no cell"),
    ("[[cell]\n", "is not valid TOML"),
])
def test_a_suite_files_mistake_is_one_paragraph_naming_it(tmp_path: Path, text: str, phrase: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        load_suite(write(tmp_path, text))
    assert phrase in str(caught.value) and "chaos.toml" in str(caught.value)


def test_no_suite_file_says_where_one_is_looked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"No suite file here: expected chaos.toml"):
        find_suite_file(None)


def test_seeds_read_as_a_number_a_list_or_a_range() -> None:
    assert parse_seeds(3, "x") == (3,) and parse_seeds([2, 1, 2], "x") == (2, 1)
    assert parse_seeds("2-4", "x") == (2, 3, 4)


# -- a run judged against its cell --------------------------------------------------------------------

STUCK = Cell("pg_naive", "kill_after_effect_before_ack", "fail", "stuck")


def verdict(kind: str = "pass", *violations: str, **extra: Any) -> dict[str, Any]:
    return {"verdict": kind, "violations": [{"kind": v, "job": "job-1", "message": "m", "witness": [{"kind": "x"}]}
                                            for v in violations], "faults": [], "counts": {}, "recovery": {},
            "anomalies": [], "notes": [], **extra}


def test_a_broken_variant_failing_as_it_must_is_a_pass() -> None:
    assert judge_cell(STUCK, verdict("fail", "stuck"), 1) == Outcome("pass", [])


def test_a_wrong_answer_says_what_was_expected_and_what_came() -> None:
    outcome = judge_cell(STUCK, verdict("fail", "lost"), 1)
    assert outcome.status == "fail" and outcome.reasons == ["expected the violation stuck, got lost"]
    assert judge_cell(STUCK, verdict("pass"), 0).reasons[0] == "expected FAIL, got PASS (exit code 0)"


def test_no_verdict_an_error_verdict_and_an_unexpected_inconclusive_are_not_answers() -> None:
    assert judge_cell(STUCK, None, 3, "a\nTraceback\nBoom").status == "error"
    assert judge_cell(STUCK, verdict("error", error="HarnessError: x"), 3).status == "error"
    assert judge_cell(STUCK, verdict("inconclusive", notes=["fault f1 not exercised"]), 4) == Outcome(
        "inconclusive", ["inconclusive: fault f1 not exercised"])


WRONG_TOKEN = Cell("pg_lease", "no_faults", "error", params=("report_token=wrong",), harness_error="match no execution")


def test_a_variant_expected_to_be_the_targets_harness_error_passes_on_that_error() -> None:
    error = "the target's workers reported probes that match no execution: ack of job-0001 by w1 ..."
    assert judge_cell(WRONG_TOKEN, verdict("error", error=error), 3) == Outcome("pass", [])


def test_near_miss_another_error_or_no_error_is_not_the_expected_one() -> None:
    other = judge_cell(WRONG_TOKEN, verdict("error", error="HarnessError: the sink died"), 3)
    assert other.status == "fail" and "expected the harness error to say 'match no execution'" in other.reasons[0]
    assert judge_cell(WRONG_TOKEN, verdict("pass"), 0).reasons[0] == "expected ERROR, got PASS (exit code 0)"


def test_counts_and_recovery_bounds_are_checked() -> None:
    cell = Cell("t", "s", counts={"lost": 0}, max_recovery_s=2.0)
    ok = verdict(counts={"lost": 0}, recovery={"jobs": {"a": 1.0}, "max_s": 1.0, "min_s": 1.0})
    assert judge_cell(cell, ok, 0).status == "pass"
    slow = verdict(counts={"lost": 1}, recovery={"jobs": {"a": 3.0}, "max_s": 3.0, "min_s": 3.0})
    assert judge_cell(cell, slow, 0).reasons == ["expected counts {'lost': 0}, got {'lost': 1}",
                                                 "expected every recovery under 2.0s, got 3.0s at the slowest"]


def test_a_known_server_bug_forgives_only_a_missing_recovery() -> None:
    cell = Cell("beanstalkd_ttr", "stop_past_deadline", min_recovery_s=1.0, counts={"lost": 0}, server_bug="bug")
    assert judge_cell(cell, verdict(counts={"lost": 0}), 0).status == "xfail"
    # near miss: no recovery, and something else differs too
    assert judge_cell(cell, verdict(counts={"lost": 1}), 0).status == "fail"


def test_a_known_server_bug_forgives_the_reclaim_it_failed_to_make_and_nothing_else() -> None:
    cell = Cell("beanstalkd_ttr", "stop_past_deadline", min_recovery_s=1.0, counts={"lost": 0}, server_bug="bug")
    owed = {"kind": "recovery_bound_exceeded", "job": "a", "witness": [{"seq": 1}], "detail": {"by": None}}
    assert judge_cell(cell, verdict("fail", violations=[owed], counts={"lost": 0}), 1).status == "xfail"
    # near miss: a reclaim that came, late, is the queue's own answer
    late = dict(owed, detail={"by": "w2"})
    assert judge_cell(cell, verdict("fail", violations=[late], counts={"lost": 0}), 1).status == "fail"


def test_a_suites_status_is_its_worst_cells() -> None:
    assert worst(["pass", "xfail", "inconclusive"]) == "inconclusive"
    assert worst(["inconclusive", "fail"]) == "fail" and worst(["fail", "error", "pass"]) == "error"
    assert worst([]) == "pass"


# -- shards --------------------------------------------------------------------------------------------


def test_shards_cover_every_run_once_and_keep_repeats_together() -> None:
    cells = tuple(Cell(f"t{i}", "s") for i in range(7))
    planned = [Planned(cell, seed, repeat) for cell in cells for seed in (1, 2) for repeat in (1, 2)]
    dealt = deal((p.key for p in planned), 3)
    slices = [[p for p in planned if dealt[p.key] == k] for k in (1, 2, 3)]
    assert sorted(p.run_key for s in slices for p in s) == sorted(p.run_key for p in planned)
    assert all(len({p.key for p in s} & {p.key for p in t}) == 0 for s in slices for t in slices if s is not t)
    assert deal(reversed([p.key for p in planned]), 3) == dealt, "every machine computes the same split"


def test_stored_durations_balance_the_shards() -> None:
    planned = [Planned(Cell(f"t{i}", "s"), 1) for i in range(6)]
    durations = {p.key: d for p, d in zip(planned, [10.0, 9.0, 1.0, 1.0, 1.0, 1.0], strict=True)}
    dealt = deal((p.key for p in planned), 2, durations)
    loads = [sum(durations[p.key] for p in planned if dealt[p.key] == k) for k in (1, 2)]
    assert sorted(loads) == [11.0, 12.0]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(ConfigError, match="expected K/N with 1 <= K <= N"):
        parse_shard(text)
    assert parse_shard("2/4") == (2, 4)


# -- reports --------------------------------------------------------------------------------------------


def run(cell: Cell, status: str, seed: int = 1, repeat: int = 1, got: str = "pass") -> CellRun:
    outcome = Outcome(status, [] if status == "pass" else [f"{status} reason"])
    return CellRun(Planned(cell, seed, repeat), outcome, 0, 1.5, f"cells/{cell.id}", verdict(got), False)


def document(*runs: CellRun) -> dict[str, Any]:
    """suite.json's document of `runs`, in their order, of the suite of their cells."""
    suite = Suite(Path("chaos.toml"), tuple({r.planned.cell.id: r.planned.cell for r in runs}.values()))
    return suite_document([cell_record(r, i) for i, r in enumerate(runs)], suite="chaos.toml", shards=[],
                          duration_s=3.0, plan=Plan.of(suite, 1, None).to_json())


def test_the_suite_report_counts_statuses_and_takes_the_worst_exit_code() -> None:
    doc = document(run(Cell("a", "s"), "pass"), run(Cell("b", "s"), "inconclusive"), run(Cell("c", "s"), "fail"))
    assert doc["status"] == "fail" and doc["exit_code"] == 1
    assert doc["counts"] == {"pass": 1, "xfail": 0, "skipped": 0, "inconclusive": 1, "fail": 1, "error": 0}
    cases = junit(doc).getroot()
    assert cases is not None
    assert cases.get("failures") == "1" and cases.get("errors") == "1"
    kinds = {case.get("classname"): [child.tag for child in case] for case in cases}
    assert kinds == {"chaos.a": [], "chaos.b": ["error"], "chaos.c": ["failure"]}, "inconclusive is never a pass"


def test_repeats_report_whether_the_verdicts_agreed() -> None:
    cell = Cell("a", "s")
    doc = document(run(cell, "pass", repeat=1), run(cell, "fail", repeat=2, got="fail"))
    assert doc["stability"] == [{"key": "a-s-seed1", "runs": 2, "verdicts": {"pass": 1, "fail": 1}, "stable": False}]
    assert "unstable: a-s-seed1" in markdown(doc)


def test_the_step_summary_stays_under_its_cap_and_says_what_it_left_out() -> None:
    runs = [run(Cell(f"target_{i}", f"scenario_{i % 7}"), "fail") for i in range(400)]
    doc = document(*runs)
    text = markdown(doc, cap=10_000)
    assert len(text.encode()) <= 10_000
    assert "The matrix is left out" in text and "more left out to stay under GitHub's 1 MiB step summary" in text
    assert "## queue-chaos suite: FAIL (exit 1)" in text


def test_write_appends_to_githubs_step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_suite_reports(tmp_path, document(run(Cell("a", "s"), "pass")))
    assert summary.read_text().startswith("earlier step\n## queue-chaos suite: PASS (exit 0)")
    assert ET.parse(tmp_path / "junit.xml").getroot().get("tests") == "1"


STUCK_AS_IT_MUST, LOSES = Cell("t2", "s", "fail", "stuck"), Cell("t3", "s")
CELLS = (Cell("t0", "s"), Cell("t1", "s"), STUCK_AS_IT_MUST, LOSES, Cell("t4", "s"))


def answers(run: Planned) -> dict[str, Any]:
    """Every run gives its cell's answer."""
    if run.cell == STUCK_AS_IT_MUST:
        return shards_verdict("fail", "stuck", seed=run.seed)
    return shards_verdict(seed=run.seed)


def fails_t3(run: Planned) -> dict[str, Any]:
    """Every run gives its cell's answer but t3's, which loses a job where it must pass."""
    return shards_verdict("fail", "lost", seed=run.seed) if run.cell == LOSES else answers(run)


def test_merged_shards_equal_the_whole_and_overlap_is_refused(tmp_path: Path) -> None:
    whole = json.loads((write_shards(tmp_path, CELLS, 0, fails_t3)[0] / "suite.json").read_text())
    assert whole["status"] == "fail" and whole["counts"]["fail"] == 1
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, fails_t3)
    merged = merge([shard1, shard2], tmp_path / "merged")
    in_order = [(c["key"], c["status"], c["verdict"]) for c in merged["cells"]]
    assert in_order == [(c["key"], c["status"], c["verdict"]) for c in whole["cells"]], "as one machine ran them"
    assert merged["exit_code"] == whole["exit_code"] == 1 and merged["shards"] == ["1/2", "2/2"]
    assert all(c["run_dir"].startswith("../shard") for c in merged["cells"])
    assert json.loads((tmp_path / "merged" / "suite.json").read_text())["counts"] == whole["counts"]
    assert merged["plan"]["digest"] == whole["plan"]["digest"]
    with pytest.raises(ConfigError, match="do not make up the whole suite: missing 2/2; given twice 1/2"):
        merge([shard1, shard1], tmp_path / "again")
    with pytest.raises(ConfigError, match=r"do not make up the whole suite: missing 2/2\. A missing shard's runs"):
        merge([shard1], tmp_path / "alone")  # a shard whose machine wrote nothing
    with pytest.raises(ConfigError, match="already holds a suite's reports"):
        merge([shard1, shard2], tmp_path / "merged")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "suite.json").write_text('{"schema": "queue-chaos/suite/2", "cells": [{}]}')
    with pytest.raises(ConfigError, match="is no suite report"):
        merge([tmp_path / "bad"], tmp_path / "never")


def refused(dirs: list[Path], out: Path, *phrases: str) -> str:
    """The one-paragraph refusal of a merge, holding each phrase; nothing written."""
    with pytest.raises(ConfigError) as caught:
        merge(dirs, out)
    message = str(caught.value)
    assert all(phrase in message for phrase in phrases), message
    assert "\n" not in message and not out.exists()
    return message


@pytest.mark.parametrize("forged", ["pass", "xfail"])
def test_a_status_its_run_does_not_give_is_refused_naming_the_run(tmp_path: Path, forged: str) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, fails_t3)
    losing = holder([shard1, shard2], "t3-s-seed1")
    edit(losing, lambda doc: record(doc, "t3-s-seed1").update(status=forged))
    refused([shard1, shard2], tmp_path / "merged", f"{losing / 'suite.json'}: t3-s-seed1 says {forged}, judged again "
            "fail (expected PASS, got FAIL (exit code 1) with lost)")
    # the record's verdict edited as well: the run dir's verdict.json is the run's word
    edit(losing, lambda doc: record(doc, "t3-s-seed1").update(verdict="pass", violations=[], exit_code=0))
    refused([shard1, shard2], tmp_path / "merged", "t3-s-seed1 says", "judged again fail")


def test_a_shards_own_status_and_exit_code_are_computed_never_believed(tmp_path: Path) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, fails_t3)
    edit(holder([shard1, shard2], "t3-s-seed1"), lambda doc: doc.update(status="pass", exit_code=0))
    refused([shard1, shard2], tmp_path / "merged", "says its status is 'pass' (exit code 0), but its runs, judged "
            "again, make fail (exit code 1)")


@pytest.mark.parametrize("status", [None, "bogus", 1])
def test_a_run_with_no_or_an_unknown_status_is_refused(tmp_path: Path, status: object) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, answers)
    if status is None:
        edit(shard1, lambda doc: doc["cells"][0].pop("status"))
    else:
        edit(shard1, lambda doc: doc["cells"][0].update(status=status))
    found = "no status" if status is None else f"status = {str(status)!r}"
    refused([shard1, shard2], tmp_path / "merged", f"the run t0-s-seed1 has {found}; expected one of pass, xfail, "
            "skipped, inconclusive, fail, error")


def test_a_run_that_left_processes_behind_stays_an_error(tmp_path: Path) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, answers)

    def left(doc: dict[str, Any]) -> None:
        doc["cells"][0].update(left_behind=[4242], status="error")
        doc.update(status="error", exit_code=3)

    edit(shard1, left)
    merged = merge([shard1, shard2], tmp_path / "merged")
    assert merged["exit_code"] == 3 and "pid 4242" in merged["cells"][0]["reasons"][0]
    edit(shard1, lambda doc: doc["cells"][0].update(left_behind=[]))  # the pids gone, the status kept
    refused([shard1, shard2], tmp_path / "again", "says error, judged again pass")


def test_a_run_dir_elsewhere_missing_or_of_another_run_is_refused(tmp_path: Path) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, answers, seeds=(1, 2))
    key = json.loads((shard1 / "suite.json").read_text())["cells"][0]["key"]
    edit(shard1, lambda doc: doc["cells"][0].update(run_dir="../../elsewhere"))
    refused([shard1, shard2], tmp_path / "merged", "names the run dir '../../elsewhere'", "where `chaos suite` puts")
    shard1, shard2 = write_shards(tmp_path / "b", CELLS, 2, answers, seeds=(1, 2))
    run_dir = shard1 / json.loads((shard1 / "suite.json").read_text())["cells"][0]["run_dir"]
    (run_dir / "verdict.json").write_text(json.dumps(shards_verdict(seed=7)))
    refused([shard1, shard2], tmp_path / "merged", "cannot be judged: it is the verdict of seed 7")
    (run_dir / "verdict.json").write_text('{"verdict": "pass", "violations": {"kind": "lost"}}')
    refused([shard1, shard2], tmp_path / "merged", "cannot be judged: its violations are")
    (run_dir / "verdict.json").unlink()  # no verdict: the run is an error, whatever its record says
    refused([shard1, shard2], tmp_path / "merged", "says pass, judged again error (the run wrote no verdict")
    shutil.rmtree(run_dir)
    refused([shard1, shard2], tmp_path / "merged", f"the run dir of {key}", "is missing", "whole --out directory")


def test_every_run_of_the_plan_must_be_in_the_shard_it_was_dealt_to(tmp_path: Path) -> None:
    shard1, shard2 = write_shards(tmp_path, CELLS, 2, fails_t3)
    emptied = json.loads((shard2 / "suite.json").read_text())["cells"]
    edit(shard2, lambda doc: doc.update(cells=[], status="pass", exit_code=0, counts={}))
    refused([shard1, shard2], tmp_path / "merged", f"{len(emptied)} of the plan's 5 runs ran in no shard given",
            *(f"{cell['key']} (dealt to 2/2)" for cell in emptied))
    shard1, shard2 = write_shards(tmp_path / "b", CELLS, 2, answers)
    moved = json.loads((shard2 / "suite.json").read_text())["cells"][0]
    edit(shard1, lambda doc: doc["cells"].append(moved))
    refused([shard1, shard2], tmp_path / "merged", f"holds {moved['key']}, which its plan deals to shard 2/2")


def test_shards_of_different_plans_are_refused(tmp_path: Path) -> None:
    shard1, _ = write_shards(tmp_path / "new", CELLS, 2, fails_t3)
    _, older = write_shards(tmp_path / "old", CELLS[:1], 2)  # an older suite file: one cell, nothing for 2/2
    assert json.loads((older / "suite.json").read_text())["cells"] == []
    refused([shard1, older], tmp_path / "merged", "planned from different suites", "(5 cells, 5 run keys)",
            "(1 cells, 1 run keys)")
    shard1, shard2 = write_shards(tmp_path / "answer", CELLS, 2, fails_t3)
    edit(shard2, lambda doc: doc["plan"]["cells"][3].update(verdict="fail", violation="lost"))
    refused([shard1, shard2], tmp_path / "merged", "its plan's digest", "the plan was edited")
    edit(shard2, lambda doc: doc.pop("plan"))
    refused([shard1, shard2], tmp_path / "merged", "records no plan", "older queue-chaos")


def test_shards_dealt_by_other_durations_are_refused_naming_the_runs_none_ran(tmp_path: Path) -> None:
    cells = (Cell("a", "s"), Cell("b", "s"), Cell("c", "s"))
    by_time, _ = write_shards(tmp_path / "hit", cells, 2, durations={"c-s-seed1": 10.0, "a-s-seed1": 1.0})
    _, round_robin = write_shards(tmp_path / "miss", cells, 2)
    assert [c["key"] for c in json.loads((by_time / "suite.json").read_text())["cells"]] == ["c-s-seed1"]
    assert [c["key"] for c in json.loads((round_robin / "suite.json").read_text())["cells"]] == ["b-s-seed1"]
    refused([by_time, round_robin], tmp_path / "merged", "dealt the suite's runs differently",
            "by the --durations of digest sha256:", "round-robin, without --durations",
            "run keys no shard ran: a-s-seed1; run twice: none", "Give every shard the same --durations file")


def test_a_cell_reads_back_from_its_json_or_is_refused() -> None:
    every = Cell("t", "s", "fail", "stuck", ("a=1",), 2.0, {"lost": 0}, ("claim", "kill"), ("lease_s=3",), "rule",
                 ("n=2",), ("stale_ack_accepted",), 1.0, "bug", False, "docker", "image", "why", "no execution")
    assert Cell.from_json(json.loads(json.dumps(every.to_json()))) == every
    assert Cell("t", "s").to_json() == {"target": "t", "scenario": "s"}
    for bad, phrase in [({"target": "t", "scenario": "s", "counts": {"lost": "0"}}, "not a table of whole numbers"),
                        ({"target": "t", "scenario": "s", "verdict": "crash"}, "expects the verdict 'crash'"),
                        ({"target": "t"}, "expected target, scenario"), ([], "not a table"),
                        ({"target": "t", "scenario": "s", "max_recovery_s": True}, "not a number or null")]:
        with pytest.raises(ValueError, match=re.escape(phrase)):
            Cell.from_json(bad)


def test_a_cell_listed_twice_is_refused(tmp_path: Path) -> None:
    twice = '[[cell]]\ntarget = "pg_naive"\nscenario = "no_faults"\n'
    with pytest.raises(ConfigError, match="lists pg_naive x no_faults twice"):
        load_suite(write(tmp_path, twice + twice.replace("no_faults\"", "no_faults\"\nverdict = \"fail\"")))


def test_a_contract_setting_and_a_parameter_make_different_cells() -> None:
    as_param, as_contract = Cell("t", "s", params=("k=v",)), Cell("t", "s", contract=("k=v",))
    assert as_param.id == "t-k=v-s" and as_contract.id == "t-c:k=v-s"
    assert Planned(as_param, 1).run_key != Planned(as_contract, 1).run_key


def test_seeds_from_a_command_line() -> None:
    assert parse_seeds_text("3", "--seeds") == (3,) and parse_seeds_text("1, 2,5", "--seeds") == (1, 2, 5)
    assert parse_seeds_text("2-3", "--seeds") == (2, 3)
    for bad in ("1,x", "1,\u00b2", "", "-1"):
        with pytest.raises(ConfigError, match="--seeds: seeds = "):
            parse_seeds_text(bad, "--seeds")


# -- progress -----------------------------------------------------------------------------------------


def test_a_running_runs_progress_is_read_from_its_ledger(tmp_path: Path) -> None:
    from chaos import events
    from chaos.ledger import Ledger
    from chaos.suite.progress import Progress

    runs = tmp_path / "runs"
    (runs / "20260101-run").mkdir(parents=True)
    ledger = Ledger(runs / "20260101-run" / "ledger.sqlite")
    lines: list[str] = []
    progress = Progress(lines.append, live=False)
    planned = Planned(Cell("pg_lease", "kill_after_effect_before_ack"), 3)
    progress.started(planned, runs)
    run = progress._running[planned.run_key]
    ledger.append(events.run_start(target="pg_lease"))
    assert progress._status(run)[0] == "starting"
    for job in ("a", "b"):
        ledger.append(events.enqueue(job, {}))
    ledger.append(events.probe(events.ACK, "a", "w1", {"token": "t", "ok": True}))
    ledger.append(events.fault_applied("f1", "w1", {}))
    phase, text = progress._status(run)
    assert phase == "injecting faults"
    assert text.startswith("pg_lease x kill_after_effect_before_ack seed 3: injecting faults; 1/2 jobs settled, "
                           "1 fault(s) injected")
    ledger.append(events.run_end("ok", ""))
    assert progress._status(run)[0] == "judging"
    progress.finished(planned, "[1/1] PASS ...")
    assert lines == ["[1/1] PASS ..."] and not progress._running
    ledger.close()


# -- include ---------------------------------------------------------------------------------------


def test_an_included_file_adds_its_cells_under_the_including_files_seeds(tmp_path: Path) -> None:
    (tmp_path / "part").mkdir()
    write(tmp_path / "part", '[[cell]]\ntarget = "pg_naive"\nscenario = "no_faults"\n', "one.toml")
    suite = load_suite(write(tmp_path, 'seeds = [1, 2]\ninclude = ["part/one.toml"]\n'
                                       '[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\n'))
    assert [(cell.target, cell.scenario) for cell in suite.cells] == [("pg_lease", "no_faults"),
                                                                       ("pg_naive", "no_faults")]
    assert suite.seeds == (1, 2)


def test_an_include_that_is_missing_or_loops_back_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="includes .*nope.toml, which is not a file"):
        load_suite(write(tmp_path, 'include = ["nope.toml"]\n'))
    write(tmp_path, 'include = ["a.toml"]\n[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\n', "b.toml")
    with pytest.raises(ConfigError, match="includes it back"):
        load_suite(write(tmp_path, 'include = ["b.toml"]\n', "a.toml"))


def test_a_cell_in_two_included_files_is_listed_twice(tmp_path: Path) -> None:
    cell = '[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\n'
    write(tmp_path, cell, "one.toml")
    write(tmp_path, cell, "two.toml")
    with pytest.raises(ConfigError, match="twice"):
        load_suite(write(tmp_path, 'include = ["one.toml", "two.toml"]\n'))
