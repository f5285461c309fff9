"""The Redis, beanstalkd and RabbitMQ providers against real servers: a local server's durability setting
decides what a crash-restart keeps, every process of a server ends with it (or with `chaos clean` after
its runner was killed), an external run's namespace is made and removed, and a missing binary is a
one-paragraph error naming its Debian package."""

from __future__ import annotations

import os
from pathlib import Path

import greenstalk
import pika
import pika.exceptions
import pytest
import redis

from chaos.backends import rabbitmq as rabbitmq_kind
from chaos.backends import redis as redis_kind
from chaos.backends.base import BackendSettings
from chaos.backends.beanstalkd.external import ExternalBeanstalkd
from chaos.backends.beanstalkd.local import LocalBeanstalkd
from chaos.backends.local_server import LocalServer, server_processes
from chaos.backends.rabbitmq.control import RabbitMQQueueControl
from chaos.backends.rabbitmq.external import ExternalRabbitMQ
from chaos.backends.rabbitmq.local import LocalRabbitMQ
from chaos.backends.redis.control import RedisQueueControl
from chaos.backends.redis.external import ExternalRedis
from chaos.backends.redis.local import LocalRedis
from chaos.contract import Contract
from chaos.errors import ConfigError
from chaos.events import Record
from chaos.queue_model import Job, JobState
from chaos.worker.beanstalkd import connect as beanstalk
from chaos.worker.rabbitmq import DEAD
from tests.integration.runner import chaos


def settings(root: Path, started: list[Record] | None = None, **options: str) -> BackendSettings:
    return BackendSettings(root, "run-1", on_event=None if started is None else started.append, options=options)


def redis_client(server: LocalServer) -> redis.Redis:
    return redis.Redis.from_url(server.endpoint.url, decode_responses=True, socket_timeout=5)


@pytest.mark.parametrize(("persistence", "kept"), [("none", False), ("aof-always", True)])
def test_a_redis_crash_keeps_what_its_persistence_keeps(tmp_path: Path, persistence: str, kept: bool) -> None:
    with LocalRedis.open(settings(tmp_path, persistence=persistence)) as server:
        with redis_client(server) as client:
            client.rpush("queue", "job-1")
        old_pid, port = server.pid, server.port
        server.restart("immediate")  # SIGKILL: no shutdown save
        assert server.pid != old_pid and server.port == port
        with redis_client(server) as client:
            assert client.lrange("queue", 0, -1) == (["job-1"] if kept else [])


def test_the_redis_controls_word_on_a_completion_is_the_done_hashs(tmp_path: Path) -> None:
    """An ack reported with ok null is accepted where the done hash names its token, and unknown otherwise
    (not done yet, or completed last by another claim, which may have overwritten this one's)."""
    with LocalRedis.open(settings(tmp_path)) as server:
        control = RedisQueueControl(server, {}, Contract(recovery_bound_s=1.0))
        try:
            control.enqueue([Job("job-0001")])
            assert control.completion("job-0001", "t1") == "unknown"
            control.client.hset(control.keys.done, "job-0001", "t1")
            assert control.completion("job-0001", "t1") == "accepted"
            assert control.completion("job-0001", "t0") == "unknown"
        finally:
            control.close()


@pytest.mark.parametrize(("binlog", "kept"), [("off", False), ("on", True)])
def test_a_beanstalkd_crash_keeps_what_its_binlog_keeps(tmp_path: Path, binlog: str, kept: bool) -> None:
    with LocalBeanstalkd.open(settings(tmp_path, binlog=binlog)) as server:
        client = beanstalk(server.endpoint.url, server.namespace)
        bid = client.put("job-1", ttr=5)
        client.close()
        server.restart("immediate")
        client = beanstalk(server.endpoint.url, server.namespace)
        try:
            if kept:
                assert client.peek(bid).body == "job-1"
            else:
                with pytest.raises(greenstalk.NotFoundError):
                    client.peek(bid)
        finally:
            client.close()


