"""The ``memory.embeddings.local`` config section: its schema and its typed value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawcore.config import home_path
from clawcore.errors import ConfigError

from clawcore_embeddings_local.catalogue import CATALOGUE, DEFAULT_MODEL

__all__ = ["SCHEMA", "SECTION", "LocalSettings"]

SECTION = "memory.embeddings.local"

#: Measured (bench/embeddings_local.py --sweep): small batches of length-sorted
#: windows pad least and run fastest per CPU second; 4 and 8 are within noise.
DEFAULT_BATCH_SIZE = 8
#: Measured: one thread does 1.7x the work per CPU second of two on a busy
#: 2-core machine, and indexing is background work; raise it on idle cores.
DEFAULT_THREADS = 1

SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Offline sentence embeddings with ONNX Runtime (plugin clawcore-embeddings-local).",
    "properties": {
        "model": {
            "type": "string",
            "enum": sorted(CATALOGUE),
            "default": DEFAULT_MODEL,
            "description": "A catalogued model; ignored when modelPath is set.",
        },
        "modelPath": {
            "type": ["string", "null"],
            "pattern": "\\S",
            "x-error": "is no path: modelPath must be a non-empty path (or null)",
            "default": None,
            "description": "A folder holding model.onnx and tokenizer.json, or an .onnx file with "
            "tokenizer.json beside it. Relative paths are under $CLAWCORE_HOME.",
        },
        "sha256": {
            "type": ["string", "null"],
            "pattern": "^[0-9a-f]{64}$",
            "default": None,
            "description": "Pins the modelPath ONNX file: any other content makes the provider unavailable.",
        },
        "threads": {
            "type": "integer",
            "minimum": 0,
            "maximum": 256,
            "default": DEFAULT_THREADS,
            "description": "ONNX Runtime intra-op threads; 0 lets it use one per physical core.",
        },
        "batchSize": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1024,
            "default": DEFAULT_BATCH_SIZE,
            "description": "Token windows per forward pass.",
        },
    },
}


@dataclass(frozen=True)
class LocalSettings:
    """The section as typed values; built from the validated (or a partial) mapping."""

    model: str = DEFAULT_MODEL
    model_path: Path | None = None
    sha256: str | None = None
    threads: int = DEFAULT_THREADS
    batch_size: int = DEFAULT_BATCH_SIZE

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any], home: Path) -> LocalSettings:
        """Read the section; missing keys take their defaults.

        The config loader validates against :data:`SCHEMA`; this repeats the
        checks that matter so the Python API, which may skip the loader,
        fails the same way.

        :raises ConfigError: a key has the wrong type or an unknown model.
        """
        unknown = sorted(set(settings) - set(SCHEMA["properties"]))
        if unknown:
            raise ConfigError(f"unknown key(s) {', '.join(unknown)}", path=SECTION)
        model = settings.get("model") or DEFAULT_MODEL
        if model not in CATALOGUE:
            raise ConfigError(
                f"model {model!r} is not in the catalogue ({', '.join(sorted(CATALOGUE))}); "
                "use modelPath for any other ONNX model",
                path=SECTION,
            )
        raw_path = settings.get("modelPath")
        model_path = None
        if raw_path is not None:
            if not isinstance(raw_path, str) or not raw_path.strip():
                raise ConfigError("modelPath must be a non-empty path", path=SECTION)
            model_path = home_path(home, raw_path)
        sha256 = settings.get("sha256")
        if sha256 is not None and (
            not isinstance(sha256, str) or len(sha256) != 64 or set(sha256) - set("0123456789abcdef")
        ):
            raise ConfigError("sha256 must be 64 lowercase hex digits", path=SECTION)
        threads = _integer(settings, "threads", DEFAULT_THREADS, 0, 256)
        batch_size = _integer(settings, "batchSize", DEFAULT_BATCH_SIZE, 1, 1024)
        return cls(model, model_path, sha256, threads, batch_size)


def _integer(settings: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    """An integer setting, written as one (``8``, not ``8.0``), as ``config check`` wants it."""
    value = settings.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, not {value!r}", path=SECTION)
    return value
