"""clawcore-embeddings-openai: OpenAI and OpenAI-compatible embeddings for clawcore memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["config_schema"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory.embeddings.openai": {"type": "object", "additionalProperties": False, "properties": {}}}
