"""redis_streams, a Redis Streams consumer group on the redis kind's own server, through the CLI.

The correct target recovers a killed consumer's entry the way Redis Streams does: another consumer's
XAUTOCLAIM takes it once it has been idle for the lease (min-idle-time), and the delivery counter Redis
raised on that claim is the attempt, as the server's own replication stream shows it (the observer). The
`ack=plain` variant sends the bare XACK Redis offers: Redis accepts it from a consumer whose entry another
consumer has claimed since (XACK checks only that the entry is pending in the group, not for whom), the
server's record shows that completion, and the verdict names it stale_ack_accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import events
from chaos.ledger import read_events
from tests.integration.runner import chaos

pytestmark = pytest.mark.full

TARGET = "redis_streams"


def entry_of(token: str) -> tuple[str, str, int]:
    """A claim token's consumer, stream entry id and delivery count (chaos.worker.redis_streams.claim_token)."""
    consumer, entry_id, deliveries = token.split("/")
    return consumer, entry_id, int(deliveries)


def test_a_killed_consumers_entry_is_taken_by_xautoclaim_after_the_lease(tmp_path: Path) -> None:
    result = chaos("run", "--target", TARGET, "--scenario", "kill_after_effect_before_ack", "--seed", "2",
                   "--runs-dir", str(tmp_path))
    assert result.code == 0, result.stdout + result.stderr
    verdict = result.verdict
    (fault,) = verdict["faults"]
    assert fault["kind"] == "kill" and fault["exercised"], fault
    ledger = read_events(result.dir / "ledger.sqlite")
    (held,) = [e for e in ledger if e.kind == events.GATE_MATCHED]
    claims = [e for e in ledger if e.kind == events.PROBE_CLAIM and e.job == held.job]
    assert [e.worker for e in claims][0] == held.worker and len(claims) == 2, claims
    first, second = (entry_of(str(e.data["token"])) for e in claims)
    # The same stream entry, now another consumer's, delivered a second time: the counter XAUTOCLAIM raised.
    assert second[1] == first[1] and second[0] != first[0] and claims[1].worker != held.worker
    assert (first[2], second[2]) == (1, 2) and [e.data["attempt"] for e in claims] == [1, 2]
    # Redis's own record: the XCLAIM it replicated for the XAUTOCLAIM names the new consumer and counter 2.
    recorded = [e for e in ledger if e.kind == events.QUEUE_CLAIM and e.job == held.job]
    assert [(e.worker, e.data["token"]) for e in recorded] == [(e.worker, e.data["token"]) for e in claims]
    # Acks are decided by the workers' XACK replies and by Redis's record of each XACK the observer read.
    assert verdict["evidence"] == {"claims": "queue", "completions": "queue", "acks": "queue, worker"}
    # Not before the entry had been idle for the lease (XAUTOCLAIM's min-idle-time) since the owner's last
    # extension (one heartbeat period before the kill, two on a loaded machine).
    (recovery,) = verdict["recovery"]["jobs"][held.job]
    assert 0.5 <= recovery <= verdict["contract"]["recovery_bound_s"], verdict["recovery"]
    assert verdict["jobs"][held.job] == "redelivered" and verdict["counts"]["lost"] == 0


def test_redis_accepts_a_stale_consumers_plain_xack(tmp_path: Path) -> None:
    result = chaos("run", "--target", TARGET, "--scenario", "stale_owner_completes_during_new_owner", "--seed", "2",
                   "-p", "ack=plain", "-p", "watchdog=off", "-c", "watchdog=false", "--runs-dir", str(tmp_path))
    assert result.code == 1, result.stdout + result.stderr
    verdict = result.verdict
    assert [v["kind"] for v in verdict["violations"]] == ["stale_ack_accepted"], verdict["violations"]
    (violation,) = verdict["violations"]
    witness = violation["witness"]
    claims = [e for e in witness if e["kind"] == events.PROBE_CLAIM]
    acks = {e["worker"]: e for e in witness if e["kind"] == events.PROBE_ACK}
    stale, new = claims[0]["worker"], claims[1]["worker"]
    assert stale != new
    # The stale consumer's XACK came after the new consumer's claim of the same entry, and Redis took it.
    assert acks[stale]["seq"] > claims[1]["seq"] and acks[stale]["data"]["ok"] is True
    stale_token, new_token = str(claims[0]["data"]["token"]), str(claims[1]["data"]["token"])
    assert entry_of(stale_token)[1] == entry_of(new_token)[1]
    log = (result.dir / "logs" / f"{stale}.log").read_text()
    assert f"plain XACK of entry {entry_of(stale_token)[1]} by {entry_of(stale_token)[0]}: accepted" in log, log
    # ...leaving nothing pending for the new owner, whose own XACK then found nothing to acknowledge.
    assert acks[new]["data"]["ok"] is False
    # The queue's own record agrees: the server's replication stream shows the new consumer's claim, then
    # the XACK that completed the entry for the stale claim, and the done hash names the stale claim's token.
    recorded = [(e["kind"], e["worker"], e["data"]["token"]) for e in witness if e["kind"].startswith("queue.")]
    assert recorded == [(events.QUEUE_CLAIM, stale, stale_token), (events.QUEUE_CLAIM, new, new_token),
                        (events.QUEUE_COMPLETE, stale, stale_token)], recorded
    assert not [a for a in verdict["anomalies"] if a["kind"] == "sources_disagree"], verdict["anomalies"]
    (snapshot,) = [e for e in witness if e["kind"] == events.SNAPSHOT]
    assert snapshot["data"]["state"] == "done" and snapshot["data"]["token"] == stale_token
