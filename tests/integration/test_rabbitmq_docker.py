"""The docker RabbitMQ provider against a real Docker engine, with the image built here from the host's
RabbitMQ and Erlang: the node keeps a confirmed persistent message through a crash (kill) and a clean
stop of its container, because its mnesia directory and node name survive in the volume; the target's
consumer_timeout_ms reaches the node; close() leaves nothing of the run. Skips where no engine runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pika
import pytest

from chaos.backends.base import BackendSettings
from chaos.backends.rabbitmq.docker import DockerRabbitMQ, _server_folders
from chaos.backends.rabbitmq.local import SERVER_SCRIPT
from chaos.containers import engine
from chaos.doctor import docker_skip_reason

NO_RABBITMQ = None if os.path.isfile(SERVER_SCRIPT) else "rabbitmq-server is not installed"


@pytest.mark.skipif(NO_RABBITMQ is not None, reason=NO_RABBITMQ or "")
def test_the_image_takes_the_plugins_the_node_starts_and_no_others() -> None:
    plugins = {os.path.basename(path).rpartition("-")[0] for path in _server_folders(SERVER_SCRIPT)}
    assert {"rabbit", "rabbit_common", "rabbitmq_prelaunch", "ra", "rabbitmq_event_exchange", "cuttlefish"} <= plugins
    assert not plugins & {"rabbitmq_management", "rabbitmq_mqtt", "rabbitmq_shovel", "eetcd"}


def _queued(url: str, queue: str) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return int(connection.channel().queue_declare(queue, durable=True, passive=True).method.message_count)
    finally:
        connection.close()


@pytest.mark.full
@pytest.mark.skipif(docker_skip_reason() is not None, reason=docker_skip_reason() or "")
@pytest.mark.skipif(NO_RABBITMQ is not None, reason=NO_RABBITMQ or "")
def test_the_node_in_a_container_keeps_its_messages_and_settings(tmp_path: Path) -> None:
    run_id = f"test-rabbitmq-docker-{os.getpid()}"
    backend = DockerRabbitMQ(BackendSettings(tmp_path, run_id, options={"consumer_timeout_ms": 1000}))
    try:
        backend.start()
        url = backend.endpoint.url
        assert url.startswith("amqp://chaos:chaos@127.0.0.1:") and url.endswith("/%2F")
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        channel.queue_declare("kept", durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", "kept", b"job", pika.BasicProperties(delivery_mode=2))
        connection.close()

        # A clean stop first: a crash a moment after the queue's declaration can lose the queue itself (the
        # node's mnesia had not written it yet, seen once in a CI run), which is not what this test is about.
        for mode in ("fast", "immediate"):
            before = backend.pid
            backend.restart(mode)
            assert backend.pid not in (None, before)
            assert _queued(url, "kept") == 1, f"the message did not survive a {mode} restart"

        # A delivery left unacknowledged past consumer_timeout_ms: the node closes its channel (406).
        connection = pika.BlockingConnection(pika.URLParameters(url))
        channel = connection.channel()
        channel.basic_consume("kept", lambda *_: None)
        deadline = time.monotonic() + 10
        while channel.is_open and time.monotonic() < deadline:
            connection.process_data_events(0.2)
        assert channel.is_closed, "the node kept a delivery unacknowledged past its 1 s consumer timeout"
        connection.close()
    finally:
        backend.close()
    left = [engine.name_of(thing) for kind in ("containers", "networks", "volumes")
            for thing in engine.owned(kind, run_id)]
    assert left == []
