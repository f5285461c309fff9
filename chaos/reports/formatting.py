"""How values are written into the reports, the same in each of them: escaped for HTML, tokens cut to a
readable head, floats JSON can hold, a process's exit in words."""

from __future__ import annotations

import html
import math
from typing import Any


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def short(value: object) -> str:
    """A token is 32 hex digits; its head tells executions apart."""
    text = str(value)
    return text[:8] + "…" if len(text) > 12 else text


def as_sentence(clause: str) -> str:
    """A clause (a proof's conclusion) as a sentence of its own: capitalised, with its full stop."""
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def finite(value: Any) -> Any:
    """The value with every NaN or infinity (a worker's odd field in a witness) replaced by null, so the
    JSON written is always valid."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def how_it_exited(exit: dict[str, Any]) -> str:
    """A verdict's exit: by a signal, or with its code."""
    return f"signal {exit['signal']}" if exit.get("signal") else f"exit code {exit.get('returncode')}"


def contract_words(contract: dict[str, Any]) -> str:
    """The contract's set keys, `key = value`: a key the target left unset (None) says nothing."""
    return ", ".join(f"{key} = {value}" for key, value in contract.items() if value is not None) or "nothing set"
