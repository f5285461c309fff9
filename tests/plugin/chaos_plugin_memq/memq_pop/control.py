"""memq_pop control side: enqueue and snapshot through the memq server's API."""

from __future__ import annotations

from typing import Any, ClassVar

from chaos import Backend, Contract, Endpoint, Job, JobState, KeepsNoCompletions
from chaos_plugin_memq.client import call


class Control(KeepsNoCompletions):
    shows_deliveries: ClassVar[bool] = True  # a claimed job stays in the snapshot, as claimed

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url

    def setup(self) -> None:
        return None

    def enqueue(self, jobs: list[Job]) -> None:
        for job in jobs:
            call(self.url, "/enqueue", {"job": job.id, "payload": job.payload()})

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {"MEMQ_URL": endpoint.url}

    def snapshot(self) -> list[JobState]:
        return [JobState(job["job"], job["state"], job["owner"]) for job in call(self.url, "/snapshot")]

    def close(self) -> None:
        return None
