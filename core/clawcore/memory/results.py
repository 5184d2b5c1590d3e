"""The values memory search and sync return: frozen, JSON-friendly, typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["SearchMode", "SearchResponse", "SearchResult", "SyncReport"]

#: ``"hybrid"`` when the query was embedded, ``"fts-only"`` when it was answered by BM25 alone.
SearchMode = Literal["hybrid", "fts-only"]


@dataclass(frozen=True)
class SearchResult:
    """One hit: a chunk of a memory file, with the line range it spans.

    ``snippet`` is the part of the chunk (at most 700 characters, whole
    lines where possible) that matches the query best; ``memory_get`` reads
    the exact lines behind ``citation``.
    """

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str

    @property
    def citation(self) -> str:
        """``path#Lx-Ly``: where the chunk sits in its file."""
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
        }


@dataclass(frozen=True)
class SearchResponse:
    """What a search answers: the results and how they were found.

    ``mode`` is ``"fts-only"`` whenever the query was not embedded (no
    provider configured, none available, or the provider failed for this
    query); ``reason`` then says why and ``warnings`` carries it too.
    """

    query: str
    results: tuple[SearchResult, ...]
    mode: SearchMode
    provider: str | None = None
    reason: str = ""
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "provider": self.provider,
            "reason": self.reason,
            "warnings": list(self.warnings),
            "results": [r.to_dict() for r in self.results],
        }


@dataclass(frozen=True)
class SyncReport:
    """What one sync did.

    ``files`` and ``chunks`` count the whole index afterwards; ``indexed``
    and ``removed`` the files changed by this sync; ``embedded`` the chunks
    sent to the provider and ``cached`` those whose vectors came from the
    embedding cache.
    """

    files: int
    chunks: int
    indexed: int = 0
    removed: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    provider: str | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed or self.rebuilt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "chunks": self.chunks,
            "indexed": self.indexed,
            "removed": self.removed,
            "embedded": self.embedded,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "rebuilt": self.rebuilt,
            "provider": self.provider,
            "warnings": list(self.warnings),
        }
