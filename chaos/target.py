"""Targets: a folder with target.toml and its control code.

target.toml's settings are split by audience: `[server]` configures the backend's server (each provider
declares what it takes), `[params]` are the queue's own knobs (typed TOML values, checked against
`[choices]`, handed to the workers and the control as JSON values), and `[contract]` is what the queue
promises, which the checker judges against and the workers read from their settings. A contract value may
be tied to a parameter (`lease_s = "{param:rescue_after_s}"`, `chaos.contract_params`): one setting then.

The control side is a class named in target.toml that sets up the queue, enqueues jobs, gives the
worker environment, and takes the final `snapshot()` of every job as the queue itself sees it: what it
provides (`Control`, `Observer`) and the words it speaks (`Job`, `JobState`, `QueueRecord`) are
`chaos.queue_model`'s, below the backend kinds, which this module sits above.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from chaos.backends.base import Backend
from chaos.backends.options import ServerOption
from chaos.backends.registry import KINDS, layout_module, layout_observer, server_options
from chaos.contract import SECONDS, Contract, is_seconds
from chaos.contract_params import described, kind_of, referenced, resolve, tie
from chaos.errors import ConfigError
from chaos.names import check_name
from chaos.pythons import Interpreter, find
from chaos.queue_model import CONTROL_MEMBERS, Control, Observer
from chaos.usercode import load_module

# What a worker or reconciler command may name: the suite's interpreter (or the one [worker] python names),
# the target's folder, the process's name (w1), its own way to the backend (a proxy under network faults), the
# run's namespace on the server (a key prefix, a schema, a tube, a vhost; "" where the server is the run's
# own), and {param:NAME}.
PLACEHOLDERS = ("python", "target_dir", "worker", "endpoint_url", "namespace", "param:NAME")
DEFAULT_GRACE_S = 3.0
DEFAULT_CONTROL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ControlCommand:
    """target.toml's `[control]` table: the control is a process of its own speaking docs/control-protocol.md
    (`command`, filled in as a worker's is), whether its snapshot shows a job out for delivery, whether its
    queue records which execution completed a job (else completion is never asked), and how long it may take
    to answer one request."""

    command: list[str]
    shows_deliveries: bool = True
    keeps_completions: bool = True
    timeout_s: float = DEFAULT_CONTROL_TIMEOUT_S


@dataclass(frozen=True)
class Target:
    name: str
    path: Path
    description: str
    backend: str
    control: str
    worker: list[str]
    contract: Contract
    params: dict[str, Any]  # [params]: typed TOML values (str, int, float, bool)
    choices: dict[str, list[Any]]
    reconciler: list[str] | None = None
    server: dict[str, Any] = field(default_factory=dict)  # [server]: the settings it gives the backend's server
    shutdown_grace_s: float = DEFAULT_GRACE_S  # how long its processes get after SIGTERM at the end of a run
    observer: str | None = None  # 'module:Class' of its observer, where it declares one
    image: str | None = None  # the image its workers run in (chaos.containers.workers), where they run in one
    ties: dict[str, str] = field(default_factory=dict)  # contract key -> the [params] value it is ("{param:NAME}")
    python: str | None = None  # [worker] python: the interpreter {python} names ("3.12" or a path), where not ours
    control_process: ControlCommand | None = None  # [control]: the control runs as a process of its own
    layout: Any = None  # the observer declared as configuration ([observer]), as its kind's LAYOUT module parsed it

    @property
    def observed_by(self) -> str | None:
        """What reads the queue's own record: its observer class ('module:Class'), its declared layout, or None."""
        return self.observer or ("the [observer] layout" if self.layout is not None else None)

    def with_params(self, overrides: dict[str, str]) -> Target:
        """Apply `-p key=value` overrides (see `with_overrides`)."""
        return self.with_overrides(overrides, {})

    def with_contract(self, overrides: dict[str, str]) -> Target:
        """Apply `-c key=value` overrides (see `with_overrides`)."""
        return self.with_overrides({}, overrides)

    def with_overrides(self, params: dict[str, str], contract: dict[str, str]) -> Target:
        """Apply `-p` and `-c`. `-p key=value` sets a server setting (checked by the option that declares it,
        the value read as TOML) or a parameter (read as its default's type; refused outside the declared
        choices). `-c key=value` sets a contract key (the value read as TOML, else as a string), checked as
        target.toml's are; `-c key=` unsets it, `-c key={param:NAME}` ties it to a parameter. A key tied to a
        parameter is one setting with it: `-c` retunes the parameter too, and a `-p` and a `-c` (or two `-c`)
        that give it different values contradict each other. Tied keys then take their parameters' values."""
        if not params and not contract:
            return self
        raw = {key: value for key, value in self.contract.to_dict().items() if value is not None}
        ties, params = dict(self.ties), dict(params)
        given = {name: f"-p {name}={text}" for name, text in params.items()}
        where = f"target {self.name} with -c overrides" if contract else f"target {self.name} with -p overrides"
        for key, text in contract.items():
            raw.pop(key, None)
            if text == "":
                self._known_contract_key(key)
                ties.pop(key, None)
                continue
            value = _toml_value(text)
            name = referenced(key, value, where)
            if name is not None:
                resolve({key: name}, self.params, where)  # a parameter of the key's kind, or refused now
                ties[key] = name
            elif key in ties:
                self._retune(key, text, params, given)
            else:
                raw[key] = value
        target = self._with_params(params)
        raw.update(resolve(ties, target.params, where))
        return replace(target, ties=ties, contract=Contract.from_dict(raw, described(where, ties)))

    def _retune(self, key: str, text: str, params: dict[str, str], given: dict[str, str]) -> None:
        """`-c key=text` of a key tied to a parameter: the parameter's value too, unless another flag gave it
        a different one (a contradiction: the judge and the queue would disagree)."""
        name, flag = self.ties[key], f"-c {key}={text}"
        try:
            value = self._param(name, text)
        except ConfigError as exc:
            raise ConfigError(f"{flag} sets the parameter {name} too (target.toml ties them: {key} = "
                              f'"{{param:{name}}}"). {exc}') from None
        if name in params and self._param(name, params[name]) != value:
            raise ConfigError(f"Target {self.name}: {given[name]} and {flag} contradict each other: target.toml ties "
                              f'the contract\'s {key} to the parameter {name} ({key} = "{{param:{name}}}"), so they '
                              "are one setting, the queue's and the judge's. Give one of them, or both the same value.")
        params[name], given[name] = text, flag

    def _known_contract_key(self, key: str) -> None:
        """`-c key=` unsets a key of the contract, which must be one."""
        known = Contract.__dataclass_fields__
        if key not in known:
            raise ConfigError(f"target {self.name} with -c overrides: -c {key}= unsets no contract key; expected keys "
                              f"among {', '.join(sorted(known))}.")

    def _with_params(self, overrides: dict[str, str]) -> Target:
        """The target with its `-p` values set (its contract not yet tied to them)."""
        params, server = dict(self.params), dict(self.server)
        options = server_options(self.backend)
        for key, text in overrides.items():
            if key in options:
                server[key] = options[key].check(_toml_value(text), f"target {self.name}, -p {key}")
            elif key in params:
                params[key] = self._param(key, text)
            else:
                known = ", ".join(sorted(params) + sorted(options)) or "none"
                raise ConfigError(f"Target {self.name} has no parameter or server setting {key!r}; it has: {known}. "
                                  f"Pass them as -p key=value.")
        return replace(self, params=params, server=server)

    def _param(self, key: str, text: str) -> Any:
        """A `-p` value read as the kind of its default in target.toml (a number stays a number)."""
        kind = kind_of(self.params[key])
        value = _parse_kind(text, kind)
        if value is None:
            raise ConfigError(f"Target {self.name}: parameter {key}={text!r} is not {_KIND_EXAMPLES[kind]}, "
                              f"as its default {key} = {_toml(self.params[key])} in target.toml is.")
        allowed = self.choices.get(key)
        if allowed and value not in allowed:
            raise ConfigError(f"Target {self.name}: parameter {key}={text!r} is not one of "
                              f"{', '.join(_toml(choice).strip(chr(34)) for choice in allowed)}.")
        return value

    def server_settings(self, declared: tuple[ServerOption, ...]) -> dict[str, Any]:
        """The [server] values for the options a provider declares (an external server takes none)."""
        names = {option.name for option in declared}
        return {key: value for key, value in self.server.items() if key in names}

    def interpreter(self) -> Interpreter | None:
        """The Python `[worker] python` names (a ConfigError saying how to install it where it is missing),
        or None: then {python} is the suite's own interpreter. Looked for once per process."""
        if self.python is None:
            return None
        return _interpreter(self.python, self.path, f"{self.path / 'target.toml'}: [worker]")

    def command(self, argv: list[str], worker: str, endpoint_url: str, namespace: str) -> list[str]:
        """A process's command line with its placeholders filled in (see PLACEHOLDERS)."""
        interpreter = self.interpreter()
        python = sys.executable if interpreter is None else str(interpreter.path)
        values = {"python": python, "target_dir": str(self.path), "worker": worker,
                  "endpoint_url": endpoint_url, "namespace": namespace, "param": _Params(self.params)}
        return [part.format(**values) for part in argv]

    def check_programs(self) -> None:
        """Refuse (ConfigError) a worker or reconciler command whose program cannot start here, naming its
        key, before anything starts (else the run would break halfway, its scenario seeming to blame). A
        program in a container is the image's, which the host cannot see, and so is its Python (a control
        process runs on the host)."""
        if self.image is not None and self.python is not None:
            raise ConfigError(f"{self.path / 'target.toml'}: [worker] python = {self.python!r} and image = "
                              f"{self.image!r}: a worker in a container runs the image's Python, not one of "
                              "this machine's. Drop python to run in the image, or drop the image (and "
                              "--worker-image) to run the worker on this machine under that Python.")
        if self.image is None:
            self.interpreter()
        control = self.control_process.command if self.control_process else []
        for key, argv in (("worker", self.worker), ("reconciler", self.reconciler or []),
                          ("[control] command", control)):
            if not argv:
                continue
            if self.image is not None and key != "[control] command":  # the control runs on the host
                continue
            program = self.command(argv[:1], "w1", "", "")[0]
            problem = _program_problem(program, self.path)
            if problem is not None:
                raise ConfigError(f"{self.path / 'target.toml'}: {key} = {argv!r} starts {program!r}, which {problem}. "
                                  f"The first item of {key} is its program: an executable file (a path relative to "
                                  "the target folder, or absolute) or a command on PATH, such as \"{python}\" (then "
                                  "the script: [\"{python}\", \"{target_dir}/worker.py\"]).")

    def check_modules(self, observer: bool = True) -> None:
        """Import the control's module, and the observer's unless the run goes without it, once before
        anything starts: a library they import that is not installed is then refused (ConfigError, naming
        its pip install) before a server runs. The run imports them again when it builds them; what they
        define at the top is cheap."""
        control = self.control if self.control_process is None else None  # a process: nothing to import
        for spec, what in ((control, "control"), (self.observer if observer else None, "observer")):
            if spec is not None:
                self._module(spec, what)

    def load_control(self, backend: Backend) -> Control:
        """The control class's instance (the in-process form; a `[control]` process is the runtime's to start)."""
        control: Control = self._construct(self.control, "control", backend)
        missing = [name for name in CONTROL_MEMBERS if not hasattr(control, name)]
        if missing:
            raise ConfigError(f"{self.path / 'target.toml'}: its control {self.control} has no {', '.join(missing)}. "
                              f"A control provides {', '.join(CONTROL_MEMBERS)} (chaos.Control says what each "
                              "does); subclass the backend's base control (TableQueueControl, RedisQueueControl, "
                              "RabbitMQQueueControl, BeanstalkdQueueControl), or chaos.KeepsNoCompletions for "
                              "completion(), to inherit what the queue does not need to say.")
        return control

    def load_observer(self, backend: Backend) -> Observer | None:
        if self.layout is not None:
            made: Observer = layout_observer(self.backend)(backend, dict(self.params), self.contract, self.layout)
            return made
        if self.observer is None:
            return None
        observer: Observer = self._construct(self.observer, "observer", backend)
        return observer

    def _construct(self, spec: str, what: str, backend: Backend) -> Any:
        """The class `spec` ('module:Class') names in the target's folder, built with (backend, params, contract)."""
        module, file = self._module(spec, what)
        name = spec.partition(":")[2] or what.capitalize()
        factory = getattr(module, name, None)
        if factory is None:
            raise ConfigError(f"{file} defines no {name}; target.toml's {what} names it.")
        return factory(backend, dict(self.params), self.contract)

    def _module(self, spec: str, what: str) -> tuple[ModuleType, Path]:
        """The module `spec` ('module:Class') names in the target's folder, freshly imported, and its file."""
        module_name = spec.partition(":")[0]
        file = self.path / f"{module_name}.py"
        if not file.is_file():
            raise ConfigError(f"{self.path / 'target.toml'}: {what} = {spec!r} names {file}, which "
                              "does not exist. Expected 'module:Class' with module.py in the target folder.")
        return load_module(file, f"chaos_target_{self.name}_{module_name}", f"{what} module"), file


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
    worker, python = _load_worker(raw.get("worker"), file)
    reconciler = raw.get("reconciler")
    for argv, key in ((worker, "worker"), *([(reconciler, "reconciler")] if "reconciler" in raw else [])):
        if not isinstance(argv, list) or not argv or not all(isinstance(part, str) for part in argv) \
                or not argv[0].strip():
            raise ConfigError(f"{file}: {key} = {argv!r}; expected a non-empty list of strings, a program and its "
                              "arguments, such as [\"{python}\", \"{target_dir}/worker.py\"].")
    control_process = _load_control(raw.get("control"), file)
    params = _load_params(dict(need("params", dict, "a [params] table")) if "params" in raw else {}, file)
    tied, ties = tie(dict(need("contract", dict, "a [contract] table")), params, str(file))
    contract = Contract.from_dict(tied, described(str(file), ties))
    for argv, key in ((worker, "worker"), (reconciler or [], "reconciler"),
                      (control_process.command if control_process else [], "[control] command")):
        _check_placeholders(argv, key, params, file)
    choices = _load_choices(raw.get("choices", {}), params, file)
    server = _load_server(dict(need("server", dict, "a [server] table")) if "server" in raw else {}, backend, params,
                          file)
    grace = raw.get("shutdown_grace_s", DEFAULT_GRACE_S)
    if not is_seconds(grace):
        raise ConfigError(f"{file}: shutdown_grace_s = {grace!r}; expected {SECONDS} (how long workers get to "
                          "shut down after SIGTERM at the end of a run).")
    name = check_name(raw.get("name", folder.name), f"target name in {file}",
                      "Set name = \"...\" in target.toml (or rename the folder, whose name is the default).")
    observer = raw.get("observer")
    layout = None
    if isinstance(observer, dict):
        layout, observer = _load_layout(observer, backend, file), None
    elif observer is not None and (not isinstance(observer, str) or not observer.partition(":")[0]):
        raise ConfigError(f"{file}: observer = {observer!r}; expected 'module:Class' naming the target's observer "
                          "(module.py in the target folder), an [observer] table declaring the queue's layout "
                          "(on redis: docs/writing-a-target.md, section 10), or no observer key.")
    image = raw.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise ConfigError(f"{file}: image = {image!r}; expected the name of a Docker image to run the workers in "
                          "(\"queue-chaos/python\" runs them on the host's Python), or no image key.")
    spec = raw.get("control", "control:Control") if control_process is None else "[control] command"
    return Target(name, folder.resolve(), str(raw.get("description", "")), backend, str(spec), worker, contract,
                  params, choices, reconciler, server, float(grace), observer, image, ties, python, control_process,
                  layout)


_CONTROL_KEYS = {"command": "a non-empty list of strings, the program and its arguments",
                 "shows_deliveries": "true or false", "keeps_completions": "true or false", "timeout_s": SECONDS}


def _load_control(raw: Any, file: Path) -> ControlCommand | None:
    """`control = "module:Class"` (a class in the suite's process: None here) or a `[control]` table (a process)."""
    if raw is None or isinstance(raw, str):
        return None
    example = '[control] with command = ["node", "{target_dir}/control.js"]'
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: control = {raw!r}; expected \"module:Class\" (a class in the suite's process) or "
                          f"{example} (a process speaking docs/control-protocol.md).")
    for key in raw:
        if key not in _CONTROL_KEYS:
            raise ConfigError(f"{file}: [control] sets {key!r}; its keys are {', '.join(_CONTROL_KEYS)}.")
    command = raw.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(part, str) for part in command) \
            or not command[0].strip():
        raise ConfigError(f"{file}: [control] command = {command!r}; expected {_CONTROL_KEYS['command']}, such as "
                          '["node", "{target_dir}/control.js"].')
    for key in ("shows_deliveries", "keeps_completions"):
        if not isinstance(raw.get(key, True), bool):
            raise ConfigError(f"{file}: [control] {key} = {raw[key]!r}; expected true or false.")
    timeout = raw.get("timeout_s", DEFAULT_CONTROL_TIMEOUT_S)
    if not is_seconds(timeout):
        raise ConfigError(f"{file}: [control] timeout_s = {timeout!r}; expected {SECONDS} (how long the control "
                          "process may take to answer one request).")
    return ControlCommand(list(command), raw.get("shows_deliveries", True), raw.get("keeps_completions", True),
                          float(timeout))