def test_a_private_rabbitmq_node_keeps_persistent_messages_and_leaves_nothing(tmp_path: Path) -> None:
    started: list[Record] = []
    server = LocalRabbitMQ.open(settings(tmp_path, started))
    try:
        assert [r.kind for r in started] == ["backend.prepare", "backend.start"]
        node = started[1].data
        assert node["node"].startswith("queue-chaos-") and node["ports"]["epmd"] != 4369
        names = {p.name() for p in server_processes(server.marker)}
        assert {"beam.smp", "epmd"} <= names, names  # its own epmd, on its own port
        connection = pika.BlockingConnection(pika.URLParameters(server.endpoint.url))
        channel = connection.channel()
        channel.queue_declare("jobs", durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", "jobs", b"job-1", pika.BasicProperties(delivery_mode=2))
        connection.close()
        # A clean restart: a crash moments after a queue's declaration may lose the declaration itself (its
        # metadata reaches disk a little later than the declare-ok). The crash-restart with a queue declared
        # at setup is the rabbitmq_ack x restart_backend_during_recovery known answer.
        server.restart("fast")
        connection = pika.BlockingConnection(pika.URLParameters(server.endpoint.url))
        method, _, body = connection.channel().basic_get("jobs", auto_ack=True)
        connection.close()
        assert body == b"job-1"
    finally:
        server.close()
    assert server_processes(server.marker) == []
    assert not server.data_dir.exists()


def test_a_killed_runs_server_is_swept_by_its_marker(tmp_path: Path) -> None:
    """What `chaos clean` does for a run whose runner was SIGKILLed: its ledger's backend.prepare, journaled
    before the server's data dir existed, is enough."""
    started: list[Record] = []
    server = LocalRedis.open(settings(tmp_path / "backend", started))
    try:
        assert server_processes(server.marker)
        assert started[0].kind == "backend.prepare"
        done, said = LocalRedis.clean_after_killed_run(started[0].data, tmp_path, None)
        assert done and "removed" in said
        assert server_processes(server.marker) == []
        assert not server.data_dir.exists()
    finally:
        server.close()


def test_an_external_redis_run_keeps_to_its_prefix(tmp_path: Path) -> None:
    with LocalRedis.open(settings(tmp_path)) as server:
        with redis_client(server) as client:
            client.set("users-key", "kept")
            external = ExternalRedis.open(BackendSettings(Path("/nonexistent"), "run-2", server.endpoint.url))
            assert external.namespace == "chaos:run-2:" and external.endpoint.url == server.endpoint.url
            client.rpush(external.namespace + "queue", "job-1")
            external.close()
            assert client.keys("*") == ["users-key"]


def test_an_external_namespace_is_journaled_before_it_is_made_so_a_kill_meanwhile_is_cleaned(
        tmp_path: Path) -> None:
    with LocalRedis.open(settings(tmp_path)) as server:
        started: list[Record] = []
        external = ExternalRedis.open(BackendSettings(Path("/nonexistent"), "run-3", server.endpoint.url,
                                                      on_event=started.append))
        assert [r.kind for r in started] == ["backend.prepare", "backend.start"]
        assert started[0].data == started[1].data == {"provider": "external", "url": server.endpoint.url,
                                                      "namespace": "chaos:run-3:", "marker": external.marker}
        with redis_client(server) as client:
            client.set("users-key", "kept")
            client.rpush(external.namespace + "queue", "job-1")
            # What `chaos clean` has of a runner killed before its backend.start: the prepare alone.
            done, said = ExternalRedis.clean_after_killed_run(started[0].data, tmp_path / "run-3",
                                                              server.endpoint.url)
            assert done and said == f"removed its Redis namespace chaos:run-3: on {server.endpoint.url}"
            assert client.keys("*") == ["users-key"]
        external.close()


def test_an_external_beanstalkd_run_empties_its_tube(tmp_path: Path) -> None:
    with LocalBeanstalkd.open(settings(tmp_path)) as server:
        external = ExternalBeanstalkd.open(BackendSettings(Path("/nonexistent"), "run-2", server.endpoint.url))
        client = beanstalk(server.endpoint.url, external.namespace)
        for job in ("job-1", "job-2"):
            client.put(job)
        external.close()
        with pytest.raises(greenstalk.NotFoundError):
            client.peek_ready()
        client.close()


def test_an_external_rabbitmq_run_gets_its_own_vhost(shared_rabbitmq: dict[str, str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(rabbitmq_kind.ENV_API_URL, shared_rabbitmq[rabbitmq_kind.ENV_API_URL])
    external = ExternalRabbitMQ.open(BackendSettings(Path("/nonexistent"), "run-2",
                                                     shared_rabbitmq[rabbitmq_kind.ENV_URL]))
    assert external.endpoint.url.endswith("/chaos-run-2")
    pika.BlockingConnection(pika.URLParameters(external.endpoint.url)).close()
    external.close()
    with pytest.raises(pika.exceptions.AMQPError):
        pika.BlockingConnection(pika.URLParameters(external.endpoint.url))


@pytest.mark.parametrize(("target", "package"), [("redis_basic", "redis-server"), ("beanstalkd_ttr", "beanstalkd")])
def test_a_missing_server_binary_names_its_package(tmp_path: Path, target: str, package: str) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = chaos("run", "--target", target, "--scenario", "no_faults", "--runs-dir", str(tmp_path / "runs"),
                   env={"PATH": str(empty)})
    assert result.code == 2, result.stdout + result.stderr
    assert f"apt-get install {package}" in result.stderr and "Traceback" not in result.stderr


def test_an_external_provider_without_a_url_says_which_variable(tmp_path: Path) -> None:
    assert redis_kind.ENV_URL not in os.environ
    result = chaos("run", "--target", "redis_reliable", "--scenario", "no_faults", "--backend", "external",
                   "--runs-dir", str(tmp_path))
    assert result.code == 2 and redis_kind.ENV_URL in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("url", ["redis://[::1/0", "redis://127.0.0.1:port/0", "http://127.0.0.1:6379/0",
                                 "redis:///0"])
def test_a_malformed_external_url_is_a_config_error_that_names_the_variable(url: str) -> None:
    with pytest.raises(ConfigError, match=f"Expected a Redis URL like .*{redis_kind.ENV_URL}"):
        ExternalRedis(url, "run")


def test_a_rabbitmq_snapshot_reads_a_queue_the_broker_lost_as_empty(shared_rabbitmq: dict[str, str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker killed soon after the queues were declared may come back without one (seen: the dead queue)."""
    monkeypatch.setenv(rabbitmq_kind.ENV_API_URL, shared_rabbitmq[rabbitmq_kind.ENV_API_URL])
    external = ExternalRabbitMQ.open(BackendSettings(Path("/nonexistent"), "lost-queue",
                                                     shared_rabbitmq[rabbitmq_kind.ENV_URL]))
    control = RabbitMQQueueControl(external, {}, Contract(recovery_bound_s=1.0))
    try:
        control.setup()
        control.enqueue([Job("job-0001")])
        control.channel().queue_delete(DEAD)
        assert control.snapshot() == [JobState("job-0001", "pending", attempts=0)]
        assert control.snapshot() == [JobState("job-0001", "pending", attempts=0)], "the message went back"
    finally:
        control.close()
        external.close()
