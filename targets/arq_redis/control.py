"""arq_redis control side: the producer and the snapshot, through arq's own API, run in arq's virtualenv.

The control lives in the suite's process, whose redis client (8) arq 0.28 cannot use (it pins redis<6).
So it starts `arq_helper.py` under the arq virtualenv's python (ci/setup_arq.sh builds it; `CHAOS_ARQ_VENV`
names another) and speaks JSON lines with it: the helper enqueues with `ArqRedis.enqueue_job` and reads
`Job.status()` / `Job.result_info()`, so no key of arq's is written or parsed here. A missing virtualenv is
a usage error (exit 2) that says how to build it.

arq's job id is the run's namespace and the suite's job id (`enqueue_job(..., _job_id=...)`, arq's custom job
ids), and its queue the sorted set `<namespace>arq:queue`. The snapshot, from `Job.status()`: `queued` or
`deferred` is pending, `in_progress` (arq's in-progress key: a worker started it, and the key's TTL has
not run out) is claimed, by an owner arq does not record; `complete` (a stored result) is done when the
result is a success and dead when it is a failure (an exception, a timeout, "max N retries exceeded");
`not_found` is absent.

arq completes a job itself once the function returned: the worker's ack says ok null, and `completion`
answers from the stored result whether that execution's completion took effect (its try and success).
arq never refuses a completion, so the answer is accepted or unknown.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from chaos import Backend, ConfigError, Contract, Endpoint, HarnessError, Job, JobState

HERE = Path(__file__).resolve().parent
# The folder holding the suite's `chaos` package, alone on the helper's path: a failed job's stored result is a
# pickled exception of the handler's (chaos.worker.JobFailed), which arq's result_info unpickles.
SUITE_PATH = str(Path(str(sys.modules["chaos"].__file__)).resolve().parent.parent)
ANSWER_TIMEOUT_S = 20.0  # a helper that does not answer in this long is stuck (its Redis calls time out sooner)


def venv_python() -> Path:
    """The arq virtualenv's interpreter (the same place venv-python.sh and ci/setup_arq.sh use)."""
    venv = os.environ.get("CHAOS_ARQ_VENV") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "queue-chaos" / "venvs" / "arq-0.28.0")
    python = Path(venv) / "bin" / "python"
    if not os.access(python, os.X_OK):
        raise ConfigError(f"Target arq_redis runs arq 0.28.0 from a virtualenv of its own (arq pins redis<6), and "
                          f"there is none at {venv}. Build it with: bash ci/setup_arq.sh (or point CHAOS_ARQ_VENV "
                          "at a virtualenv holding arq==0.28.0).")
    return python


class Control:
    shows_deliveries: ClassVar[bool] = True

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.python = venv_python()
        self.url = backend.endpoint.url
        self.namespace = backend.namespace
        self.jobs: list[str] = []
        self.lock = threading.Lock()
        self.helper: subprocess.Popen[str] | None = None

    # -- the helper ---------------------------------------------------------------------------------------
    def _start(self) -> subprocess.Popen[str]:
        if self.helper is None or self.helper.poll() is not None:
            self.helper = subprocess.Popen([str(self.python), str(HERE / "arq_helper.py"), self.url, self.namespace],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE,
                                           env={**os.environ, "PYTHONPATH": SUITE_PATH})
        return self.helper

    def _stop(self) -> None:
        if self.helper is not None:
            self.helper.kill()
            self.helper.wait()
            self.helper = None

    def call(self, op: str, **fields: Any) -> Any:
        """One request to the helper; its error is raised as a RuntimeError (a scenario's polling retries)."""
        with self.lock:
            helper = self._start()
            assert helper.stdin is not None and helper.stdout is not None
            try:
                helper.stdin.write(json.dumps({"op": op, **fields}) + "\n")
                helper.stdin.flush()
                ready, _, _ = select.select([helper.stdout], [], [], ANSWER_TIMEOUT_S)
                line = helper.stdout.readline() if ready else ""
            except OSError as exc:
                self._stop()
                raise RuntimeError(f"arq helper: {exc}") from exc
            if not line:
                self._stop()
                raise RuntimeError(f"arq helper gave no answer to {op} within {ANSWER_TIMEOUT_S} s")
            answer = json.loads(line)
            if "error" in answer:
                raise RuntimeError(f"arq helper, {op}: {answer['error']}")
            return answer["ok"]

    # -- the Control seam ---------------------------------------------------------------------------------
    def setup(self) -> None:
        """arq makes its keys as it goes: nothing to create. Start the helper (and fail early if it cannot)."""
        self.call("snapshot", jobs=[])

    def enqueue(self, jobs: list[Job]) -> None:
        self.call("enqueue", jobs=[[job.id, job.payload()] for job in jobs])
        self.jobs += [job.id for job in jobs]

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The worker's own way to Redis, and the run's namespace (arq's queue name and job ids start with it)."""
        return {"CHAOS_BACKEND_URL": endpoint.url, "CHAOS_NAMESPACE": self.namespace}

    def snapshot(self) -> list[JobState]:
        answer = self.call("snapshot", jobs=self.jobs)
        states = []
        for job, entry in answer["jobs"].items():
            status = entry["status"]
            if status in ("queued", "deferred"):
                states.append(JobState(job, "pending", detail={"arq": status}))
            elif status == "in_progress":
                states.append(JobState(job, "claimed", detail={"arq": status}))
            elif status == "complete":
                result = entry["result"] or {}
                state = "done" if result.get("success") else "dead"
                states.append(JobState(job, state, attempts=result.get("try"),
                                       detail={"arq": status, "result": result.get("result")}))
        return sorted(states, key=lambda state: state.job)

    def completion(self, job: str, token: str) -> str:
        """Accepted where arq's stored result for the job is a success by the token's try (the token is
        `<arq job id>:<try>`, worker.token_of); else unknown. A Redis error propagates: the run asks again."""
        job_id, _, tried = token.rpartition(":")
        if job_id != self.namespace + job or not tried.isdigit():
            return "unknown"
        result = self.call("result", job=job)
        if result and result["success"] and result["try"] == int(tried):
            return "accepted"
        return "unknown"

    def close(self) -> None:
        """Delete the run's arq job keys (`arq:job:<namespace>...` and its siblings), which an external server's
        deletion of the run's prefix does not reach; the queue itself is under the prefix."""
        try:
            if self.helper is not None and self.helper.poll() is None:
                self.call("close")
        except RuntimeError as exc:
            raise HarnessError(f"could not delete arq's keys for {self.namespace!r} (arq:job:{self.namespace}*, "
                               f"arq:in-progress:..., arq:result:..., arq:retry:...); delete them by hand: "
                               f"{exc}") from exc
        finally:
            self._stop()