def _load_worker(raw: Any, file: Path) -> tuple[Any, str | None]:
    """`worker = [command]`, or a [worker] table: its `command`, and the `python` that {python} names in the
    target's commands (a version such as "3.12", or an interpreter's path), for a library that needs
    another Python than the suite's. The command is checked with the reconciler's."""
    if isinstance(raw, dict):
        unknown = sorted(set(raw) - {"command", "python"})
        if unknown or "command" not in raw:
            raise ConfigError(f"{file}: [worker] takes command = [\"{{python}}\", \"{{target_dir}}/worker.py\"] "
                              f"(required) and python = \"3.12\" (optional); found keys {sorted(raw)}.")
        python = raw.get("python")
        if python is not None and (not isinstance(python, str) or not python.strip()):
            raise ConfigError(f"{file}: [worker] python = {python!r}; expected a Python version such as \"3.12\", or "
                              "the path of an interpreter (a virtualenv's bin/python), or no python key.")
        return raw["command"], python
    if not isinstance(raw, list):
        raise ConfigError(f"{file}: expected worker = [\"{{python}}\", \"{{target_dir}}/worker.py\"] (the worker "
                          f"command), or a [worker] table with command and python, found {raw!r}. See "
                          "targets/pg_lease/target.toml for a complete example.")
    return raw, None


