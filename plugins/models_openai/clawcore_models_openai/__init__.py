"""clawcore-models-openai: OpenAI-compatible chat models for the clawcore agent loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["config_schema"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"models.openai": {"type": "object", "additionalProperties": False, "properties": {}}}
