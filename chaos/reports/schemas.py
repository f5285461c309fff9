"""The JSON Schemas of the reports CI reads (verdict.json, suite.json), shipped with the package
(chaos/schemas/) so a user's pipeline validates against the very version it runs; `chaos schema` prints
one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
NAMES = ("verdict", "suite")


def schema_text(name: str) -> str:
    return (SCHEMAS / f"{name}.schema.json").read_text()


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded
