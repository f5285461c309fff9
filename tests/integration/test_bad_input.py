"""Bad input: one clear paragraph saying what was expected and how to fix it, exit 2, no traceback,
and nothing left running."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from chaos import ConfigError, RunOptions, events, find_scenario, find_target, run_scenario
from chaos.faults import clock
from chaos.ledger import Ledger
from chaos.leftovers import processes_mentioning, run_processes
from tests.integration.runner import chaos


def assert_usage_error(result, *phrases: str) -> None:  # type: ignore[no-untyped-def]
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    assert not processes_mentioning(str(result.run_dir)) if result.run_dir else True


def test_unknown_target(tmp_path: Path) -> None:
    result = chaos("run", "--target", "no_such_queue", "--scenario", "kill_after_effect_before_ack",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "Unknown target 'no_such_queue'", "pg_lease", "chaos list")
    assert not list(tmp_path.iterdir()), "no run dir for a run that never started"


def test_unknown_scenario(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "nope", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "Unknown scenario 'nope'", "kill_after_effect_before_ack")


def test_a_run_dir_file_that_cannot_be_written(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"),
                   "--run-dir-file", str(tmp_path / "no_such_folder" / "run-dir"))
    assert_usage_error(result, "Cannot write the run dir's path to --run-dir-file", "a path in a writable directory")
    assert result.run_dir is None, "no run dir for a run that never started"


@pytest.mark.parametrize("toml, phrase", [
    ("backend = \n", "is not valid TOML"),
    ('backend = "postgres"\nworker = ["x"]\n', "expected contract = a [contract] table"),
    ('backend = "oracle"\nworker = ["x"]\n[contract]\nrecovery_bound_s = 1\n', "backend = 'oracle' is not supported"),
    ('backend = "postgres"\nworker = ["x"]\n[contract]\nrecovery_bound_s = 1\ndelivery = "maybe"\n',
     "contract delivery = 'maybe'"),
    ('backend = "postgres"\nworker = ["x"]\n[contract]\nlease_s = 1\n', "needs recovery_bound_s"),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nlevels = [1, 2]\n[contract]\nrecovery_bound_s = 1\n',
     "parameter levels = [1, 2] must be a string, integer, finite number or boolean"),
    ('backend = "redis"\nworker = ["x"]\n[server]\ncolor = 1\n[contract]\nrecovery_bound_s = 1\n',
     "[server] sets 'color', which no redis provider takes; its server settings are: persistence"),
    ('backend = "redis"\nworker = ["x"]\n[server]\npersistence = "sometimes"\n[contract]\nrecovery_bound_s = 1\n',
     'server setting persistence = "sometimes" is not allowed; expected "none" | "aof-everysec" | "aof-always"'),
    ('backend = "redis"\nworker = ["x"]\n[server]\npersistence = "none"\n[params]\npersistence = "x"\n'
     '[contract]\nrecovery_bound_s = 1\n', "persistence is both a [server] setting and a [params] parameter"),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nn = 1\n[choices]\nn = ["1", "2"]\n[contract]\n'
     'recovery_bound_s = 1\n', "each choice must be an integer, as its default n = 1 is"),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nmode = "c"\n[choices]\nmode = ["a", "b"]\n[contract]\n'
     'recovery_bound_s = 1\n', 'the default mode = "c" is not among its choices'),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nage_s = 2.0\n[contract]\nrecovery_bound_s = 1\n'
     'lease_s = "{param:age}"\n', 'contract lease_s = "{param:age}" names no parameter of the target (its [params]: '
     'age_s)'),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nage = "long"\n[contract]\nrecovery_bound_s = 1\n'
     'lease_s = "{param:age}"\n', "names the parameter age = 'long', which is not a number of seconds"),
    ('backend = "postgres"\nworker = ["x"]\n[params]\nage = 2.0\n[contract]\nrecovery_bound_s = 1\n'
     'lease_s = "{param:age"\n', "lease_s = '{param:age' is no parameter reference"),
])
def test_malformed_target_toml(tmp_path: Path, toml: str, phrase: str) -> None:
    target = tmp_path / "mytarget"
    target.mkdir()
    (target / "target.toml").write_text(toml)
    result = chaos("run", "--target", str(target), "--scenario", "kill_after_effect_before_ack",
                   "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, phrase, "target.toml")


def test_unknown_parameter_and_bad_value(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "kill_after_effect_before_ack", "-p", "color=red",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "no parameter or server setting 'color'", "heartbeat")
    result = chaos("run", "--target", "pg_lease", "--scenario", "kill_after_effect_before_ack", "-p", "ack=sometimes",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "ack='sometimes' is not one of conditional, unconditional")


@pytest.mark.parametrize("args, phrases", [
    (["-p", "ttr=5", "-c", "reservation_s=3"], ["-p ttr=5 and -c reservation_s=3 contradict each other",
                                                'reservation_s = "{param:ttr}"']),
    (["-c", "reservation_s={param:tube}"], ['contract reservation_s = "{param:tube}" names no parameter', "ttr"]),
    (["-c", "reservation_s=soon"], ["-c reservation_s=soon sets the parameter ttr too", "is not an integer"]),
    (["-p", "ttr=0"], ["tied to [params]: reservation_s = ttr", "contract reservation_s = 0"]),
    (["-c", "reservation="], ["-c reservation= unsets no contract key", "reservation_s"]),
])
def test_a_contract_that_contradicts_its_params_is_refused_naming_both(tmp_path: Path, args: list[str],
                                                                      phrases: list[str]) -> None:
    result = chaos("run", "--target", "beanstalkd_ttr", "--scenario", "no_faults", *args, "--runs-dir", str(tmp_path))
    assert_usage_error(result, *phrases)
    assert result.stderr.count("\n") == 1, "one paragraph: " + result.stderr
    assert not list(tmp_path.iterdir()), "no run dir for a run that never started"


def test_a_parameter_keeps_the_kind_of_its_default(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lifeline", "--scenario", "kill_after_effect_before_ack",
                   "-p", "rescue_after_s=abc", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "rescue_after_s='abc' is not a finite number", "rescue_after_s = 1.5")
    assert not list(tmp_path.iterdir()), "no run dir for a run that never started"


def test_a_server_setting_an_external_server_cannot_take_is_refused(tmp_path: Path) -> None:
    result = chaos("run", "--target", "redis_basic", "--scenario", "no_faults", "-p", "persistence=aof-always",
                   "--backend-url", "redis://127.0.0.1:1/0", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "sets the redis server's persistence, which the external provider cannot set")
    assert not list(tmp_path.iterdir()), "no run dir for a run that never started"


def test_missing_initdb(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "kill_after_effect_before_ack",
                   "--runs-dir", str(tmp_path), env={"CHAOS_POSTGRES_BIN": "/nonexistent"})
    assert_usage_error(result, "CHAOS_POSTGRES_BIN=/nonexistent", "initdb")


def test_bad_external_dsn(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "kill_after_effect_before_ack", "--backend",
                   "external", "--backend-url", "postgresql://nobody:secret@127.0.0.1:1/x", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "127.0.0.1")
    assert "secret" not in result.stderr, "passwords are masked"


def test_report_on_a_directory_without_a_ledger(tmp_path: Path) -> None:
    result = chaos("report", str(tmp_path), runs_dir=tmp_path)
    assert_usage_error(result, "No ledger")


def test_report_on_a_file_that_is_not_a_ledger(tmp_path: Path) -> None:
    (tmp_path / "ledger.sqlite").write_text("these are my notes, not a database\n")
    result = chaos("report", str(tmp_path), runs_dir=tmp_path)
    assert_usage_error(result, "is not a readable queue-chaos ledger")


def test_report_on_a_ledger_with_a_damaged_row(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.append(events.run_start(target="pg_lease"))
    ledger.close()
    with closing(sqlite3.connect(str(tmp_path / "ledger.sqlite"))) as db, db:
        db.execute("UPDATE events SET data = '{\"target\": ' WHERE seq = 1")
    result = chaos("report", str(tmp_path), runs_dir=tmp_path)
    assert_usage_error(result, "is not a readable queue-chaos ledger")


def test_a_scenario_that_raises_is_a_harness_error_with_its_traceback_and_no_leftovers(tmp_path: Path) -> None:
    scenario = tmp_path / "broken.py"
    scenario.write_text('"""Starts a worker, then fails."""\n\nFAULTS = ()\n\n\ndef run(ctx):\n    ctx.start_worker()\n'
                        "    raise ValueError('my scenario is wrong')\n")
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 3, result.stdout + result.stderr
    assert "raised ValueError: my scenario is wrong" in result.stderr
    assert "broken.py" in result.stderr and "Traceback" in result.stderr, "the user's own traceback is shown"
    assert result.run_dir is not None and not run_processes(result.run_dir)


def test_a_fault_the_backend_cannot_take_is_refused_before_anything_starts(tmp_path: Path) -> None:
    # The URL names no server at all: a run that started anything would fail on it, not on the capability.
    result = chaos("run", "--target", "pg_lease", "--scenario", "restart_backend_during_recovery", "--backend",
                   "external", "--backend-url", "postgresql://nobody@127.0.0.1:1/x", "--runs-dir", str(tmp_path))
    assert_usage_error(result, "restart_backend_during_recovery cannot run here", "backend_restart",
                       "capability restart", "postgres external")
    assert not list(tmp_path.iterdir()), "no run dir for a run refused before it started"


def test_a_scenario_naming_an_unknown_fault_kind_is_refused(tmp_path: Path) -> None:
    scenario = tmp_path / "typo.py"
    scenario.write_text('"""Declares a fault kind that does not exist."""\n\nFAULTS = ("kil",)\n\n\n'
                        "def run(ctx):\n    ctx.enqueue(1)\n")
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "FAULTS names 'kil', which is not a fault kind", "kill")


def test_a_scenario_without_faults_declared_is_refused(tmp_path: Path) -> None:
    scenario = tmp_path / "undeclared.py"
    scenario.write_text('"""Says nothing of its faults."""\n\n\ndef run(ctx):\n    ctx.enqueue(1)\n')
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "FAULTS = None", "FAULTS = ()")


def test_a_fault_the_scenario_did_not_declare_is_refused_and_everything_stopped(tmp_path: Path) -> None:
    scenario = tmp_path / "sneaky.py"
    scenario.write_text('"""Declares no fault, then kills."""\n\nFAULTS = ()\n\n\n'
                        "def run(ctx):\n    ctx.kill(ctx.start_worker())\n")
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "injected a kill fault", "add 'kill' to FAULTS")
    assert result.run_dir is not None and not run_processes(result.run_dir)


def test_a_gate_on_a_worker_that_does_not_exist_is_refused_when_armed(tmp_path: Path) -> None:
    scenario = tmp_path / "typo.py"
    scenario.write_text('"""Gates a worker it never started."""\n\nFAULTS = ()\n\n\n'
                        "def run(ctx):\n    ctx.start_worker()\n    ctx.arm('after:claim', worker='w9')\n")
    result = chaos("run", "--target", "pg_lease", "--scenario", str(scenario), "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "worker='w9'", "started: w1")
    assert result.run_dir is not None and not run_processes(result.run_dir)


def test_a_contract_override_is_checked_as_target_toml_is(tmp_path: Path) -> None:
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "-c", "watchdog=maybe",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "watchdog = 'maybe'", "true or false")
    result = chaos("run", "--target", "pg_lease", "--scenario", "no_faults", "-c", "watchdog",
                   "--runs-dir", str(tmp_path))
    assert_usage_error(result, "-c 'watchdog'", "KEY=VALUE")


def test_a_clock_fault_without_libfaketime_is_refused_before_anything_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "FAKETIME_GLOBS", (str(tmp_path / "nowhere" / "libfaketime.so.1"),))
    with pytest.raises(ConfigError, match="libfaketime"):
        run_scenario(find_target("pg_lease"), find_scenario("worker_clock_skew"), RunOptions(runs_dir=tmp_path))
    assert not list(tmp_path.glob("*-pg_lease-*")), "no run dir for a run refused before it started"


def test_a_control_missing_a_member_the_run_relies_on_is_named(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    shutil.copytree(find_target("redis_basic").path, target)
    (target / "control.py").write_text(
        "class Control:\n"
        "    def __init__(self, backend, params, contract): pass\n"
        "    def setup(self): pass\n"
        "    def enqueue(self, jobs): pass\n"
        "    def worker_env(self, endpoint): return {}\n"
        "    def snapshot(self): return []\n"
        "    def close(self): pass\n")
    result = chaos("run", "--target", str(target), "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "its control control:Control has no shows_deliveries, completion",
                       "chaos.KeepsNoCompletions")


@pytest.mark.parametrize(("command", "phrases"), [
    ('worker = [""]', ["worker = ['']; expected a non-empty list of strings, a program and its arguments"]),
    ('worker = ["{target_dir}"]', ["worker = ['{target_dir}'] starts", "which is a directory"]),
    ('worker = ["{target_dir}/control.py"]', ["control.py', which is a file that is not executable", "chmod +x"]),
    ('worker = ["./gone.sh"]', ["starts './gone.sh', which does not exist"]),
    ('worker = ["queue-chaos-no-such-program"]', ["which is not a command on PATH"]),
    ('worker = ["{python}", "{target_dir}/worker.py"]\nreconciler = []', ["reconciler = []; expected a non-empty"]),
])
def test_a_worker_or_reconciler_command_that_cannot_start_names_its_key(tmp_path: Path, command: str,
                                                                        phrases: list[str]) -> None:
    """Refused before anything starts, naming the target.toml key: never a scenario that seemed to raise."""
    target = tmp_path / "mine"
    shutil.copytree(find_target("redis_basic").path, target, ignore=shutil.ignore_patterns("__pycache__"))
    toml = target / "target.toml"
    toml.write_text("\n".join(command if line.startswith("worker = ") else line
                              for line in toml.read_text().splitlines()) + "\n")
    result = chaos("run", "--target", str(target), "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"))
    assert_usage_error(result, "target.toml", *phrases)
    assert "scenario" not in result.stderr.lower(), result.stderr
    assert not (tmp_path / "runs").exists(), "refused before the run dir is made"
