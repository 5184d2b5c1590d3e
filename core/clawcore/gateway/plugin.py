"""Builtin plugin ``gateway``: the gateway and auth config sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {
        "gateway": {"type": "object", "additionalProperties": False, "properties": {}},
        "auth": {"type": "object", "additionalProperties": False, "properties": {}},
    }
