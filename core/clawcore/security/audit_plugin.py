"""Builtin plugin ``audit``: the hash-chained JSONL audit sink."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"audit": {"type": "object", "additionalProperties": False, "properties": {}}}
