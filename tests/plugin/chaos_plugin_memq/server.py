"""memq: a job queue held in one process's memory, served over HTTP. A claim pops the oldest pending job
and hands it out with a fresh token; an ack with that token completes it. Nothing expires: a claimed job
whose owner dies stays claimed (as a basic pop loses it), which is what its target's contract says.

    python -m chaos_plugin_memq.server --port PORT
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Queue:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: deque[str] = deque()
        self.jobs: dict[str, dict[str, Any]] = {}

    def answer(self, path: str, body: dict[str, Any]) -> Any:
        with self.lock:
            if path == "/enqueue":
                self.jobs[body["job"]] = {"job": body["job"], "state": "pending", "payload": body["payload"]}
                self.pending.append(body["job"])
                return True
            if path == "/claim":
                if not self.pending:
                    return None
                job = self.jobs[self.pending.popleft()]
                job.update(state="claimed", owner=body["worker"], token=uuid.uuid4().hex)
                return {"job": job["job"], "token": job["token"], "payload": job["payload"]}
            if path in ("/ack", "/dead"):
                job = self.jobs[body["job"]]
                if job.get("token") != body["token"] or job["state"] != "claimed":
                    return False
                job["state"] = "done" if path == "/ack" else "dead"
                return True
            if path == "/snapshot":
                return [{key: job.get(key) for key in ("job", "state", "owner")} for job in self.jobs.values()]
        raise KeyError(path)


def serve(port: int) -> None:
    queue = Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.reply(queue.answer(self.path, json.loads(self.rfile.read(length) or b"{}")))

        def do_GET(self) -> None:
            self.reply(queue.answer(self.path, {}))

        def reply(self, answer: Any) -> None:
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    serve(parser.parse_args().port)
