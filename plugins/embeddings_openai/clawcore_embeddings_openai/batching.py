"""Splitting texts into requests by count and by estimated tokens, and truncating long inputs."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["batches", "estimate_tokens", "truncate"]


def estimate_tokens(text: str) -> int:
    """A conservative token estimate: one token per three UTF-8 bytes.

    Real tokenisers give about four bytes a token for English and about
    three for CJK, so this overestimates rather than overflows.
    """
    return math.ceil(len(text.encode("utf-8")) / 3)


def truncate(text: str, max_tokens: int) -> str:
    """``text`` cut (at a character boundary) to at most ``max_tokens`` estimated tokens."""
    limit = max_tokens * 3
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def batches(texts: Sequence[str], *, max_items: int, max_tokens: int) -> list[range]:
    """Consecutive index ranges with at most ``max_items`` texts and ``max_tokens`` estimated tokens each.

    A single text over the token budget gets a batch of its own.
    """
    out: list[range] = []
    start = 0
    tokens = 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text)
        if index > start and (index - start >= max_items or tokens + cost > max_tokens):
            out.append(range(start, index))
            start, tokens = index, 0
        tokens += cost
    if start < len(texts):
        out.append(range(start, len(texts)))
    return out
