"""The external SQS provider: any SQS-compatible endpoint of yours (real SQS, ElasticMQ, LocalStack:
--backend-url or CHAOS_SQS_URL), with the credentials and region of the standard AWS environment unless
the URL carries them. The run creates its own queues there (jobs, dead letters, completion records) and
deletes them at its end, or `chaos clean` does after a killed run; it touches no other queue. Each queue is
created with its marker object, a tag holding the run's marker."""

from __future__ import annotations

from contextlib import closing
from typing import ClassVar

import botocore.exceptions

from chaos.backends.external import ExternalServer, mask_password
from chaos.backends.sqs import ENV_URL
from chaos.errors import ConfigError, HarnessError
from chaos.worker.sqs import connect, error_code, queue_for, queue_names

GONE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
# Unreachable, refused, or no usable credentials or region: none of it lets the run use the endpoint.
REFUSALS = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
MARKER_TAG = "queue-chaos-owner"


class ExternalSqs(ExternalServer):
    kind: ClassVar[str] = "sqs"
    name: ClassVar[str] = "SQS"
    env_url: ClassVar[str] = ENV_URL
    example_url: ClassVar[str] = "https://sqs.eu-west-1.amazonaws.com"
    schemes: ClassVar[tuple[str, ...]] = ("http", "https")

    namespace_for = staticmethod(queue_for)

    def create_namespace(self) -> None:
        """Create the run's queues, each tagged with the run's marker (plain otherwise: the control sets their
        lease and redrive policy)."""
        try:
            with closing(connect(self.url)) as client:
                for name in queue_names(self.namespace):
                    client.create_queue(QueueName=name, tags={MARKER_TAG: self.marker})
        except REFUSALS as exc:
            raise ConfigError(f"Expected an SQS endpoint at {mask_password(self.url)} (from --backend-url or "
                              f"{ENV_URL}) that lets the run create its queues, but got: {exc!r}. Check the "
                              "address and the AWS credentials in the environment, or drop --backend external "
                              "to let the suite start its own (moto) server.") from exc

    def namespace_marker(self) -> str | None:
        """The jobs queue's tag (the first queue made)."""
        try:
            with closing(connect(self.url)) as client:
                try:
                    queue = client.get_queue_url(QueueName=self.namespace)["QueueUrl"]
                except botocore.exceptions.ClientError as exc:
                    if error_code(exc) in GONE:
                        return None
                    raise
                return str(client.list_queue_tags(QueueUrl=queue).get("Tags", {}).get(MARKER_TAG, ""))
        except REFUSALS as exc:
            raise HarnessError(f"could not look for the queue {self.namespace} on {mask_password(self.url)}; delete "
                               f"the run's queues by hand if they are left: {exc!r}") from exc

    def drop_namespace(self) -> None:
        """Delete the run's queues, those that exist."""
        try:
            with closing(connect(self.url)) as client:
                for name in queue_names(self.namespace):
                    try:
                        client.delete_queue(QueueUrl=client.get_queue_url(QueueName=name)["QueueUrl"])
                    except botocore.exceptions.ClientError as exc:
                        if error_code(exc) not in GONE:
                            raise
        except REFUSALS as exc:
            raise HarnessError(f"could not delete the queues {', '.join(queue_names(self.namespace))} on "
                               f"{mask_password(self.url)}; delete them by hand: {exc!r}") from exc

    def url_at(self, host: str, port: int) -> str:
        query = f"?{self.parts.query}" if self.parts.query else ""
        return f"{self.parts.scheme}://{self.netloc_at(host, port)}/{query}"
