"""clawcore-embeddings-openai: OpenAI and OpenAI-compatible embeddings for clawcore memory.

Registers the embedding provider ``openai`` (``memory.embeddings.provider:
openai``, or second in the ``auto`` chain after ``local``); its settings are
the ``memory.embeddings.openai`` config section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawcore import hookimpl

from clawcore_embeddings_openai.settings import SCHEMA, OpenAIEmbeddingSettings

if TYPE_CHECKING:
    from clawcore_embeddings_openai.provider import OpenAIEmbeddingProvider

__all__ = ["OpenAIEmbeddingProvider", "OpenAIEmbeddingSettings", "config_schema", "create_provider",
           "register_embedding_providers"]


def __getattr__(name: str) -> Any:
    # The OpenAI SDK takes half a second to import: only a provider that is built needs it.
    if name == "OpenAIEmbeddingProvider":
        from clawcore_embeddings_openai.provider import OpenAIEmbeddingProvider

        return OpenAIEmbeddingProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def create_provider(settings: Mapping[str, Any], home: Path) -> OpenAIEmbeddingProvider:
    """The registry's factory (see :func:`clawcore_embeddings_openai.provider.create_provider`)."""
    from clawcore_embeddings_openai.provider import create_provider as create

    return create(settings, home)


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory.embeddings.openai": SCHEMA}


@hookimpl
def register_embedding_providers(register: Callable[..., None]) -> None:
    register("openai", create_provider)
