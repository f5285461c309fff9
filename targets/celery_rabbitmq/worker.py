"""celery_rabbitmq worker: the module Celery's own worker loads (target.toml's command is
`python -m celery -A worker worker --pool solo ...`). Nothing here takes, runs or acknowledges a message:
Celery's worker does. This module builds the application (tasks.app_for, from CHAOS_BACKEND_URL and the
control's result directory) and reports what Celery does through its documented signals
(docs/userguide/signals.rst), which the solo pool sends from the worker process itself:

- task_prerun ("Dispatched before a task is executed"): `claim`. The worker holds the message: under
  acks=early Celery acknowledged it just before (the broker forgot it), under acks=late it is an
  unacknowledged delivery of the worker's channel.
- the task itself sends `effect`, and `abandon` before a retry (tasks.py).
- task_postrun ("Dispatched after a task has been executed", after the result is stored): `ack`, with ok
  null: Celery, not this code, completes the task (acks=late: its worker acknowledges the message after
  the task returned), so whether the completion took effect is the control's to say from the result
  backend (control.py's `completion`).

A probe the sink refuses ends the process at once (tasks.report).
"""

from __future__ import annotations

import os
from typing import Any

from celery.signals import task_postrun, task_prerun
from tasks import TASK, app_for, attempt_of, define_task, new_token, report, token_of

from chaos import probe
from chaos.worker import settings

SETTINGS = settings()
app = app_for(os.environ["CHAOS_BACKEND_URL"], os.environ["CHAOS_RESULT_DIR"], str(SETTINGS.param("acks")))
chaos_job = define_task(app, SETTINGS.max_attempts)


def ours(sender: Any) -> bool:
    return getattr(sender, "name", None) == TASK


@task_prerun.connect  # type: ignore[untyped-decorator]
def claimed(sender: Any = None, task_id: Any = None, task: Any = None, args: Any = None, **_: Any) -> None:
    if not ours(sender):
        return
    request = task.request
    token = new_token(request)
    report(lambda: probe.claim(str(args[0]), token, attempt=attempt_of(request),
                               library_id=str(request.hostname or "")))


@task_postrun.connect  # type: ignore[untyped-decorator]
def finished(sender: Any = None, task_id: Any = None, task: Any = None, args: Any = None, state: Any = None,
             **_: Any) -> None:
    if not ours(sender) or state != "SUCCESS":
        return  # a failure or retry sent its abandon from the task body
    report(lambda: probe.ack(str(args[0]), token_of(task.request), None))
