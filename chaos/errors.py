"""One root exception, so the CLI can turn every known failure into a clear message and exit code."""

from __future__ import annotations


class ChaosError(Exception):
    """Root of every error the suite raises on purpose."""

    exit_code = 3


class ConfigError(ChaosError):
    """The user's input or machine is wrong (unknown target, bad toml, missing binary): exit 2."""

    exit_code = 2


class PluginError(ConfigError):
    """An installed package's entry point (a backend kind, fault kind or target) does not load, or takes a
    name already used: the installation is wrong, exit 2."""


class HarnessError(ChaosError):
    """The suite itself could not do its job (a server would not start, a sink died): exit 3."""

    exit_code = 3


class ScenarioError(HarnessError):
    """The scenario's own code raised: the run cannot be judged (exit 3), and the user's traceback matters."""


class TargetCodeError(HarnessError):
    """The target's control or observer code raised (its setup, its snapshot): no verdict on the queue
    (exit 3), and the target author's traceback matters."""


class NotExercised(ChaosError):
    """A gate never matched, so the fault was never injected: the run is inconclusive (exit 4)."""

    exit_code = 4
