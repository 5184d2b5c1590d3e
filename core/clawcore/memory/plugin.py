"""Builtin plugin ``memory``: the memory config section, retriever and tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory": {"type": "object", "additionalProperties": False, "properties": {}}}
