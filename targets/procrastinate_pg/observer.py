"""procrastinate_pg's record of the queue: what procrastinate's own jobs table says each UPDATE did, by a
trigger on `procrastinate_jobs` (chaos.TriggerObserver). The job is the suite's id in the row's own
arguments (`args->>'job'`); rows of other tasks record nothing. The actor is the session's
application_name, which worker.py and reconciler.py set to the suite's name for the process.

- claim: the row went to 'doing' (procrastinate_fetch_job_v2 sets status and worker_id);
- complete: the row went from 'todo' or 'doing' to 'succeeded' (procrastinate_finish_job_v1 accepts
  either, whoever asks: it checks no worker);
- release: the row went from 'doing' back to 'todo' (procrastinate_retry_job_v2: a failed attempt with
  retries left, or the stalled-job recipe's retry);
- fail: the row went to 'failed' (procrastinate_finish_job_v1 after the last attempt).

The token is the execution's, as the worker names it (tasks.token_of): the job's id and the attempt,
from the attempts column before the change."""

from chaos.backends.postgres.observer import TriggerObserver


class Observer(TriggerObserver):
    TABLE = "procrastinate_jobs"
    ID = "args->>'job'"
    KIND = """CASE
        WHEN NOT (NEW.args ? 'job') THEN NULL
        WHEN NEW.status = 'doing' AND OLD.status <> 'doing' THEN 'claim'
        WHEN NEW.status = 'succeeded' AND OLD.status IN ('todo', 'doing') THEN 'complete'
        WHEN NEW.status = 'todo' AND OLD.status = 'doing' THEN 'release'
        WHEN NEW.status = 'failed' AND OLD.status <> 'failed' THEN 'fail'
    END"""
    TOKEN = "OLD.id::text || ':' || (OLD.attempts + 1)::text"
