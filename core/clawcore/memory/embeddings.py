"""Choosing the embedding provider: the configured chain, with its fallbacks.

``memory.embeddings.provider`` is ``auto`` (local, then openai), a provider
name, or ``none``; ``memory.embeddings.fallback`` lists what to try next.
The chain always ends in BM25-only search: memory search is never simply
disabled because a provider is missing.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawcore.security.secrets import redact
from clawcore.types import EmbeddingProvider, ProviderUnavailable

__all__ = ["AUTO_CHAIN", "ProviderChoice", "choose_provider", "provider_chain"]

#: What ``provider: auto`` tries, in order.
AUTO_CHAIN = ("local", "openai")


@dataclass(frozen=True)
class ProviderChoice:
    """The provider in use (None: BM25-only) and what happened to the others."""

    provider: EmbeddingProvider | None
    #: One line per provider that was tried and skipped.
    skipped: tuple[str, ...] = field(default=())
    #: True when a provider was asked for explicitly and could not be used.
    degraded: bool = False

    @property
    def reason(self) -> str:
        """Why search is BM25-only (empty when a provider is in use)."""
        if self.provider is not None:
            return ""
        if not self.skipped:
            return "no embedding provider configured (memory.embeddings.provider: none)"
        return "no embedding provider available: " + "; ".join(self.skipped)


def provider_chain(settings: Mapping[str, Any]) -> list[str]:
    """The names to try for ``memory.embeddings`` settings, in order, without duplicates.

    ``none`` anywhere ends the chain there.
    """
    first = str(settings.get("provider", "auto") or "auto")
    names = list(AUTO_CHAIN) if first == "auto" else [first]
    names += [str(n) for n in settings.get("fallback", []) or []]
    chain: list[str] = []
    for name in names:
        if name == "none":
            break
        if name == "auto":
            chain += [n for n in AUTO_CHAIN if n not in chain]
        elif name not in chain:
            chain.append(name)
    return chain


def choose_provider(
    settings: Mapping[str, Any],
    factories: Mapping[str, Callable[[Mapping[str, Any], Path], EmbeddingProvider]],
    home: Path,
    broken: Sequence[str] = (),
) -> ProviderChoice:
    """Walk the chain and return the first provider that can be created.

    A factory that raises :class:`ProviderUnavailable` (or anything else: a
    broken optional plugin must not break memory) is skipped with its reason,
    redacted: it reaches status output, warnings and the model's tool results.

    :param broken: plugins whose ``register_embedding_providers`` failed, with why: a provider no plugin
        offers may be theirs, and the reason says so.
    """
    explicit = str(settings.get("provider", "auto") or "auto") not in ("auto", "none")
    skipped: list[str] = []
    for name in provider_chain(settings):
        factory = factories.get(name)
        if factory is None:
            close = difflib.get_close_matches(name, [*factories, *AUTO_CHAIN], n=1)
            hint = (f"pip install clawcore-embeddings-{name}" if name in AUTO_CHAIN
                    else f"no plugin offers it; did you mean {close[0]!r}?" if close else "no plugin offers it")
            if broken:
                hint += "; " + "; ".join(broken)
            skipped.append(f"{name}: not installed ({hint})")
            continue
        section = settings.get(name)
        try:
            provider = factory(section if isinstance(section, Mapping) else {}, home)
        except ProviderUnavailable as exc:
            skipped.append(redact(f"{name}: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken optional provider falls back, it does not crash memory
            skipped.append(redact(f"{name}: failed to start ({type(exc).__name__}: {exc})"))
            continue
        dims = getattr(provider, "dims", None)
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:  # a vector table needs a width
            skipped.append(redact(f"{name}: makes vectors of {dims!r} dimensions, not a whole number above 0"))
            continue
        return ProviderChoice(provider, tuple(skipped), degraded=explicit and bool(skipped))
    return ProviderChoice(None, tuple(skipped), degraded=explicit)


def embed_checked(provider: EmbeddingProvider, texts: Sequence[str]) -> list[list[float]]:
    """``provider.embed`` with its promises checked: one vector per text, each of ``dims`` finite floats."""
    vectors = provider.embed(list(texts))
    if len(vectors) != len(texts):
        raise ValueError(f"provider {provider.name!r} returned {len(vectors)} vectors for {len(texts)} texts")
    checked = []
    for vector in vectors:
        if len(vector) != provider.dims:
            raise ValueError(
                f"provider {provider.name!r} returned a vector of {len(vector)} dims, declared {provider.dims}"
            )
        floats = list(map(float, vector))
        # One NaN would be cached and stored, and every later vector search would rank nothing.
        if not all(map(math.isfinite, floats)):
            raise ValueError(f"provider {provider.name!r} returned a vector with NaN or infinite values")
        checked.append(floats)
    return checked
