"""Targets: a folder with target.toml (backend, worker command, params, contract) and its control code.

The control side is a class named in target.toml that sets up the queue, enqueues jobs, gives the
worker environment, and takes the final `snapshot()` of every job as the queue itself sees it.
"""

from __future__ import annotations

import math
import sys
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from chaos.backends.base import Backend, Endpoint
from chaos.backends.registry import KINDS
from chaos.contract import SECONDS, Contract, is_seconds
from chaos.errors import ConfigError
from chaos.names import check_name
from chaos.usercode import load_module

PLACEHOLDERS = ("python", "target_dir")
DEFAULT_GRACE_S = 3.0


@dataclass(frozen=True)
class Job:
    """A job the scenario enqueues: how long its handler runs, and whether it always fails (poison)."""

    id: str
    handler_s: float = 0.0
    fail: bool = False

    def payload(self) -> dict[str, Any]:
        return {"handler_s": self.handler_s, "fail": self.fail}


@dataclass(frozen=True)
class JobState:
    """One job as the queue sees it at the end: pending, claimed, done, dead (or absent)."""

    job: str
    state: str
    owner: str | None = None
    attempts: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class Control(Protocol):
    """What a target's control class provides. It runs in the suite's process, constructed with
    (backend, params, contract): `backend` is the started server (`dsn`, `endpoint`), params are the
    target's parameters as strings, the contract its [contract] table."""

    def setup(self) -> None:
        """Create the queue (schema, tables) on the fresh backend."""

    def enqueue(self, jobs: list[Job]) -> None:
        """Put jobs in the queue; the suite's job id must travel in the queue's own payload, since every
        probe names it."""

    def worker_env(self, endpoint: Endpoint) -> dict[str, str]:
        """The connection settings of one worker, built from the endpoint it is handed (its own way to
        the backend: a proxy when the scenario cuts the network), never from the backend's address."""

    def snapshot(self) -> list[JobState]:
        """Every job as the queue itself sees it: pending, claimed (by whom), done, dead, or absent.

        A queue that cannot show a job out for delivery (a broker's unacknowledged message is in no queue)
        says so with a class attribute `shows_deliveries = False`: the suite then counts a job as drained
        only once it is dead, or an ack of it was accepted."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class Target:
    name: str
    path: Path
    description: str
    backend: str
    control: str
    worker: list[str]
    contract: Contract
    params: dict[str, str]
    choices: dict[str, list[str]]
    reconciler: list[str] | None = None
    kinds: dict[str, str] = field(default_factory=dict)
    shutdown_grace_s: float = DEFAULT_GRACE_S  # how long its processes get after SIGTERM at the end of a run

    def with_params(self, overrides: dict[str, str]) -> Target:
        """Apply `-p key=value` overrides, refusing unknown keys, values outside the declared choices, and
        values of another kind than the default in target.toml (a number stays a number)."""
        params = dict(self.params)
        for key, value in overrides.items():
            if key not in params:
                known = ", ".join(sorted(params)) or "none"
                raise ConfigError(f"Target {self.name} has no parameter {key!r}; its parameters are: {known}. "
                                  f"Pass them as -p key=value.")
            allowed = self.choices.get(key)
            if allowed and value not in allowed:
                raise ConfigError(f"Target {self.name}: parameter {key}={value!r} is not one of "
                                  f"{', '.join(allowed)}.")
            kind = self.kinds.get(key, "string")
            if not _is_of_kind(value, kind):
                raise ConfigError(f"Target {self.name}: parameter {key}={value!r} is not {_KIND_EXAMPLES[kind]}, "
                                  f"as its default {key} = {self.params[key]} in target.toml is.")
            params[key] = value
        return replace(self, params=params)

    def with_contract(self, overrides: dict[str, str]) -> Target:
        """Apply `-c key=value` overrides (each value read as TOML, else as a string), checked as target.toml's are."""
        if not overrides:
            return self
        raw = {k: v for k, v in self.contract.to_dict().items() if v is not None}
        raw.update({key: _toml_value(value) for key, value in overrides.items()})
        return replace(self, contract=Contract.from_dict(raw, f"target {self.name} with -c overrides"))

    def command(self, argv: list[str]) -> list[str]:
        return [part.format(python=sys.executable, target_dir=str(self.path)) for part in argv]

    def load_control(self, backend: Backend) -> Control:
        module_name, _, attr = self.control.partition(":")
        file = self.path / f"{module_name}.py"
        if not file.is_file():
            raise ConfigError(f"{self.path / 'target.toml'}: control = {self.control!r} names {file}, which "
                              "does not exist. Expected 'module:Class' with module.py in the target folder.")
        module = load_module(file, f"chaos_target_{self.name}_{module_name}", "control module")
        factory = getattr(module, attr or "Control", None)
        if factory is None:
            raise ConfigError(f"{file} defines no {attr or 'Control'}; target.toml's control names it.")
        control: Control = factory(backend, dict(self.params), self.contract)
        return control


