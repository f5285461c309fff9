"""Contract values tied to the queue's own settings: `lease_s = "{param:rescue_after_s}"` in [contract] says
the contract's value is the [params] value it names, so the judge and the queue cannot drift apart.

A tied key and its parameter are one setting: `-p rescue_after_s=6` sets both, and so does `-c lease_s=6`
(it retunes the queue); a `-p` and a `-c` that give it different values contradict each other
(`chaos.target.Target.with_overrides` refuses them, naming both). Values derived from a tied one follow it
(lease_tolerance_s' default is a quarter of whatever lease_s resolves to).
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from chaos.contract import Contract
from chaos.errors import ConfigError

PREFIX = "{param"
REFERENCE = re.compile(r"\{param:([A-Za-z0-9_][A-Za-z0-9_.-]*)\}")
# What a parameter tied to a contract key must hold, by the key's type: a number of seconds takes an integer
# or a float parameter, max_attempts an integer, an enumerated key a string, a switch a boolean.
_KINDS = {"float": ("integer", "number"), "int": ("integer",), "bool": ("boolean",), "str": ("string",)}
_SAYS = {"float": "a number of seconds", "int": "an integer", "bool": "true or false", "str": "a string"}


def referenced(key: str, value: Any, where: str) -> str | None:
    """The parameter `value` names ("{param:NAME}"), None when it is no reference; a value that starts like
    one but is none is refused (a misspelt reference must not pass for a string)."""
    if not isinstance(value, str) or not value.startswith(PREFIX):
        return None
    matched = REFERENCE.fullmatch(value)
    if matched is None:
        raise ConfigError(f"{where}: contract {key} = {value!r} is no parameter reference; write "
                          f"{key} = \"{{param:NAME}}\" with NAME one of the target's [params], or give {key} a value.")
    return matched.group(1)


def tie(raw: dict[str, Any], params: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A [contract] table with its references resolved against `params`, and its ties (key -> parameter)."""
    ties = {key: name for key, value in raw.items() if (name := referenced(key, value, where)) is not None}
    return {**raw, **resolve(ties, params, where)}, ties


def resolve(ties: dict[str, str], params: dict[str, Any], where: str) -> dict[str, Any]:
    """Each tied key's value: its parameter's, which must exist and be of the key's kind."""
    types = {f.name: str(f.type).split(" ")[0] for f in fields(Contract)}
    values = {}
    for key, name in ties.items():
        if name not in params:
            known = ", ".join(sorted(params)) or "none"
            raise ConfigError(f"{where}: contract {key} = \"{{param:{name}}}\" names no parameter of the target "
                              f"(its [params]: {known}). Declare {name} in [params] (the queue's own setting), "
                              f"or give {key} a value.")
        value, kind = params[name], types.get(key)
        if kind is not None and kind_of(value) not in _KINDS[kind]:
            raise ConfigError(f"{where}: contract {key} = \"{{param:{name}}}\" names the parameter {name} = "
                              f"{value!r}, which is not {_SAYS[kind]} as {key} must be. Tie {key} to a parameter "
                              f"of that kind, or give it a value.")
        values[key] = value
    return values


def described(where: str, ties: dict[str, str]) -> str:
    """`where` for an error about a contract with ties, naming them (the value may be the parameter's)."""
    if not ties:
        return where
    return f"{where} (tied to [params]: {', '.join(f'{key} = {name}' for key, name in sorted(ties.items()))})"


def kind_of(value: Any) -> str:
    """A parameter's kind, from its TOML value's type: what `-p` must give for it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "number" if isinstance(value, float) else "string"
