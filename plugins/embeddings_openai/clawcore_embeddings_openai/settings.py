"""The ``memory.embeddings.openai`` config section: schema, defaults and typed reading."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clawcore import ProviderUnavailable
from clawcore.config import parse_duration
from clawcore.http_api import CLEARTEXT_RULE, endpoint_problem, endpoint_properties

__all__ = ["KNOWN_DIMS", "SCHEMA", "OpenAIEmbeddingSettings"]

#: Native dimensions of OpenAI's embedding models; other models are probed.
KNOWN_DIMS: Mapping[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "OpenAI (or OpenAI-compatible) embeddings for memory search.",
    "allOf": [CLEARTEXT_RULE],
    "properties": {
        "model": {"type": "string", "minLength": 1, "default": "text-embedding-3-small"},
        "dimensions": {"type": ["integer", "null"], "minimum": 1, "maximum": 8192, "default": None,
                       "description": "Shorter vectors (text-embedding-3-*); null keeps the model's own."},
        "apiKey": {"type": ["string", "null"], "default": None,
                   "description": "Prefer apiKeyEnv: a key in the file is a key on disk."},
        **endpoint_properties("memory.embeddings.openai", "30s"),
        "batchSize": {"type": "integer", "minimum": 1, "maximum": 2048, "default": 128,
                      "description": "Texts per request at most."},
        "batchTokens": {"type": "integer", "minimum": 1, "default": 100000,
                        "description": "Estimated tokens per request at most."},
        "maxInputTokens": {"type": "integer", "minimum": 1, "default": 8191,
                           "description": "Longer texts are truncated to this many (estimated) tokens."},
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 16, "default": 4},
        "retries": {"type": "integer", "minimum": 0, "maximum": 10, "default": 4},
        "backoff": {"type": ["string", "number"], "format": "duration", "default": "500ms",
                    "description": "First retry delay; doubles each retry."},
        "maxBackoff": {"type": ["string", "number"], "format": "duration", "default": "20s",
                       "description": "Longest wait between retries, Retry-After included."},
        "probe": {"type": "boolean", "default": True,
                  "description": "Embed one short text when the provider starts, so a bad key, an unknown "
                                 "model or an unreachable server falls back at once."},
    },
}


@dataclass(frozen=True)
class OpenAIEmbeddingSettings:
    """The section, typed; ``api_key`` is resolved from ``apiKey`` or ``apiKeyEnv``."""

    model: str
    dimensions: int | None
    base_url: str | None
    api_key: str | None
    api_key_env: str
    batch_size: int
    batch_tokens: int
    max_input_tokens: int
    concurrency: int
    retries: int
    backoff_s: float
    max_backoff_s: float
    timeout_s: float
    probe: bool

    def __repr__(self) -> str:  # the key never reaches a log line
        return f"OpenAIEmbeddingSettings(model={self.model!r}, base_url={self.base_url!r}, key=***)"

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any], environ: Mapping[str, str] | None = None
                     ) -> OpenAIEmbeddingSettings:
        """Read a section (missing keys take the defaults).

        :raises ProviderUnavailable: no key and no ``baseUrl``, or a bad value.
        """
        defaults = {key: spec.get("default") for key, spec in SCHEMA["properties"].items()}
        merged = {**defaults, **{k: v for k, v in section.items() if v is not None}}
        unknown = sorted(set(section) - set(defaults))
        if unknown:
            raise ProviderUnavailable(f"memory.embeddings.openai: unknown key(s) {', '.join(unknown)}")
        problem = endpoint_problem("memory.embeddings.openai", merged)
        if problem:
            raise ProviderUnavailable(problem)
        environ = os.environ if environ is None else environ
        key = merged.get("apiKey") or environ.get(str(merged["apiKeyEnv"])) or None
        if key is None and not merged.get("baseUrl"):
            raise ProviderUnavailable(
                f"no API key: set {merged['apiKeyEnv']} (or memory.embeddings.openai.apiKeyEnv / apiKey), "
                "or memory.embeddings.openai.baseUrl for a local OpenAI-compatible server"
            )
        try:
            settings = cls(
                model=str(merged["model"]),
                dimensions=int(merged["dimensions"]) if merged.get("dimensions") else None,
                base_url=str(merged["baseUrl"]) if merged.get("baseUrl") else None,
                api_key=str(key) if key else None,
                api_key_env=str(merged["apiKeyEnv"]),
                batch_size=int(merged["batchSize"]),
                batch_tokens=int(merged["batchTokens"]),
                max_input_tokens=int(merged["maxInputTokens"]),
                concurrency=int(merged["concurrency"]),
                retries=int(merged["retries"]),
                backoff_s=parse_duration(merged["backoff"]),
                max_backoff_s=parse_duration(merged["maxBackoff"]),
                timeout_s=parse_duration(merged["timeout"]),
                probe=bool(merged["probe"]),
            )
        except (TypeError, ValueError) as exc:
            raise ProviderUnavailable(f"memory.embeddings.openai: {exc}") from None
        if settings.timeout_s <= 0:
            raise ProviderUnavailable(f"memory.embeddings.openai.timeout must be above 0, got {merged['timeout']!r}")
        return settings
