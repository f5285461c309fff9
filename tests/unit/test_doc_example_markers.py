"""Every example block in README.md and docs/ names an example chaos/reference/examples.py knows, and holds its
output; the comparison that keeps them true (tests/integration/test_doc_examples.py reruns the commands)
takes out what varies between two runs of one command, and nothing else."""

from __future__ import annotations

from chaos.reference.examples import CLIP, EXAMPLES, PAGES, blocks, clip, matches

KNOWN = {example.name for example in EXAMPLES}
# Two real runs of `chaos run --target redis_basic --scenario kill_after_claim_before_effect --seed 1`: another
# worker won the job, with other pids, times, tokens and event numbers.
ONE = """FAIL: target redis_basic, scenario kill_after_claim_before_effect, seed 1
jobs: enqueued 8, completed 7, redelivered 0, lost 1, stuck 0, effects 7
fault f1: kill w2 at gate g1: exercised (w2 killed by SIGKILL (pids [10412]))
    #15    +   0.147s  process.start    worker=w2 pid=10412 role=worker
    #22    +   0.694s  probe.claim      job=job-0003 worker=w2 clock=1796651501.4043057 pid=10412 sent=227.27733357 token=4a4ec80214c84d0ea89ebd54d5ca7cb3
run dir: runs/20261207-135140-702012-redis_basic-kill_after_claim_before_effect
"""  # noqa: E501
TWO = """FAIL: target redis_basic, scenario kill_after_claim_before_effect, seed 1
jobs: enqueued 8, completed 7, redelivered 0, lost 1, stuck 0, effects 7
fault f1: kill w1 at gate g1: exercised (w1 killed by SIGKILL (pids [10862]))
    #14    +   0.102s  process.start    worker=w1 pid=10862 role=worker
    #22    +   0.470s  probe.claim      job=job-0003 worker=w1 clock=1796651508.0954165 pid=10862 sent=233.968445361 token=d2ef4a16af8343cc8e610de4dc6b55d7
run dir: runs/20261207-135147-617659-redis_basic-kill_after_claim_before_effect
"""  # noqa: E501


def test_every_block_names_a_known_example_and_holds_its_output() -> None:
    seen = set()
    for page in PAGES:
        for name, body in blocks(page.read_text()):
            assert name in KNOWN, f"{page.name}: no example {name!r} in chaos/reference/examples.py"
            assert body.strip(), f"{page.name}: example {name!r} is empty: run python3 -m chaos.reference.examples"
            seen.add(name)
    assert seen == KNOWN, f"examples no page shows: {KNOWN - seen}"


def test_two_runs_of_one_command_match_each_other_and_a_clipped_copy() -> None:
    assert matches(ONE, TWO)
    assert matches(clip(ONE, 80), TWO)
    assert all(len(line) <= 80 for line in clip(ONE, 80).splitlines())
    assert CLIP.strip() in clip(ONE, 80)


def test_a_changed_count_job_or_verdict_does_not_match() -> None:
    assert not matches(ONE, TWO.replace("lost 1", "lost 2"))
    assert not matches(ONE, TWO.replace("job=job-0003", "job=job-0004"))
    assert not matches(ONE, TWO.replace("FAIL", "PASS"))
    assert not matches(ONE, TWO + "violation lost job-0005: ...\n")
