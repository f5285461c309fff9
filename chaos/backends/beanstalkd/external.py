"""The external beanstalkd provider: your server (--backend-url or CHAOS_BEANSTALKD_URL); the run uses
its own tube, emptied at the run's end. The tube's first buried job is its marker object: its body is the
run's marker (the reference controls find their jobs by id, and no worker reserves a buried job)."""

from __future__ import annotations

from typing import ClassVar

import greenstalk

from chaos.backends.beanstalkd import ENV_URL
from chaos.backends.external import ExternalServer
from chaos.errors import ConfigError, HarnessError
from chaos.worker.beanstalkd import TRANSIENT, connect, tube_for

JOB_STATES = ("ready", "delayed", "reserved", "buried")


class ExternalBeanstalkd(ExternalServer):
    kind: ClassVar[str] = "beanstalkd"
    name: ClassVar[str] = "beanstalkd"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "beanstalk://127.0.0.1:11300"
    schemes: ClassVar[tuple[str, ...]] = ("beanstalk", "beanstalkd")

    namespace_for = staticmethod(tube_for)

    def create_namespace(self) -> None:
        """A tube exists while it holds a job: put the marker job in it, and bury it."""
        try:
            client = connect(self.url, self.namespace)
            try:
                put = client.put(self.marker)
                job = client.reserve(timeout=0)
                if job.id != put:
                    raise HarnessError(f"the run's new tube {self.namespace} on {self.url} held a job already (id "
                                       f"{job.id}): another client uses it")
                client.bury(job)
            finally:
                client.close()
        except TRANSIENT as exc:
            raise ConfigError(f"Expected a reachable beanstalkd at {self.url} (from --backend-url or "
                              f"{ENV_URL}), but got: {exc!r}. Check the address, or drop --backend "
                              "external to let the suite start its own server.") from exc

    def namespace_marker(self) -> str | None:
        try:
            client = connect(self.url, self.namespace)
            try:
                return str(client.peek_buried().body)
            except greenstalk.NotFoundError:  # then any job at all (our connection keeps the tube in existence)
                stats = client.stats_tube(self.namespace)
                return "" if any(int(stats[f"current-jobs-{state}"]) for state in JOB_STATES) else None
            finally:
                client.close()
        except TRANSIENT as exc:
            raise HarnessError(f"could not look for the tube {self.namespace} on {self.url}; empty it by hand if it "
                               f"is left: {exc!r}") from exc

    def drop_namespace(self) -> None:
        """Delete every ready, delayed and buried job of the run's tube (reserved ones went back to ready
        when their workers' connections closed)."""
        try:
            client = connect(self.url, self.namespace)
            try:
                for peek in (client.peek_ready, client.peek_delayed, client.peek_buried):
                    while True:
                        try:
                            client.delete(peek())
                        except greenstalk.NotFoundError:
                            break
            finally:
                client.close()
        except TRANSIENT as exc:
            raise HarnessError(f"could not empty the tube {self.namespace} on {self.url}; empty it by hand: "
                               f"{exc!r}") from exc

    def url_at(self, host: str, port: int) -> str:
        return f"{self.parts.scheme}://{host}:{port}"

