"""A provider's server settings (target.toml's `[server]` table, or `-p`): each provider declares the ones
its server takes, with their default and the values allowed, so a target states them once, `chaos list`
shows them, and a wrong value is refused before any server starts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chaos.errors import ConfigError


@dataclass(frozen=True)
class ServerOption:
    """One setting of a provider's server: its default, and either the only values allowed (`choices`) or a
    test of a value (`accepts`, described by `expected`)."""

    name: str
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    accepts: Callable[[Any], bool] | None = None
    expected: str = ""

    def allows(self, value: Any) -> bool:
        if self.accepts is not None:
            return self.accepts(value)
        return any(type(value) is type(choice) and value == choice for choice in self.choices)

    def describe(self) -> str:
        """What a valid value is, as a message or `chaos list` says it."""
        return self.expected or " | ".join(_toml(choice) for choice in self.choices)

    def check(self, value: Any, where: str) -> Any:
        if not self.allows(value):
            raise ConfigError(f"{where}: server setting {self.name} = {_toml(value)} is not allowed; expected "
                              f"{self.describe()} ({self.doc}). Set it in target.toml's [server] table or with "
                              f"-p {self.name}=VALUE.")
        return value


def settle(options: tuple[ServerOption, ...], values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Every declared option's value (the default where `values` names none), each checked; a key in
    `values` that no option declares is refused."""
    declared = {option.name: option for option in options}
    unknown = sorted(set(values) - set(declared))
    if unknown:
        known = ", ".join(sorted(declared)) or "none"
        raise ConfigError(f"{where}: no server setting {', '.join(unknown)}; this server's settings are: {known}.")
    return {name: option.check(values.get(name, option.default), where) for name, option in declared.items()}


def positive_int_or(word: str) -> Callable[[Any], bool]:
    """Accepts `word` or a positive integer (not a boolean)."""
    return lambda value: value == word or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)
