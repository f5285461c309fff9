"""A RabbitMQ node shared by the tests of one test process: it takes seconds to boot, so the runs that
need no control of the broker use it as their external broker, each in its own vhost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.backends import rabbitmq as rabbitmq_kind
from chaos.backends.base import BackendSettings
from chaos.backends.rabbitmq.local import LocalRabbitMQ


@pytest.fixture(scope="session")
def shared_rabbitmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment that points the external RabbitMQ provider at the shared node."""
    root: Path = tmp_path_factory.mktemp("shared-rabbitmq")
    node = LocalRabbitMQ.open(BackendSettings(root, "shared", options={"management": "on"}))
    try:
        yield {rabbitmq_kind.ENV_URL: node.endpoint.url.rpartition("/")[0] + "/",
               rabbitmq_kind.ENV_API_URL: str(node.api_url)}
    finally:
        node.close()