@cache
def _interpreter(spec: str, base: Path, where: str) -> Interpreter:
    return find(spec, base, where)


def _load_layout(table: dict[str, Any], backend: str, file: Path) -> Any:
    """[observer] as a table: the queue's layout, which the backend kind's LAYOUT module reads as an observer."""
    module = layout_module(backend)
    if module is None:
        raise ConfigError(f"{file}: [observer] declares a layout, but the {backend} kind reads no observer from "
                          "configuration (redis does); expected observer = \"module:Class\" naming an observer class "
                          "in the target folder, or no observer key.")
    return module.parse_layout(table, str(file))


_KIND_EXAMPLES = {"integer": "an integer", "number": "a finite number", "boolean": "true or false",
                  "string": "a string"}


def _parse_kind(text: str, kind: str) -> Any:
    """`-p`'s text as a value of `kind`, or None where it is none."""
    if kind == "string":
        return text
    if kind == "boolean":
        return {"true": True, "false": False}.get(text)
    try:
        value = int(text) if kind == "integer" else float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _toml_value(text: str) -> Any:
    """`true`, `2.5` or `"x"` as TOML reads them; anything else (a bare word such as `rejected`) as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _toml(value: Any) -> str:
    """A value as target.toml writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _load_params(raw: dict[str, Any], file: Path) -> dict[str, Any]:
    """[params]: each default a string, an integer, a finite float or a boolean; its type is its kind."""
    for key, value in raw.items():
        if not isinstance(value, (str, int, float)) or (isinstance(value, float) and not math.isfinite(value)):
            raise ConfigError(f"{file}: parameter {key} = {value!r} must be a string, integer, finite number or "
                              "boolean; its type is the kind of value `-p` accepts for it.")
    return raw


