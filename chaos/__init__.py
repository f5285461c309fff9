"""queue-chaos: fault-injection verification for job queues. The public surface is small on purpose."""

from chaos.checker import check, judge
from chaos.contract import Contract
from chaos.errors import ChaosError, ConfigError, HarnessError, NotExercised
from chaos.ledger import Event, Ledger, read_events
from chaos.target import Job, JobState
from chaos.verdict import Verdict, Violation

__all__ = ["ChaosError", "ConfigError", "Contract", "Event", "HarnessError", "Job", "JobState", "Ledger",
           "NotExercised", "Verdict", "Violation", "check", "judge", "read_events"]
