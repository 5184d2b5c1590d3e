"""clawcore-sandbox-docker: Run clawcore agent commands in a locked-down Docker or Podman container."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["config_schema"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"sandbox.docker": {"type": "object", "additionalProperties": False, "properties": {}}}
