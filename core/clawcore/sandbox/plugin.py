"""Builtin plugin ``sandbox-local``: the sandbox config section and the local subprocess backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {
        "sandbox": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"backend": {"type": "string", "default": "local"}},
        }
    }


@hookimpl
def register_sandbox_backends(register: Callable[..., None]) -> None:
    return None
