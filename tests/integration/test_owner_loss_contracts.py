"""Contracts for what libraries promise, through the CLI: `-c on_owner_loss=drop` holds redis_basic (a
popped job dies with its worker) to what an at-most-once queue promises, so the killed owner's job is
`dropped`, not `lost`; without it the same run fails naming `lost`."""

from __future__ import annotations

from pathlib import Path

from chaos import events
from chaos.ledger import read_events
from tests.integration.runner import CliResult, chaos

RUN = ("run", "--target", "redis_basic", "--scenario", "kill_after_claim_before_effect", "--seed", "1")


def killed_job(result: CliResult) -> str:
    """The job whose owner the scenario killed: the one its gate held."""
    (matched,) = [e for e in read_events(result.dir / "ledger.sqlite") if e.kind == events.GATE_MATCHED]
    assert matched.job is not None
    return matched.job


def test_a_dead_owners_job_is_dropped_under_on_owner_loss_drop_and_lost_without(tmp_path: Path) -> None:
    dropped = chaos(*RUN, "--runs-dir", str(tmp_path / "drop"), "-c", "on_owner_loss=drop")
    assert dropped.code == 0, dropped.stdout + dropped.stderr
    verdict = dropped.verdict
    job = killed_job(dropped)
    assert verdict["verdict"] == "pass" and verdict["violations"] == []
    assert verdict["contract"]["on_owner_loss"] == "drop"
    assert verdict["jobs"][job] == "dropped"
    assert {outcome for other, outcome in verdict["jobs"].items() if other != job} == {"completed"}
    assert verdict["counts"]["dropped"] == 1 and verdict["counts"]["lost"] == 0
    assert "dropped 1" in dropped.stdout and "-c on_owner_loss=drop" in verdict["reproduce"]

    lost = chaos(*RUN, "--runs-dir", str(tmp_path / "redeliver"))
    assert lost.code == 1, lost.stdout + lost.stderr
    assert [(v["kind"], v["job"]) for v in lost.verdict["violations"]] == [("lost", killed_job(lost))]
    assert lost.verdict["counts"]["dropped"] == 0 and "violation lost" in lost.stdout


def test_a_bad_on_owner_loss_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    result = chaos(*RUN, "--runs-dir", str(tmp_path), "-c", "on_owner_loss=forget")
    assert result.code == 2, result.stdout + result.stderr
    assert "contract on_owner_loss = 'forget'; expected one of redeliver, fail, drop" in result.stderr
    assert "Traceback" not in result.stderr
