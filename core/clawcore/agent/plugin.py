"""Builtin plugin ``tools``: the agent's builtin tools and the ``agent`` config section."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"agent": {"type": "object", "additionalProperties": False, "properties": {}}}


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    return None
