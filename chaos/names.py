"""Names the user chooses (a target's, a scenario's, a worker's) become file names, key prefixes and
queue names. Each is checked once, where it is read: a name that could climb out of the run dir, nest it
where `chaos clean` never looks, or hide a control character in a log name is refused as a usage error.

A name is at most MAX_NAME_BYTES long: a run dir's name holds a target's and a scenario's, and a file
name holds 255 bytes.

The run id built from them is reduced to a safe alphabet, so no server's pattern syntax (a Redis glob,
an SQL LIKE, an AMQP name) can read meaning into it.
"""

from __future__ import annotations

import re

from chaos.errors import ConfigError

_UNSAFE_FOR_IDS = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME_BYTES = 100


def check_name(value: object, what: str, fix: str) -> str:
    """`value` as a name, or a ConfigError saying what is wrong with it; `what` names it ("target name
    'x' in t/target.toml"), `fix` says where to change it."""
    problem = _problem(value)
    if problem is None:
        assert isinstance(value, str)
        return value
    shown = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:50]}...'"
    raise ConfigError(f"The {what} {shown} {problem}. A name becomes part of file names and of the run's keys "
                      f"on the server: use letters, digits and '_', '-', '.' (no '/', '\\', '..', NUL or control "
                      f"characters; at most {MAX_NAME_BYTES} bytes). {fix}")


def _problem(value: object) -> str | None:
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    if ".." in value:
        return "contains '..'"
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        return "contains a NUL or control character"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # a byte of a file name or an argument that is no UTF-8
        return "is not UTF-8 text"
    if size > MAX_NAME_BYTES:
        return f"is {size} bytes long"
    return None


def id_part(name: str) -> str:
    """`name` reduced to the run id's alphabet: every other character becomes '_'."""
    return _UNSAFE_FOR_IDS.sub("_", name)
