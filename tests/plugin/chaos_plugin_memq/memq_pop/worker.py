"""memq_pop worker: claim, run the handler, ack with the claim's token (or mark the job dead when its
handler fails: max_attempts is 1)."""

from __future__ import annotations

import os
from typing import Any

from chaos import probe
from chaos.worker import JobFailed, log, run_handler, serve_jobs, stop_flag
from chaos_plugin_memq.client import call


def main() -> None:
    url, worker = os.environ["MEMQ_URL"], os.environ["CHAOS_WORKER_ID"]
    stop = stop_flag()

    def claim() -> dict[str, Any] | None:
        claimed: dict[str, Any] | None = call(url, "/claim", {"worker": worker})
        return claimed

    def process(claimed: dict[str, Any]) -> None:
        job, token = claimed["job"], claimed["token"]
        probe.claim(job, token)
        try:
            run_handler(claimed["payload"])
        except JobFailed as exc:
            probe.abandon(job, token, reason="handler failed")
            call(url, "/dead", {"job": job, "token": token})
            log(f"{job} failed ({exc})")
            return
        probe.effect(job, token)
        probe.ack(job, token, bool(call(url, "/ack", {"job": job, "token": token})))

    serve_jobs(stop, claim, process, (OSError,))


if __name__ == "__main__":
    main()
