"""A control process for the protocol's tests, in the standard library only (it runs under another Python
than the suite's: pyenv's 3.12). `memory` is a correct control over a queue in memory; every other mode
breaks the protocol one way, after answering setup: `crash`, `garbage`, `hang`, `wrong_id`, `error`,
`no_result`, `bad_snapshot`, and `stubborn` (answers everything, then ignores the end of stdin and SIGTERM).
`flaky` completes each job as it is enqueued, and answers its first two snapshots with an error (as a control
whose backend is briefly away does)."""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

MODE = sys.argv[1]


def answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve() -> None:
    queue: dict[str, str] = {}  # job id -> state
    snapshots = 0
    for line in sys.stdin:
        request = json.loads(line)
        ident, op = request["id"], request["op"]
        sys.stderr.write(f"request {ident}: {op}\n")
        sys.stderr.flush()
        if MODE == "flaky" and op == "snapshot" and snapshots < 2:
            snapshots += 1
            answer({"id": ident, "error": "Connection refused (the backend is restarting)"})
            continue
        if op == "setup" or MODE in ("memory", "stubborn", "flaky"):
            pass
        elif MODE == "crash":
            sys.stderr.write("boom: the queue's client gave up\n")
            sys.exit(3)
        elif MODE == "garbage":
            sys.stdout.write("connected to the queue, ready\n")
            sys.stdout.flush()
            continue
        elif MODE == "hang":
            time.sleep(3600)
        elif MODE == "wrong_id":
            answer({"id": ident + 1, "result": {}})
            continue
        elif MODE == "error":
            answer({"id": ident, "error": {"message": "the queue is full"}})
            continue
        elif MODE == "no_result":
            answer({"id": ident})
            continue
        elif MODE == "bad_snapshot" and op == "snapshot":
            answer({"id": ident, "result": {"jobs": [{"job": "job-0001", "state": "running"}]}})
            continue
        if op == "enqueue":
            queue.update((job["id"], "done" if MODE == "flaky" else "pending") for job in request["jobs"])
        result: dict[str, Any] = {}
        if op == "snapshot":
            result = {"jobs": [{"job": job, "state": state, "owner": None, "attempts": None, "detail": {}}
                               for job, state in sorted(queue.items())]}
        elif op == "completion":
            result = {"outcome": "done" if queue.get(request["job"]) == "done" else "unknown"}
        answer({"id": ident, "result": result})
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)


serve()
