"""Never a silent pass, never the queue blamed for the suite's or the user's mistake: every run ends, and
every failure names its cause. Each test runs the CLI as a user would meet the problem."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

from chaos import events
from chaos.backends.external import mask_password
from chaos.backends.postgres.external import schema_name
from chaos.backends.postgres.local import LocalPostgres
from chaos.discovery import bundled
from chaos.ledger import Ledger, read_events
from chaos.leftovers import run_processes
from chaos.ownership import new_marker
from tests.integration.runner import REPO, CliResult, chaos

QUICK = '''"""A quick scenario for this test."""

FAULTS = ()


def run(ctx):
    ctx.enqueue(2)
{body}
'''


def scenario(tmp_path: Path, body: str, name: str = "quick") -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(QUICK.format(body="\n".join(f"    {line}" for line in body.splitlines())))
    return path


def target(tmp_path: Path, folder: str = "mytarget", **replace: str) -> Path:
    """A copy of pg_lease whose target.toml has these top-level keys replaced (values as TOML text)."""
    path = tmp_path / folder
    shutil.copytree(bundled("targets") / "pg_lease", path, ignore=shutil.ignore_patterns("__pycache__"))
    lines = (path / "target.toml").read_text().splitlines()
    for key, value in replace.items():
        lines = [f"{key} = {value}" if line.split("=")[0].strip() == key else line for line in lines]
        if not any(line.split("=")[0].strip() == key for line in lines):
            lines.insert(0, f"{key} = {value}")
    (path / "target.toml").write_text("\n".join(lines) + "\n")
    return path


def run(tmp_path: Path, target_ref: str | Path, scenario_ref: str | Path, *extra: str) -> CliResult:
    return chaos("run", "--target", str(target_ref), "--scenario", str(scenario_ref), "--seed", "1",
                 "--runs-dir", str(tmp_path / "runs"), *extra)


def strict_json(path: Path) -> Any:
    """verdict.json as strict JSON: NaN or Infinity in it fails the test."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{path} holds {name}")
    return json.loads(path.read_text(), parse_constant=refuse)


def assert_error_run(result: CliResult, *phrases: str) -> dict[str, Any]:
    """Exit 3 with an `error` verdict written and its reason printed: never a verdict on the queue."""
    assert result.code == 3, result.stdout + result.stderr
    assert result.stdout.startswith("ERROR"), result.stdout
    verdict: dict[str, Any] = strict_json(result.dir / "verdict.json")
    assert verdict["verdict"] == "error"
    for phrase in phrases:
        assert phrase in result.stdout + result.stderr, result.stdout + result.stderr
    assert "a bug in queue-chaos" not in result.stderr, "the user's mistake is not reported as the suite's"
    assert not run_processes(result.dir)
    return verdict


# 1. A scenario's SystemExit -----------------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 1])
def test_a_scenario_that_calls_sys_exit_is_a_scenario_error_never_a_silent_pass(tmp_path: Path, code: int) -> None:
    result = run(tmp_path, "pg_lease", scenario(tmp_path, f"import sys\nsys.exit({code})"))
    assert_error_run(result, "raised SystemExit", "quick.py")


# 2. Every run ends; no NaN ------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "0", "-1", "1e11", "true"])
def test_contract_numbers_must_be_finite_and_positive(tmp_path: Path, value: str) -> None:
    path = target(tmp_path)
    toml = (path / "target.toml").read_text().replace("recovery_bound_s = 2.0", f"recovery_bound_s = {value}")
    (path / "target.toml").write_text(toml)
    result = run(tmp_path, path, "kill_after_effect_before_ack")
    assert result.code == 2 and "finite, positive number of seconds" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_deadline_beyond_any_timer_is_a_usage_error(tmp_path: Path) -> None:
    result = run(tmp_path, "pg_lease", "no_faults", "--deadline", "1e12")
    assert result.code == 2 and "finite, positive number of seconds" in result.stderr, result.stderr


