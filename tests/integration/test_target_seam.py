"""The target author's seam, through the CLI: a worker command's placeholders are filled in per process,
typed parameters reach the worker as JSON values, and an effect's fence makes `--sink-mode fenced` refuse a
stale owner's effect."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from chaos.discovery import bundled
from tests.integration.runner import chaos

ARGV_WORKER = '''"""Logs its argv and typed params, then runs pg_lease's own worker."""
import json, os, runpy, sys
print("ARGV " + json.dumps(sys.argv[1:]), file=sys.stderr, flush=True)
print("PARAMS " + os.environ["CHAOS_TARGET_PARAMS"], file=sys.stderr, flush=True)
sys.argv = sys.argv[:1]
runpy.run_path(os.path.join(os.path.dirname(__file__), "worker.py"), run_name="__main__")
'''


def test_worker_command_placeholders_are_filled_per_process(tmp_path: Path) -> None:
    target = tmp_path / "pg_argv"
    shutil.copytree(bundled("targets") / "pg_lease", target)
    toml = (target / "target.toml").read_text().replace(
        'worker = ["{python}", "{target_dir}/worker.py"]',
        'worker = ["{python}", "{target_dir}/argv_worker.py", "{worker}", "{endpoint_url}", "{namespace}", '
        '"{param:watchdog}", "{{literal}}"]').replace('name = "pg_lease"', 'name = "pg_argv"')
    (target / "target.toml").write_text(toml)
    (target / "argv_worker.py").write_text(ARGV_WORKER)
    result = chaos("run", "--target", str(target), "--scenario", "kill_after_effect_before_ack", "--seed", "1",
                   "-p", "watchdog=off", "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.stdout + result.stderr
    logs = sorted((result.dir / "logs").glob("w*.log"))
    assert len(logs) >= 2
    for log in logs:
        lines = log.read_text().splitlines()
        argv = json.loads(next(line for line in lines if line.startswith("ARGV "))[5:])
        params = json.loads(next(line for line in lines if line.startswith("PARAMS "))[7:])
        worker, url, namespace, watchdog, literal = argv
        assert worker == log.stem and "port=" in url and namespace == ""
        assert (watchdog, literal) == ("off", "{literal}")
        assert params["watchdog"] == "off" and params["heartbeat"] == "thread"


def test_a_fenced_sink_refuses_the_stale_owners_effect(tmp_path: Path) -> None:
    """pg_lease without its watchdog lets a stopped owner make its effect after it resumes: its fence (its
    claim count) is older than the next owner's, so wherever it lands after a newer one the fenced boundary
    refuses it, and every effect the ledger accepted has a fence no older than one accepted before it."""
    result = chaos("run", "--target", "pg_lease", "--scenario", "stop_past_deadline", "--seed", "1",
                   "-p", "watchdog=off", "--sink-mode", "fenced", "--runs-dir", str(tmp_path))
    with closing(sqlite3.connect(result.dir / "ledger.sqlite")) as db:
        effects = [json.loads(data) | {"worker": worker} for worker, data in
                   db.execute("SELECT worker, data FROM events WHERE kind = 'probe.effect' ORDER BY seq")]
    assert all(isinstance(effect.get("fence"), int) for effect in effects), effects
    newest: dict[str, int] = {}
    for effect in effects:
        key, fence = effect["key"], effect["fence"]
        assert effect["accepted"] == (fence >= newest.get(key, fence)), effects
        newest[key] = max(newest.get(key, fence), fence)
    assert any(effect["fence"] > 1 for effect in effects), "the stopped owner's job was claimed again"


def test_pg_lease_is_judged_from_the_queues_own_record_and_from_probes_alike(tmp_path: Path) -> None:
    """Its observer's trigger journals what the jobs table committed: an unconditional ack from the stopped
    owner is a completion the queue accepted after another worker's claim; without the observer the probes
    say the same. A correct run's two sources agree."""
    stale = ["--scenario", "stop_past_deadline", "--seed", "1", "-p", "ack=unconditional", "-p", "watchdog=off"]
    by_queue = chaos("run", "--target", "pg_lease", *stale, "--runs-dir", str(tmp_path / "queue"))
    by_probes = chaos("run", "--target", "pg_lease", *stale, "--no-observer", "--runs-dir", str(tmp_path / "probes"))
    for result, source in ((by_queue, "queue"), (by_probes, "probes")):
        assert result.code == 1, result.stdout + result.stderr
        evidence = result.verdict["evidence"]
        assert (evidence["claims"], evidence["completions"]) == (source, source)
        assert "worker" in evidence["acks"]  # the stopped owner's own ok=true decided its stale ack
        assert [v["kind"] for v in result.verdict["violations"]] == ["stale_ack_accepted"]
    job = by_queue.verdict["violations"][0]["job"]
    assert "--no-observer" in by_probes.verdict["reproduce"]
    with closing(sqlite3.connect(by_queue.dir / "ledger.sqlite")) as db:
        kinds = {kind for (kind,) in db.execute("SELECT kind FROM events WHERE kind LIKE 'queue.%'")}
        completers = {w for (w,) in db.execute("SELECT worker FROM events WHERE kind = 'queue.complete' AND job = ?",
                                               (job,))}
    assert kinds == {"queue.claim", "queue.complete"}, kinds
    assert completers == {"w1", "w2"}, "the queue's record shows both owners' completions of the job"
    correct = chaos("run", "--target", "pg_lease", "--scenario", "kill_after_effect_before_ack", "--seed", "1",
                    "--runs-dir", str(tmp_path / "correct"))
    assert correct.code == 0 and correct.verdict["evidence"]["completions"] == "queue"
    disagree = [a for a in correct.verdict["anomalies"] if a["kind"] == "sources_disagree"]
    assert not disagree, disagree
