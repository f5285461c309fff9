"""queue-chaos: fault-injection verification for job queues.

This is the public surface for target and scenario authors, and it is lazy: a worker's
`from chaos import probe` loads the probe client alone (no checker, no sqlite3, no tomllib), since
workers run inside the queue's own virtualenv. Python 3.8 syntax, for the same reason.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # authoring targets
    "Control": "chaos.queue_model", "KeepsNoCompletions": "chaos.queue_model", "Job": "chaos.queue_model",
    "JobState": "chaos.queue_model", "Observer": "chaos.queue_model", "QueueRecord": "chaos.queue_model",
    "Target": "chaos.target",
    "Contract": "chaos.contract", "Endpoint": "chaos.backends.base", "Backend": "chaos.backends.base",
    "TableQueueControl": "chaos.backends.postgres.control", "RedisQueueControl": "chaos.backends.redis.control",
    "TriggerObserver": "chaos.backends.postgres.observer",
    "ReplicaObserver": "chaos.backends.redis.observer", "FirehoseObserver": "chaos.backends.rabbitmq.observer",
    "StreamObserver": "chaos.backends.redis.streams",
    "BeanstalkdQueueControl": "chaos.backends.beanstalkd.control",
    "RabbitMQQueueControl": "chaos.backends.rabbitmq.control",
    "NatsQueueControl": "chaos.backends.nats.control",
    "SqsQueueControl": "chaos.backends.sqs.control",
    "load_module": "chaos.usercode",  # a control loading its folder's other modules (tasks.py) by name
    # inside a worker process
    "probe": "chaos.worker.probe",
    # authoring scenarios
    "Context": "chaos.scenario", "Gate": "chaos.scenario", "HeldProbe": "chaos.scenario", "Scenario": "chaos.scenario",
    # running and judging
    "Run": "chaos.runtime.run", "RunOptions": "chaos.runtime.run", "RunResult": "chaos.runtime.run",
    "run_scenario": "chaos.runtime.run", "find_target": "chaos.discovery", "find_scenario": "chaos.discovery",
    "Event": "chaos.events", "Ledger": "chaos.ledger", "read_events": "chaos.ledger",
    "check": "chaos.check.checker", "judge": "chaos.check.checker",
    "Verdict": "chaos.check.verdict", "Violation": "chaos.check.verdict",
    "ChaosError": "chaos.errors", "ConfigError": "chaos.errors", "HarnessError": "chaos.errors",
    "NotExercised": "chaos.errors",
}
_MODULES = {"probe"}  # exported as modules, not as a name inside one

__all__ = ["Backend", "BeanstalkdQueueControl", "ChaosError", "ConfigError", "Context", "Contract", "Control",
           "Endpoint", "Event", "FirehoseObserver", "Gate", "HarnessError", "HeldProbe", "Job", "JobState",
           "KeepsNoCompletions", "Ledger", "NatsQueueControl",
           "NotExercised", "Observer", "QueueRecord", "RabbitMQQueueControl", "RedisQueueControl", "ReplicaObserver",
           "Run", "RunOptions", "RunResult", "Scenario", "SqsQueueControl", "StreamObserver", "TableQueueControl",
           "Target", "TriggerObserver", "Verdict",
           "Violation", "check", "find_scenario", "find_target", "judge", "load_module", "probe", "read_events",
           "run_scenario"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chaos' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name in _MODULES else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from chaos.backends.base import Backend, Endpoint
    from chaos.backends.beanstalkd.control import BeanstalkdQueueControl
    from chaos.backends.nats.control import NatsQueueControl
    from chaos.backends.postgres.control import TableQueueControl
    from chaos.backends.postgres.observer import TriggerObserver
    from chaos.backends.rabbitmq.control import RabbitMQQueueControl
    from chaos.backends.rabbitmq.observer import FirehoseObserver
    from chaos.backends.redis.control import RedisQueueControl
    from chaos.backends.redis.observer import ReplicaObserver
    from chaos.backends.redis.streams import StreamObserver
    from chaos.backends.sqs.control import SqsQueueControl
    from chaos.check.checker import check, judge
    from chaos.check.verdict import Verdict, Violation
    from chaos.contract import Contract
    from chaos.discovery import find_scenario, find_target
    from chaos.errors import ChaosError, ConfigError, HarnessError, NotExercised
    from chaos.events import Event
    from chaos.ledger import Ledger, read_events
    from chaos.queue_model import Control, Job, JobState, KeepsNoCompletions, Observer, QueueRecord
    from chaos.runtime.run import Run, RunOptions, RunResult, run_scenario
    from chaos.scenario import Context, Gate, HeldProbe, Scenario
    from chaos.target import Target
    from chaos.usercode import load_module
    from chaos.worker import probe
