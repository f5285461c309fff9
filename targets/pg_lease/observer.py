"""pg_lease's own record: what its jobs table says each UPDATE did. A claim is a new claim token on a
claimed row; a completion is any UPDATE that leaves the row done (also done again: an unconditional ack
from a stale owner is a completion the queue accepted); a release puts a claimed job back to pending (a
failed handler's retry); a failure makes it dead."""

from chaos.backends.postgres.observer import TriggerObserver


class Observer(TriggerObserver):
    KIND = """CASE
        WHEN NEW.status = 'claimed' AND NEW.claim_token IS DISTINCT FROM OLD.claim_token THEN 'claim'
        WHEN NEW.status = 'done' THEN 'complete'
        WHEN NEW.status = 'pending' AND OLD.status = 'claimed' THEN 'release'
        WHEN NEW.status = 'dead' AND OLD.status <> 'dead' THEN 'fail'
    END"""
    TOKEN = "CASE WHEN NEW.status = 'claimed' THEN NEW.claim_token ELSE OLD.claim_token END"
