"""Builtin plugin ``policy``: tool policy, path and network policy, secret redaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"tools": {"type": "object", "additionalProperties": False, "properties": {}}}