def _load_choices(raw: Any, params: dict[str, Any], file: Path) -> dict[str, list[Any]]:
    """[choices]: for some parameters, the list of the only values they take, each of the default's kind,
    the default among them."""
    example = 'a [choices] table of lists, e.g. heartbeat = ["thread", "inline"]'
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: expected choices = {example}, found {raw!r}.")
    choices: dict[str, list[Any]] = {}
    for key, values in raw.items():
        if key not in params:
            raise ConfigError(f"{file}: choices names {key!r}, which is not a parameter in [params]; declare it "
                              "there with its default.")
        kind = kind_of(params[key])
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{file}: choices {key} = {values!r}; expected {example}.")
        typed = [float(v) if kind == "number" and kind_of(v) == "integer" else v for v in values]
        if any(kind_of(v) != kind for v in typed):
            raise ConfigError(f"{file}: choices {key} = {values!r}; each choice must be {_KIND_EXAMPLES[kind]}, as "
                              f"its default {key} = {_toml(params[key])} is.")
        if params[key] not in typed:
            raise ConfigError(f"{file}: the default {key} = {_toml(params[key])} is not among its choices "
                              f"{values!r}; add it, or change the default.")
        choices[key] = typed
    return choices


def _load_server(raw: dict[str, Any], backend: str, params: dict[str, Any], file: Path) -> dict[str, Any]:
    """[server]: settings of the backend's server, each checked by the provider option that declares it."""
    options = server_options(backend)
    for key, value in raw.items():
        if key not in options:
            known = ", ".join(f"{name} ({option.describe()})" for name, option in sorted(options.items())) or "none"
            raise ConfigError(f"{file}: [server] sets {key!r}, which no {backend} provider takes; its server "
                              f"settings are: {known}. A knob of the queue's own belongs in [params].")
        if key in params:
            raise ConfigError(f"{file}: {key} is both a [server] setting and a [params] parameter; -p could not tell "
                              "them apart. Keep it in [server] (the server's) or rename the parameter.")
        options[key].check(value, str(file))
    return raw


