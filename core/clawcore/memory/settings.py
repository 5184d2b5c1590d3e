"""The ``memory`` config section: its JSON Schema (with defaults) and its typed reading.

Defaults were chosen by measurement on the LoCoMo dev set; see
``docs/memory.md`` for the tables and the command that produced them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clawcore.config import fill_defaults, parse_duration, validate
from clawcore.errors import ConfigError
from clawcore.memory.chunking import ChunkingSettings

__all__ = ["MEMORY_SCHEMA", "MemorySettings", "SearchSettings"]

_NUMBER = {"type": "number"}

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Markdown memory and its search index.",
    "properties": {
        "extraPaths": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "More Markdown files or folders to index, relative to the workspace or absolute.",
        },
        "chunking": {
            "type": "object",
            "additionalProperties": False,
            "x-ascending": {"keys": ["overlap", "tokens"], "strict": True},
            "properties": {
                "tokens": {"type": "integer", "minimum": 16, "maximum": 8192, "default": 600},
                "overlap": {"type": "integer", "minimum": 0, "maximum": 8191, "default": 120},
            },
        },
        "embeddings": {
            "type": "object",
            "additionalProperties": False,
            "x-plugin-sections": True,
            "description": "Embedding provider chain; provider plugins add their own sub-sections.",
            "properties": {
                "provider": {
                    "type": "string",
                    "default": "auto",
                    "description": "auto (local, then openai, then BM25-only), a provider name, or none.",
                },
                "fallback": {"type": "array", "items": {"type": "string"}, "default": []},
                "batchSize": {"type": "integer", "minimum": 1, "maximum": 4096, "default": 64},
            },
        },
        "search": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "maxResults": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5},
                "minScore": {"type": "number", "minimum": 0, "default": 0.0},
                "fusion": {"enum": ["weighted", "rrf"], "default": "weighted"},
                "weights": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "text": {"type": "number", "minimum": 0, "maximum": 100, "default": 0.6},
                        "vector": {"type": "number", "minimum": 0, "maximum": 100, "default": 0.4},
                    },
                    "allOf": [{
                        "not": {"required": ["text", "vector"],
                                "properties": {"text": {"const": 0}, "vector": {"const": 0}}},
                        "x-error": "gives both searches a weight of 0; at least one must count",
                    }],
                },
                "rrfK": {"type": "integer", "minimum": 1, "default": 60},
                "candidates": {"type": "integer", "minimum": 5, "maximum": 2000, "default": 50},
                "sourceWeights": {
                    "type": "object",
                    "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100},
                    "default": {"MEMORY.md": 1.5, "memory.md": 1.5},
                    "description": "Score multiplier per path glob (first match wins; * crosses /).",
                },
                "perFile": {"type": "integer", "minimum": 1, "maximum": 100, "default": 2},
                "mmr": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "enabled": {"type": "boolean", "default": False},
                        "lambda": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.7},
                    },
                },
                "temporalDecay": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "enabled": {"type": "boolean", "default": False},
                        "halfLifeDays": {"type": "number", "exclusiveMinimum": 0, "default": 30},
                    },
                },
            },
        },
        "sync": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "onSearch": {"type": "boolean", "default": True},
                "watchDebounce": {"type": ["string", "number"], "format": "duration", "default": "1s"},
                "watchInterval": {"type": ["string", "number"], "format": "positive-duration", "default": "1s"},
            },
        },
    },
}


@dataclass(frozen=True)
class SearchSettings:
    max_results: int = 5
    min_score: float = 0.0
    fusion: str = "weighted"
    text_weight: float = 0.6
    vector_weight: float = 0.4
    rrf_k: int = 60
    candidates: int = 50
    source_weights: tuple[tuple[str, float], ...] = (("MEMORY.md", 1.5), ("memory.md", 1.5))
    per_file: int = 2
    mmr: bool = False
    mmr_lambda: float = 0.7
    decay: bool = False
    half_life_days: float = 30.0


@dataclass(frozen=True)
class MemorySettings:
    """The effective ``memory`` section, typed."""

    extra_paths: tuple[str, ...] = ()
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    #: The raw ``memory.embeddings`` object (provider sub-sections included).
    embeddings: Mapping[str, Any] = field(default_factory=lambda: {"provider": "auto", "fallback": []})
    batch_size: int = 64
    search: SearchSettings = field(default_factory=SearchSettings)
    sync_on_search: bool = True
    watch_debounce_s: float = 1.0
    watch_interval_s: float = 1.0

    @classmethod
    def from_section(cls, section: Mapping[str, Any] | None, *, validated: bool = False) -> MemorySettings:
        """Read a ``memory`` section; missing keys take the schema's defaults.

        :param validated: True when the section already passed the full
            config schema (plugin sub-sections included); otherwise it is
            checked against this section's own schema, provider sub-sections aside.
        :raises ConfigError: one line per problem, with its ``memory.`` key path.
        """
        data = copy.deepcopy(dict(section or {}))
        if not validated:
            own = copy.deepcopy(MEMORY_SCHEMA)
            own["properties"]["embeddings"]["additionalProperties"] = {"type": "object"}
            problems = validate({"memory": data}, {"type": "object", "properties": {"memory": own}})
            if problems:
                raise ConfigError(problems)
        fill_defaults(data, MEMORY_SCHEMA)
        chunking = data["chunking"]
        try:
            chunk_settings = ChunkingSettings(int(chunking["tokens"]), int(chunking["overlap"]))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        s = data["search"]
        search = SearchSettings(
            max_results=int(s["maxResults"]),
            min_score=float(s["minScore"]),
            fusion=str(s["fusion"]),
            text_weight=float(s["weights"]["text"]),
            vector_weight=float(s["weights"]["vector"]),
            rrf_k=int(s["rrfK"]),
            candidates=int(s["candidates"]),
            source_weights=tuple((str(k), float(v)) for k, v in s["sourceWeights"].items()),
            per_file=int(s["perFile"]),
            mmr=bool(s["mmr"]["enabled"]),
            mmr_lambda=float(s["mmr"]["lambda"]),
            decay=bool(s["temporalDecay"]["enabled"]),
            half_life_days=float(s["temporalDecay"]["halfLifeDays"]),
        )
        embeddings = data["embeddings"]
        return cls(
            extra_paths=tuple(data["extraPaths"]),
            chunking=chunk_settings,
            embeddings=embeddings,
            batch_size=int(embeddings.get("batchSize", 64)),
            search=search,
            sync_on_search=bool(data["sync"]["onSearch"]),
            watch_debounce_s=parse_duration(data["sync"]["watchDebounce"]),
            watch_interval_s=parse_duration(data["sync"]["watchInterval"]),
        )