def test_sys_exit_in_the_users_code_is_never_a_silent_exit(tmp_path: Path) -> None:
    at_import = tmp_path / "exits_at_import.py"
    at_import.write_text('"""Exits as it is imported."""\n\nimport sys\n\nsys.exit(0)\n')
    result = run(tmp_path, "pg_lease", at_import)
    assert result.code == 2 and "SystemExit" in result.stderr and "exits_at_import.py" in result.stderr
    path = target(tmp_path)
    (path / "control.py").write_text((path / "control.py").read_text()
                                     + "\n    def setup(self) -> None:\n        raise SystemExit(0)\n")
    assert_error_run(run(tmp_path, path, "no_faults"), "called sys.exit(0)")


def test_a_refused_probe_makes_an_otherwise_passing_run_an_error(tmp_path: Path) -> None:
    """The worker reports one heartbeat without `ok` (refused), then runs pg_lease's real worker."""
    sloppy = ('["{python}", "-c", "from chaos import probe\\ntry:\\n    probe.send(\'heartbeat\', \'job-0001\', '
              'token=\'t\')\\nexcept probe.ProbeError:\\n    pass\\nimport runpy\\n'
              'runpy.run_path(\'{target_dir}/worker.py\', run_name=\'__main__\')"]')
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.wait_drained(10)")
    verdict = assert_error_run(run(tmp_path, target(tmp_path, worker=sloppy), quick),
                               "the sink refused probes", "a heartbeat probe needs the field 'ok'")
    assert verdict["counts"]["completed"] == 2, "the queue itself did its work; the run is still no pass"


def test_a_run_past_its_deadline_ends_as_an_error_naming_what_it_waited_for(tmp_path: Path) -> None:
    began = time.monotonic()
    result = run(tmp_path, "pg_lease", scenario(tmp_path, "ctx.wait_for(lambda e: False, 3600, 'a job that never "
                                                          "settles')"), "--deadline", "3")
    assert time.monotonic() - began < 30
    assert_error_run(result, "passed its deadline of 3s while waiting for a job that never settles")


# 3. Dead workers are not the queue's fault --------------------------------------------------------

@pytest.mark.parametrize(("worker", "phrases"), [
    ('["false"]', ["no worker ever reported a probe", "exited on its own", "exit code 1"]),
    ('["{python}", "-m", "no_such_module_of_mine"]', ["no worker ever reported", "No module named"]),
    ('["{python}", "-c", "import time; time.sleep(60)"]', ["no worker ever reported a probe"]),
    ('["{python}", "-c", "import os; os.environ[\'CHAOS_RUN_TOKEN\'] = \'wrong\'; from chaos import probe; '
     'probe.claim(\'job-0001\', \'t\')"]', ["401 missing or wrong X-Chaos-Token", "ProbeError"]),
], ids=["exits-at-once", "module-typo", "never-reports", "wrong-token"])
def test_workers_that_never_did_any_work_are_a_harness_error_with_their_logs(tmp_path: Path, worker: str,
                                                                             phrases: list[str]) -> None:
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.start_worker()\nctx.wait_drained(1.5)")
    result = run(tmp_path, target(tmp_path, worker=worker), quick)
    verdict = assert_error_run(result, *phrases)
    if "sleep" not in worker:
        assert {e["worker"] for e in verdict["exits"]} == {"w1", "w2"}
        assert all(Path(e["log"]).is_file() for e in verdict["exits"])


# 4. chaos report never destroys evidence ----------------------------------------------------------

def test_report_writes_beside_the_originals_and_refuses_a_damaged_ledger(tmp_path: Path) -> None:
    result = run(tmp_path, "pg_naive", "kill_after_effect_before_ack")
    original = (result.dir / "verdict.json").read_bytes()
    again = chaos("report", str(result.dir), runs_dir=tmp_path)
    assert again.code == 1 and str(result.dir / "regenerated") in again.stdout
    assert (result.dir / "verdict.json").read_bytes() == original
    regenerated = strict_json(result.dir / "regenerated" / "verdict.json")
    assert regenerated["violations"] == json.loads(original)["violations"]
    with closing(sqlite3.connect(str(result.dir / "ledger.sqlite"))) as db, db:
        db.execute("UPDATE events SET data = '{\"target\": ' WHERE seq = 3")
    damaged = chaos("report", str(result.dir), runs_dir=tmp_path)
    assert damaged.code == 2 and "is not a readable queue-chaos ledger" in damaged.stderr
    assert (result.dir / "verdict.json").read_bytes() == original


