"""clawcore-embeddings-local: Offline sentence embeddings for clawcore memory with ONNX Runtime."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["config_schema"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory.embeddings.local": {"type": "object", "additionalProperties": False, "properties": {}}}