def load_target(folder: Path) -> Target:
    file = folder / "target.toml"
    try:
        raw = tomllib.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file} is not UTF-8 text ({exc}); TOML files must be UTF-8. Save it as UTF-8.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML ({exc}). Fix the syntax; see targets/pg_lease/target.toml "
                          "for a complete example.") from exc
    except OSError as exc:
        raise ConfigError(f"Cannot read {file}: {exc}.") from exc

    def need(key: str, kind: type, example: str) -> Any:
        value = raw.get(key)
        if not isinstance(value, kind):
            raise ConfigError(f"{file}: expected {key} = {example}, found {value!r}. See targets/pg_lease/"
                              "target.toml for a complete example.")
        return value

    backend = need("backend", str, '"postgres"')
    if backend not in KINDS:
        raise ConfigError(f"{file}: backend = {backend!r} is not supported; expected one of {', '.join(KINDS)}.")
    worker = need("worker", list, '["{python}", "{target_dir}/worker.py"] (the worker command)')
    reconciler = raw.get("reconciler")
    for argv, key in ((worker, "worker"), (reconciler or ["x"], "reconciler")):
        if not isinstance(argv, list) or not argv or not all(isinstance(part, str) for part in argv):
            raise ConfigError(f"{file}: {key} must be a non-empty list of strings (a command and its arguments).")
        _check_placeholders(argv, key, file)
    contract = Contract.from_dict(dict(need("contract", dict, "a [contract] table")), str(file))
    params, kinds = _load_params(dict(need("params", dict, "a [params] table")) if "params" in raw else {}, file)
    choices = _load_choices(raw.get("choices", {}), params, file)
    grace = raw.get("shutdown_grace_s", DEFAULT_GRACE_S)
    if not is_seconds(grace):
        raise ConfigError(f"{file}: shutdown_grace_s = {grace!r}; expected {SECONDS} (how long workers get to "
                          "shut down after SIGTERM at the end of a run).")
    name = check_name(raw.get("name", folder.name), f"target name in {file}",
                      "Set name = \"...\" in target.toml (or rename the folder, whose name is the default).")
    return Target(name, folder.resolve(), str(raw.get("description", "")), backend,
                  str(raw.get("control", "control:Control")), worker, contract, params, choices, reconciler, kinds,
                  float(grace))


_KIND_EXAMPLES = {"integer": "an integer", "number": "a finite number", "boolean": "true or false",
                  "string": "a string"}


def _toml_value(text: str) -> Any:
    """`true`, `2.5` or `"x"` as TOML reads them; anything else (a bare word such as `rejected`) as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _load_params(raw: dict[str, Any], file: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Each parameter's default as the string its worker gets, and its kind, taken from the TOML value's type."""
    params: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bool):
            kinds[key], params[key] = "boolean", str(value).lower()
        elif isinstance(value, int):
            kinds[key], params[key] = "integer", str(value)
        elif isinstance(value, float) and math.isfinite(value):
            kinds[key], params[key] = "number", repr(value)
        elif isinstance(value, str):
            kinds[key], params[key] = "string", value
        else:
            raise ConfigError(f"{file}: parameter {key} = {value!r} must be a string, integer, finite number or "
                              "boolean; its type is the kind of value `-p` accepts for it.")
    return params, kinds


def _load_choices(raw: Any, params: dict[str, str], file: Path) -> dict[str, list[str]]:
    """[choices]: for some parameters, the list of the only values `-p` accepts."""
    example = 'a [choices] table of lists, e.g. heartbeat = ["thread", "inline"]'
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: expected choices = {example}, found {raw!r}.")
    choices: dict[str, list[str]] = {}
    for key, values in raw.items():
        if key not in params:
            raise ConfigError(f"{file}: choices names {key!r}, which is not a parameter in [params]; declare it "
                              "there with its default.")
        if not isinstance(values, list) or not values or not all(isinstance(v, (str, int, float, bool))
                                                                   for v in values):
            raise ConfigError(f"{file}: choices {key} = {values!r}; expected {example}.")
        choices[key] = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
    return choices


def _check_placeholders(argv: list[str], key: str, file: Path) -> None:
    """Only {python} and {target_dir} are filled in (write {{ and }} for literal braces): each argument is
    formatted once here, as it will be when a worker starts."""
    for part in argv:
        try:
            part.format(python="python", target_dir="target_dir")
        except KeyError as exc:
            raise ConfigError(f"{file}: {key} argument {part!r} uses the placeholder {{{exc.args[0]}}}, which the "
                              f"suite does not fill in; the placeholders are {{python}} (the suite's interpreter) "
                              "and {target_dir} (this folder).") from exc
        except (ValueError, IndexError, AttributeError) as exc:
            raise ConfigError(f"{file}: {key} argument {part!r} is not a valid command template ({exc}); use "
                              "{python} and {target_dir} as they are, and write {{ and }} for literal braces.") from exc


def _is_of_kind(value: str, kind: str) -> bool:
    if kind == "boolean":
        return value in ("true", "false")
    try:
        if kind == "integer":
            int(value)
        elif kind == "number":
            return math.isfinite(float(value))
    except ValueError:
        return False
    return True