# 6. The user's mistakes are the user's --------------------------------------------------------------

def test_a_runs_dir_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("not a directory")
    result = run(tmp_path, "pg_lease", "no_faults")
    assert result.code == 2 and "Cannot create the run directory" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("edit", "phrase"), [
    ({"worker": '["{python}", "{target_dir}/worker.py", "{pythn}"]'}, "uses the placeholder {pythn}"),
    ({"worker": '["{python}", "{target_dir"]'}, "is not a valid command template"),
    ({"shutdown_grace_s": "nan"}, "shutdown_grace_s = nan"),
])
def test_a_target_toml_mistake_is_a_usage_error(tmp_path: Path, edit: dict[str, str], phrase: str) -> None:
    result = run(tmp_path, target(tmp_path, **edit), "no_faults")
    assert result.code == 2 and phrase in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_choices_that_are_not_a_table_are_named(tmp_path: Path) -> None:
    path = target(tmp_path)
    toml = re.sub(r"\[choices\]\n(.+\n)+", "", (path / "target.toml").read_text())
    (path / "target.toml").write_text('choices = "abc"\n' + toml)
    result = run(tmp_path, path, "no_faults")
    assert result.code == 2 and "expected choices = a [choices] table of lists" in result.stderr, result.stderr


def test_a_choice_that_is_not_a_list_is_named(tmp_path: Path) -> None:
    path = target(tmp_path)
    toml = (path / "target.toml").read_text().replace('heartbeat = ["thread", "inline", "none", "sidecar"]',
                                                      'heartbeat = "abc"')
    (path / "target.toml").write_text(toml)
    result = run(tmp_path, path, "no_faults", "-p", "heartbeat=inline")
    assert result.code == 2 and "choices heartbeat = 'abc'" in result.stderr, result.stderr


def test_a_target_toml_that_is_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    path = target(tmp_path)
    (path / "target.toml").write_bytes((path / "target.toml").read_bytes() + b'\ndescription = "caf\xe9"\n')
    result = run(tmp_path, path, "no_faults")
    assert result.code == 2 and "is not UTF-8" in result.stderr, result.stderr


def test_a_control_module_that_fails_to_import_names_its_file_and_line(tmp_path: Path) -> None:
    path = target(tmp_path)
    (path / "control.py").write_text('"""Broken."""\n\nimport no_such_dependency_of_mine\n')
    result = run(tmp_path, path, "no_faults")
    assert result.code == 2 and "control.py:3" in result.stderr and "no_such_dependency" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.run_dir is None, "a control that cannot import is refused before the run starts anything"


def test_chaos_list_lists_what_loads_and_names_what_does_not(tmp_path: Path) -> None:
    broken = target(tmp_path / "extra", folder="broken_one", backend='"oracle"')
    result = chaos("list", runs_dir=tmp_path, env={"CHAOS_TARGETS_PATH": str(broken.parent)})
    assert result.code == 2
    assert "pg_lease" in result.stdout and "kill_after_effect_before_ack" in result.stdout
    assert "broken_one" in result.stdout and "BROKEN" in result.stdout and "'oracle' is not supported" in result.stdout


# 7. No option silently ignored; reproducible from anywhere ------------------------------------------

@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPostgres]:
    root = tmp_path_factory.mktemp("server")
    root.chmod(0o755)
    with LocalPostgres(root / "pg") as backend:
        yield backend


def test_a_backend_url_selects_the_external_provider(tmp_path: Path, server: LocalPostgres) -> None:
    result = run(tmp_path, "pg_lease", "kill_after_effect_before_ack", "--backend-url", server.dsn)
    assert result.code == 0, result.stdout + result.stderr
    start = next(e for e in read_events(result.dir / "ledger.sqlite") if e.kind == "run.start")
    assert start.data["backend"] == "external" and "--backend external" in result.stdout
    refused = run(tmp_path, "pg_lease", "no_faults", "--backend", "local", "--backend-url", server.dsn)
    assert refused.code == 2 and "--backend-url is the address of your own server" in refused.stderr