class _Params:
    """`{param:NAME}` in a command: the parameter's value as -p writes it (true/false for a boolean)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params

    def __format__(self, name: str) -> str:
        if name not in self.params:
            raise KeyError(f"param:{name}")
        value = self.params[name]
        return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _program_problem(program: str, folder: Path) -> str | None:
    """Why `program` cannot be executed as a process started in `folder` would execute it, or None."""
    if "/" not in program:
        return None if shutil.which(program) else "is not a command on PATH"
    path = folder / program
    if path.is_dir():
        return "is a directory"
    if not path.is_file():
        return "does not exist"
    if not os.access(path, os.X_OK):
        return "is a file that is not executable (chmod +x it, or name its interpreter first)"
    return None


def _check_placeholders(argv: list[str], key: str, params: dict[str, Any], file: Path) -> None:
    """Only PLACEHOLDERS are filled in (write {{ and }} for literal braces): each argument is formatted
    once here, as it will be when a process starts."""
    names = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
    for part in argv:
        try:
            part.format(python="python", target_dir="target_dir", worker="w1", endpoint_url="url", namespace="ns",
                        param=_Params(params))
        except KeyError as exc:
            raise ConfigError(f"{file}: {key} argument {part!r} uses the placeholder {{{exc.args[0]}}}, which the "
                              f"suite does not fill in; the placeholders are {names} (NAME: one of [params]).") from exc
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise ConfigError(f"{file}: {key} argument {part!r} is not a valid command template ({exc}); the "
                              f"placeholders are {names}, and {{{{ and }}}} write literal braces.") from exc
