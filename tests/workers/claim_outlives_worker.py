"""A target's worker whose claim report outlives it: runs the worker script given as its argument, but
each claim probe leaves from a forked helper process, stamped with the worker's own pid and send time.

So a scenario can SIGKILL the worker alone (scope="process") while the sink holds its claim at a
`before:claim` gate: the helper keeps the connection open, and the sink commits the claim after the
worker's reaped exit, as a slow sink would under load (issue 17: a dead owner's claim read as alive).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import urllib.request
from typing import Any

from chaos import events, probe

_send = probe.send


def send(point: str, job: str | None, **fields: Any) -> dict[str, Any]:
    if point != events.CLAIM:
        return _send(point, job, **fields)
    worker = os.getpid()
    body = dict(fields, job=job, worker=os.environ[events.ENV_WORKER_ID], pid=worker, clock=time.time(),
                sent=time.monotonic())
    helper = os.fork()
    if helper == 0:  # the helper: report the claim, then go
        request = urllib.request.Request(os.environ[events.ENV_SINK_URL] + events.PROBE_PATH + point,
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={events.TOKEN_HEADER: os.environ[events.ENV_RUN_TOKEN],
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request) as answer:
                answer.read()
        finally:
            os._exit(0)
    os.waitpid(helper, 0)
    return {"ok": True}


probe.send = send
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
