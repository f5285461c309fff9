"""pgqueuer_pg's record of pgqueuer's own table (`pgqueuer`): what each UPDATE or DELETE pgqueuer made did.

- a claim: a row becomes `picked`, or a `picked` row gets another `queue_manager_id` (a stale re-pick: pgqueuer's
  dequeue takes a picked row whose heartbeat is older than heartbeat_timeout);
- a release: a `picked` row back to `queued` (`RetryRequested`, which DatabaseRetryEntrypointExecutor raises);
- a failure: a row becomes `failed` (the terminal failure of an entrypoint with on_failure="hold");
- a completion: a `picked` row deleted (pgqueuer's log_jobs deletes a finished job's row by id and writes its
  `successful` line to `pgqueuer_log`). With on_failure="hold" only a success or a cancel deletes a picked row.

The job is the suite's id, which the control stores in pgqueuer's `dedupe_key`. The token is the one the worker
sends: pgqueuer's job id, the row's `queue_manager_id` (the picking worker's) and its `attempts`. A DELETE's
token is the row's owner at that moment; the actor (application_name) is who deleted it."""

from chaos.backends.postgres.observer import TriggerObserver


class Observer(TriggerObserver):
    TABLE = "pgqueuer"
    ID = "dedupe_key"
    KIND = """CASE
        WHEN NEW.status = 'picked' AND (OLD.status <> 'picked'
                                        OR NEW.queue_manager_id IS DISTINCT FROM OLD.queue_manager_id) THEN 'claim'
        WHEN NEW.status = 'queued' AND OLD.status = 'picked' THEN 'release'
        WHEN NEW.status = 'failed' AND OLD.status <> 'failed' THEN 'fail'
    END"""
    TOKEN = """CASE WHEN NEW.status = 'picked' THEN NEW.id || ':' || NEW.queue_manager_id || ':' || NEW.attempts
                    ELSE OLD.id || ':' || OLD.queue_manager_id || ':' || OLD.attempts END"""
    DELETE_KIND = "CASE WHEN OLD.status = 'picked' THEN 'complete' END"
    DELETE_TOKEN = "OLD.id || ':' || OLD.queue_manager_id || ':' || OLD.attempts"
