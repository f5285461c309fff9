"""queue-chaos: fault-injection verification for job queues.

This is the public surface for target and scenario authors, and it is lazy: a worker's
`from chaos import probe` loads the probe client alone (no checker, no sqlite3, no tomllib), since
workers run inside the queue's own virtualenv. Python 3.8 syntax, for the same reason.

The names below are the suite's own; each built-in backend kind's control and observer classes
(`TableQueueControl`, ...) come from its package's EXPORTS (chaos.backends.registry), looked up the first
time one is asked for, so a new kind exports its names without an edit here.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # authoring targets
    "Control": "chaos.queue_model", "KeepsNoCompletions": "chaos.queue_model", "Job": "chaos.queue_model",
    "JobState": "chaos.queue_model", "Observer": "chaos.queue_model", "QueueRecord": "chaos.queue_model",
    "Target": "chaos.target",
    "Contract": "chaos.contract", "Endpoint": "chaos.backends.base", "Backend": "chaos.backends.base",
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

# The suite's own names; a built-in backend kind's (its package's EXPORTS) resolve too, and dir() lists them.
__all__ = ["Backend", "ChaosError", "ConfigError", "Context", "Contract", "Control", "Endpoint", "Event", "Gate",
           "HarnessError", "HeldProbe", "Job", "JobState", "KeepsNoCompletions", "Ledger", "NotExercised", "Observer",
           "QueueRecord", "Run", "RunOptions", "RunResult", "Scenario", "Target", "Verdict", "Violation", "check",
           "find_scenario", "find_target", "judge", "load_module", "probe", "read_events", "run_scenario"]


def _kind_exports() -> dict[str, str]:
    """The built-in backend kinds' public names (their packages are cheap to import)."""
    from chaos.backends.registry import exports

    return exports()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    # `from chaos import events` asks for the attribute before it imports the submodule: not a kind's name.
    if module is None and not name.startswith("__") and importlib.util.find_spec(f"chaos.{name}") is None:
        module = _kind_exports().get(name)
    if module is None:
        raise AttributeError(f"module 'chaos' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name in _MODULES else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_kind_exports()))


if TYPE_CHECKING:
    from chaos.backends.base import Backend, Endpoint
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
