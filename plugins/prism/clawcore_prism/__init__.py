"""clawcore-prism: PRISM: the clawcore runtime monitor with accumulating risk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["config_schema"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"prism": {"type": "object", "additionalProperties": False, "properties": {}}}
