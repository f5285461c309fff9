"""target.toml's settings by audience: [server] for the provider (declared, checked), typed [params] (a
`-p` value read as its default's type), and the contract as workers read it from their settings."""

from __future__ import annotations

import json

import pytest

from chaos import ConfigError, find_target
from chaos.backends.redis import PERSISTENCE
from chaos.backends.redis.local import PERSISTENCE_ARGV
from chaos.backends.registry import provider
from chaos.worker.settings import WorkerSettings


def test_params_keep_their_toml_types_and_p_values_are_read_as_the_defaults_type() -> None:
    lifeline = find_target("pg_lifeline")
    assert lifeline.params == {"rescue_after_s": 1.5, "rescue_interval_s": 0.2}
    moved = lifeline.with_params({"rescue_after_s": "2"})
    assert moved.params["rescue_after_s"] == 2.0 and isinstance(moved.params["rescue_after_s"], float)
    rabbit = find_target("rabbitmq_ack").with_params({"heartbeat_s": "3"})
    assert rabbit.params["heartbeat_s"] == 3 and isinstance(rabbit.params["heartbeat_s"], int)
    with pytest.raises(ConfigError, match="heartbeat_s='2.5' is not an integer"):
        rabbit.with_params({"heartbeat_s": "2.5"})


def test_server_settings_leave_params_and_p_sets_either() -> None:
    basic = find_target("redis_basic")
    assert basic.params == {} and basic.server == {"persistence": "none"}
    assert basic.with_params({"persistence": "aof-always"}).server == {"persistence": "aof-always"}
    with pytest.raises(ConfigError, match='persistence = "fsync" is not allowed'):
        basic.with_params({"persistence": "fsync"})
    local, external = provider("redis", "local"), provider("redis", "external")
    assert basic.server_settings(local.options) == {"persistence": "none"}
    assert basic.server_settings(external.options) == {}, "an external server takes no setting of the suite's"
    rabbit = find_target("rabbitmq_ack").with_params({"consumer_timeout_ms": "5000"})
    assert rabbit.server["consumer_timeout_ms"] == 5000


def test_every_declared_persistence_has_its_redis_server_arguments() -> None:
    assert set(PERSISTENCE.choices) == set(PERSISTENCE_ARGV)


def test_workers_read_typed_params_and_the_contract_from_their_settings() -> None:
    target = find_target("pg_lease")
    env_params = json.loads(json.dumps(target.params))  # as the launcher hands them over
    cfg = WorkerSettings("w1", env_params, json.loads(json.dumps(target.contract.to_dict())))
    assert cfg.param("heartbeat") == "thread"
    assert (cfg.lease_s, cfg.heartbeat_s, cfg.recovery_bound_s, cfg.max_attempts) == (1.0, 0.25, 2.0, 3)
    bare = WorkerSettings("w1", {}, {"recovery_bound_s": 1.0})
    assert (bare.lease_s, bare.heartbeat_s, bare.max_attempts) == (0.0, 0.0, 1)
