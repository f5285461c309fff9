"""`-s warmup=true`: the shared scenario parameter, the `ready` probe, and the rule that holds a scenario's
first jobs until every worker started so far has polled once and is idle."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from chaos import events
from chaos.check.checker import judge
from chaos.errors import ConfigError, NotExercised
from chaos.known_answers import bundled_scenarios
from chaos.queue_model import Job
from chaos.runtime import probe_schema
from chaos.runtime.warmup import Warmup, unready
from chaos.scenario import Scenario, load_scenario
from chaos.suite.spec import load_suite
from chaos.worker import probe, serve_jobs
from tests.history import History

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
STARTUP = "fault_on_first_claim_at_startup"


def scenario(**params: tuple[str, ...]) -> Scenario:
    return Scenario("s", Path("s.py"), "", lambda ctx: None, params=params)


# -- the shared parameter ---------------------------------------------------------------------------

def test_every_scenario_takes_warmup_false_by_default_and_true_on_request() -> None:
    assert scenario().with_params({}) == {"warmup": "false"}
    assert scenario(mode=("a", "b")).with_params({"warmup": "true"}) == {"mode": "a", "warmup": "true"}


def test_a_warmup_value_that_is_no_choice_is_refused_in_one_paragraph() -> None:
    with pytest.raises(ConfigError, match=r"warmup='yes' is not one of false, true") as refused:
        scenario().with_params({"warmup": "yes"})
    assert "\n" not in str(refused.value)


def test_a_scenario_that_declares_warmup_itself_overrides_the_shared_choices() -> None:
    with pytest.raises(ConfigError, match=r"warmup='true' is not one of false"):
        scenario(warmup=("false",)).with_params({"warmup": "true"})


def test_every_bundled_scenario_takes_warmup_true_but_the_one_about_start_up() -> None:
    for name in bundled_scenarios():
        loaded = load_scenario(SCENARIOS / f"{name}.py")
        if name == STARTUP:
            with pytest.raises(ConfigError):
                loaded.with_params({"warmup": "true"})
        else:
            assert loaded.with_params({"warmup": "true"})["warmup"] == "true"


def test_a_suite_cell_sets_warmup_with_a_toml_boolean(tmp_path: Path) -> None:
    path = tmp_path / "chaos.toml"
    path.write_text('[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\nscenario_params = { warmup = true }\n')
    (cell,) = load_suite(path).cells
    assert cell.scenario_params == ("warmup=true",)
    assert cell.settings_argv()[-2:] == ["-s", "warmup=true"]


def test_a_cells_warmup_key_warms_each_of_its_scenarios_that_takes_it(tmp_path: Path) -> None:
    path = tmp_path / "chaos.toml"
    path.write_text(f'[[cell]]\ntarget = "pg_lease"\nscenarios = ["no_faults", "{STARTUP}"]\nwarmup = true\n')
    warm, cold = load_suite(path).cells
    assert warm.scenario_params == ("warmup=true",) and warm.scenario_variant == "no_faults -s warmup=true"
    assert cold.scenario == STARTUP and cold.scenario_params == ()


def test_a_warmup_key_that_is_no_boolean_is_refused_naming_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "chaos.toml"
    path.write_text('[[cell]]\ntarget = "pg_lease"\nscenario = "no_faults"\nwarmup = "yes"\n')
    with pytest.raises(ConfigError, match=r"cell 1 \(pg_lease\): warmup = 'yes'; expected true or false"):
        load_suite(path)


# -- the ready probe ----------------------------------------------------------------------------------

def test_a_ready_probe_needs_no_job_but_a_job_probe_still_does() -> None:
    assert probe_schema.parse(events.READY, b'{"worker": "w1", "pid": 1}') == {"worker": "w1", "pid": 1}
    with pytest.raises(probe_schema.BadProbe, match="needs the field 'job'"):
        probe_schema.parse(events.CLAIM, b'{"worker": "w1", "token": "t"}')


def test_an_unknown_point_is_refused_naming_ready_among_the_points() -> None:
    with pytest.raises(probe_schema.BadProbe, match=r"claim\|effect\|heartbeat\|ack\|abandon\|ready"):
        probe_schema.parse("teleport", b"{}")


def test_the_client_sends_ready_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str | None]] = []

    def send(point: str, job: str | None, **fields: object) -> dict[str, object]:
        sent.append((point, job))
        return {}

    monkeypatch.setattr(probe, "send", send)
    monkeypatch.setattr(probe, "_ready_pid", None)
    probe.ready()
    probe.ready()
    assert sent == [(events.READY, None)]


def test_serve_jobs_says_ready_after_its_first_empty_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[int] = []
    claims = ["job"]  # one job first: ready only once a claim found nothing
    monkeypatch.setattr(probe, "ready", lambda: said.append(len(claims)))
    stop = threading.Event()

    def claim() -> str | None:
        if not claims:
            stop.set()
            return None
        return claims.pop()

    serve_jobs(stop, claim, lambda claimed: None, (OSError,))
    assert said == [0]


# -- the readiness rule -------------------------------------------------------------------------------

def test_a_worker_is_unready_until_it_says_ready_after_its_start() -> None:
    started = History().start("w1").start("w2").record(events.probe(events.READY, None, "w1", {}))
    assert unready(started.events, ["w1", "w2"]) == ["w2"]
    assert unready(started.record(events.probe(events.READY, None, "w2", {})).events, ["w1", "w2"]) == []


def test_a_ready_before_the_workers_latest_start_does_not_count() -> None:
    restarted = History().start("w1").record(events.probe(events.READY, None, "w1", {})).exit("w1").start("w1")
    assert unready(restarted.events, ["w1"]) == ["w1"]


class Run:
    """A fake run for `Warmup`: a ledger the test writes and the jobs enqueued."""

    def __init__(self, on: bool, timeout_s: float = 5.0, alive: bool = True) -> None:
        self.history = History()
        self.enqueued: list[str] = []
        self.warmup = Warmup(on, lambda: self.history.events, self.enqueue, lambda worker: alive, timeout_s)

    def enqueue(self, jobs: list[Job]) -> None:
        self.enqueued += [job.id for job in jobs]

    def start(self, *workers: str, ready: bool = True) -> None:
        for worker in workers:
            self.history.start(worker)
            if ready:
                self.history.record(events.probe(events.READY, None, worker, {}))
        self.warmup.started(list(workers))


def jobs(*ids: str) -> list[Job]:
    return [Job(job) for job in ids]


def test_without_warmup_jobs_go_to_the_queue_at_once() -> None:
    run = Run(on=False)
    run.warmup.enqueue(jobs("a"))
    assert run.enqueued == ["a"]


def test_jobs_enqueued_before_the_workers_wait_until_every_one_is_ready() -> None:
    run = Run(on=True)
    run.warmup.enqueue(jobs("a", "b"))
    assert run.enqueued == []
    run.start("w1", "w2")
    assert run.enqueued == ["a", "b"] and not run.warmup.pending
    run.start("w3", ready=False)  # a later start (a replacement) does not wait
    run.warmup.enqueue(jobs("c"))
    assert run.enqueued == ["a", "b", "c"]


def test_workers_started_first_are_warmed_when_the_first_job_comes() -> None:
    run = Run(on=True)
    run.start("w1", "w2")
    assert run.warmup.pending  # nothing held yet: the warm-up waits for the first job
    run.warmup.enqueue(jobs("a"))
    assert run.enqueued == ["a"]


def test_a_worker_that_never_says_ready_makes_the_run_inconclusive_naming_both_causes() -> None:
    run = Run(on=True, timeout_s=0.2)
    run.warmup.enqueue(jobs("a"))
    with pytest.raises(NotExercised, match=r"worker w2 sent no `ready` probe in the 0s waited for it.*does not send "
                                           r"`ready`.*never finished starting") as raised:
        run.history.start("w1").record(events.probe(events.READY, None, "w1", {}))
        run.history.start("w2")
        run.warmup.started(["w1", "w2"])
    assert run.enqueued == [] and "\n" not in str(raised.value)


def test_a_worker_that_exits_before_it_is_ready_ends_the_wait_at_once() -> None:
    run = Run(on=True, timeout_s=30.0, alive=False)
    run.warmup.enqueue(jobs("a"))
    with pytest.raises(NotExercised, match="worker w1 exited before saying it was ready"):
        run.start("w1", ready=False)


def test_ready_probes_leave_the_verdict_as_it_was() -> None:
    ready = History().start("w1").record(events.probe(events.READY, None, "w1", {}))
    verdict = judge(ready.enqueue("a").execute("a", "w1").snapshot(a="done").events)
    assert verdict.verdict == "pass" and verdict.jobs == {"a": "completed"}
