"""The ``models.openai`` defaults, kept out of the chat model's module so that reading them imports no SDK."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULTS: Mapping[str, Any] = {
    "model": "gpt-4o-mini",
    "baseUrl": None,
    "apiKey": None,
    "apiKeyEnv": "OPENAI_API_KEY",
    "allowInsecureHttp": False,
    "contextWindow": 128000,
    "maxOutputTokens": None,
    "temperature": None,
    "timeout": "60s",
    "retries": 2,
}
