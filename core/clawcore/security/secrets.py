"""Secret detection and redaction."""

from __future__ import annotations

from typing import Any


def redact_data(data: Any) -> Any:
    """Return ``data`` with every secret in its strings redacted."""
    return data


def mask_config(data: Any) -> Any:
    """Return a config mapping with secret-bearing keys masked (for display)."""
    return data
