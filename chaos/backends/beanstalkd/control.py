"""Control side of the beanstalkd targets: put each job in the run's tube with its TTR, each worker's
connection settings, and the final snapshot from stats-job of every job it put."""

from __future__ import annotations

import json
from typing import Any

import greenstalk

from chaos import events
from chaos.backends.base import Backend, Endpoint
from chaos.contract import Contract
from chaos.queue_model import Job, JobState, KeepsNoCompletions
from chaos.worker.beanstalkd import connect

STATES = {"ready": "pending", "delayed": "pending", "reserved": "claimed", "buried": "dead"}


class BeanstalkdQueueControl(KeepsNoCompletions):
    shows_deliveries = True  # a reserved job shows as reserved

    def __init__(self, backend: Backend, params: dict[str, Any], contract: Contract) -> None:
        self.url = backend.endpoint.url
        self.tube = backend.namespace
        self.params = params
        self.contract = contract
        self.ids: dict[str, int] = {}  # suite job -> beanstalkd job id
        self._client: greenstalk.Client[str] | None = None

    def client(self) -> greenstalk.Client[str]:
        """One connection (the snapshot opens a fresh one: the server may have restarted under it)."""
        if self._client is None:
            self._client = connect(self.url, self.tube)
        return self._client

    def setup(self) -> None:
        """A tube exists while it is used: nothing to create."""

    def enqueue(self, jobs: list[Job]) -> None:
        ttr = int(self.params.get("ttr", 1))
        for job in jobs:
            self.ids[job.id] = self.client().put(json.dumps({"id": job.id, "payload": job.payload()}), ttr=ttr)

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        return {events.ENV_BACKEND_URL: endpoint.url, events.ENV_NAMESPACE: self.tube}

    def snapshot(self) -> list[JobState]:
        """Each job's state by its id (absent once deleted, or lost); an id now naming another job (a
        server restarted without its binlog numbers jobs from 1 again) is absent too."""
        if self._client is not None:
            self._client.close()
            self._client = None  # a restart may have closed it: start afresh
        states = []
        for job, bid in self.ids.items():
            try:
                stats = self.client().stats_job(bid)
                body = json.loads(self.client().peek(bid).body)
            except greenstalk.NotFoundError:
                states.append(JobState(job, "absent"))
                continue
            if stats["tube"] != self.tube or body.get("id") != job:
                states.append(JobState(job, "absent"))
                continue
            state = STATES.get(str(stats["state"]), str(stats["state"]))
            states.append(JobState(job, state, attempts=int(stats["reserves"]),
                                   detail={"beanstalkd_id": bid, "releases": stats["releases"]}))
        return states

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