def test_the_reproduce_line_runs_the_same_target_and_scenario_from_anywhere(tmp_path: Path) -> None:
    path = target(tmp_path, folder="my_lease", name='"renamed_lease"')
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.wait_drained(10)")
    result = run(tmp_path, path, quick)
    assert result.code == 0, result.stdout + result.stderr
    reproduce = result.verdict["reproduce"]
    assert str(path) in reproduce and str(quick) in reproduce
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = shlex.split(reproduce)
    assert argv[:2] == ["chaos", "run"]
    again = subprocess.run([sys.executable, "-m", "chaos", *argv[1:], "--runs-dir", str(tmp_path / "again")],
                           cwd=elsewhere, capture_output=True, text=True, timeout=120, check=False,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[0] == result.stdout.splitlines()[0]


# 10. Shutdown grace -----------------------------------------------------------------------------------

def test_a_worker_that_ignores_sigterm_is_killed_after_the_grace_and_reported(tmp_path: Path) -> None:
    stubborn = ('["{python}", "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                'time.sleep(60)"]')
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.wait_drained(0.5)")
    began = time.monotonic()
    result = run(tmp_path, target(tmp_path, worker=stubborn, shutdown_grace_s="0.5"), quick)
    assert time.monotonic() - began < 30
    verdict = assert_error_run(result)
    assert any("did not stop within the shutdown grace of 0.5s" in note for note in verdict["notes"])
    assert "did not stop within the shutdown grace" in result.stdout


def test_the_run_waits_for_an_execution_that_made_an_effect_to_end(tmp_path: Path) -> None:
    slow_ack = ('["{python}", "-c", "import time; from chaos import probe; probe.claim(\'job-0001\', \'t\'); '
                'probe.effect(\'job-0001\', \'t\'); time.sleep(1.5); probe.ack(\'job-0001\', \'t\', True); '
                'time.sleep(60)"]')
    quick = scenario(tmp_path, "ctx.start_worker()\nctx.wait_for(ctx.probe_of('effect', 'job-0001'), 30, 'the effect')")
    result = run(tmp_path, target(tmp_path, worker=slow_ack), quick)
    kinds = [e.kind for e in read_events(result.dir / "ledger.sqlite") if e.job == "job-0001"]
    assert "probe.ack" in kinds, "the worker was stopped before the execution that made an effect ended"
    assert not run_processes(result.dir)
    assert not [p for p in psutil.Process().children(recursive=True) if "sleep(60)" in " ".join(p.cmdline())]


@pytest.mark.parametrize("key", ["namespace", "schema"])  # schema: ledgers written before it was the namespace
def test_a_killed_runs_external_schema_is_dropped_and_nothing_else(tmp_path: Path, server: LocalPostgres,
                                                                    key: str) -> None:
    """A ledger as a runner killed mid-run leaves it: started, the external backend's schema recorded (named for
    the run dir, its comment the run's marker), no end. A schema of that name without the marker is kept."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_dir = tmp_path / "runs" / "20260101-000000-000000-pg_lease-no_faults"
    twin = tmp_path / "runs" / "20260101-000000-000001-pg_lease-no_faults"
    killed, marker = schema_name(run_dir.name), new_marker()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {killed}")
        conn.execute(f"COMMENT ON SCHEMA {killed} IS '{marker}'")
        conn.execute(f"CREATE SCHEMA {schema_name(twin.name)}")  # of the suite's form, but not marked
        conn.execute("CREATE SCHEMA chaos_someone_elses")
    for where in (run_dir, twin):
        where.mkdir(parents=True)
        ledger = Ledger(where / "ledger.sqlite")
        ledger.append(events.run_start(target="pg_lease", pid=dead.pid, pid_create_time=0.0, backend="external",
                                       backend_kind="postgres", host=socket.gethostname()))
        ledger.append(events.backend_start(provider="external", url=mask_password(server.dsn), marker=marker,
                                           **{key: schema_name(where.name)}))
        ledger.close()
    unknown = chaos("clean", "--runs-dir", str(tmp_path / "runs"), runs_dir=tmp_path,
                    env={"CHAOS_POSTGRES_URL": ""})
    assert unknown.code == 1, unknown.stdout
    assert f"its PostgreSQL namespace {killed} may be left" in unknown.stdout, unknown.stdout
    assert read_events(run_dir / "ledger.sqlite")[-1].kind == "backend.start", "not marked: it can be cleaned later"
    result = chaos("clean", "--runs-dir", str(tmp_path / "runs"), "--backend-url", server.dsn, runs_dir=tmp_path)
    assert result.code == 1, result.stdout + result.stderr
    assert f"removed its PostgreSQL namespace {killed}" in result.stdout, result.stdout
    assert (f"its PostgreSQL namespace {schema_name(twin.name)} on {mask_password(server.dsn)} is not touched: it "
            f"holds no marker object with the run's marker {marker}") in result.stdout, result.stdout
    with psycopg.connect(server.dsn) as conn:
        schemas = {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'chaos_%'")}
    assert schemas == {"chaos_someone_elses", schema_name(twin.name)}
    assert read_events(run_dir / "ledger.sqlite")[-1].data["status"] == "abandoned"
    assert read_events(twin / "ledger.sqlite")[-1].kind == "backend.start", "what is left is not marked cleaned"


def test_a_gate_no_worker_is_left_to_reach_ends_its_wait_at_once(tmp_path: Path) -> None:
    waits = scenario(tmp_path, "gate = ctx.arm('after:effect', job='job-0001')\nctx.start_worker()\n"
                               "ctx.start_worker()\nctx.wait(gate, 30.0)")
    began = time.monotonic()
    result = run(tmp_path, target(tmp_path, worker='["false"]'), waits)
    assert time.monotonic() - began < 15, "the wait ended when the last worker exited, not after 30 s"
    assert "gate g1 (after:effect job=job-0001) can no longer match: every worker has exited" in result.stdout


def test_a_scenario_that_kills_and_ends_at_once_is_inconclusive_not_a_false_stuck(tmp_path: Path) -> None:
    abrupt = tmp_path / "abrupt.py"
    abrupt.write_text('"""Kills the owner after its effect and ends at once."""\n\nFAULTS = ("kill",)\n\n\n'
                      "def run(ctx):\n    ctx.enqueue(1)\n    gate = ctx.arm('after:effect', job='job-0001')\n"
                      "    ctx.start_worker()\n    ctx.kill_held(gate)\n")
    result = run(tmp_path, "pg_lease", abrupt)
    assert result.code == 4, result.stdout + result.stderr
    assert result.verdict["jobs"] == {"job-0001": "unsettled"} and not result.verdict["violations"]
    assert "job-0001 was still claimed" in result.stdout and "the scenario ended too soon" in result.stdout


def test_a_drain_with_every_worker_dead_ends_a_recovery_bound_later_with_the_same_verdict(tmp_path: Path) -> None:
    """Not after its 30 s bound: once no process is left that could finish a job, the wait lasts only until
    the lost owner's job is past its recovery bound, so it is judged exactly as after the full wait: not
    stuck, since no worker was left to take it (a correct queue cannot recover a job for nobody), so the
    run proved nothing."""
    alone = tmp_path / "alone.py"
    alone.write_text('"""Kills the only worker after its effect, then waits for a drain that cannot come."""\n\n'
                     'FAULTS = ("kill",)\n\n\ndef run(ctx):\n    ctx.enqueue(1)\n'
                     "    gate = ctx.arm('after:effect', job='job-0001')\n    ctx.start_worker()\n"
                     "    ctx.kill_held(gate)\n    ctx.wait_drained(30.0)\n")
    result = run(tmp_path, "pg_lease", alone)
    recorded = read_events(result.dir / "ledger.sqlite")
    killed = next(e for e in recorded if e.kind == "fault.applied")
    gave_up = next(e for e in recorded if e.kind == "drain.timeout")
    assert gave_up.data.get("workers_exited") is True, gave_up.data
    assert 2.0 <= gave_up.mono - killed.mono < 6.0, "the wait ended a recovery bound (2 s) after the kill, not at 30 s"
    assert result.code == 4, result.stdout + result.stderr
    assert result.verdict["jobs"] == {"job-0001": "unsettled"}, result.verdict["jobs"]
    assert "no worker was free to take it" in result.stdout
