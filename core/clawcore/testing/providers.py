"""A deterministic embedding provider for tests: feature-hashed words, no model needed.

Texts that share words get similar vectors, so tests of hybrid search,
caching and rebuilds exercise real vector code paths reproducibly. It knows
nothing of meaning: use it to test plumbing, never to measure quality.

Register it in a test with the ``register_plugin`` fixture::

    register_plugin(HashEmbeddingPlugin())   # provider name "hash"
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clawcore import hookimpl

__all__ = ["HashEmbeddingPlugin", "HashEmbeddingProvider"]

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class HashEmbeddingProvider:
    """Words (and CJK characters) hashed into ``dims`` signed buckets, L2-normalised.

    :param dims: vector size.
    :param model: reported model name; change it to simulate a model change.
    :param name: reported provider name.
    """

    def __init__(self, dims: int = 64, model: str = "hash-v1", name: str = "hash") -> None:
        if dims < 2:
            raise ValueError("dims must be at least 2")
        self.name = name
        self.model = model
        self.dims = dims
        #: Every batch this provider embedded (tests count calls and texts).
        self.calls: list[int] = []

    def _features(self, text: str) -> list[str]:
        features = [w.lower() for w in _WORD.findall(text) if not _CJK.match(w)]
        features += _CJK.findall(text)
        return features or ["<empty>"]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        vectors = []
        for text in texts:
            vector = [0.0] * self.dims
            for feature in self._features(text):
                digest = hashlib.blake2b(f"{self.model}:{feature}".encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dims
                vector[bucket] += 1.0 if digest[4] & 1 else -1.0
            norm = math.sqrt(sum(x * x for x in vector))
            if norm == 0.0:  # features cancelled out: a fixed unit vector
                vector[0], norm = 1.0, 1.0
            vectors.append([x / norm for x in vector])
        return vectors


class HashEmbeddingPlugin:
    """A plugin object offering :class:`HashEmbeddingProvider` under ``name`` (default ``"hash"``).

    :param dims: vector size of the providers it makes.
    :param model: model name they report.
    :param name: the registry name (and provider name).
    :param provider: a ready provider to hand out instead (to inspect its calls).
    """

    def __init__(
        self,
        dims: int = 64,
        model: str = "hash-v1",
        name: str = "hash",
        provider: Any | None = None,
    ) -> None:
        self.dims = dims
        self.model = model
        self.name = name
        self.provider = provider

    @hookimpl
    def register_embedding_providers(self, register: Callable[..., None]) -> None:
        def factory(settings: Mapping[str, Any], home: Path) -> Any:
            if self.provider is not None:
                return self.provider
            return HashEmbeddingProvider(dims=int(settings.get("dims", self.dims)), model=self.model, name=self.name)

        register(self.name, factory)
