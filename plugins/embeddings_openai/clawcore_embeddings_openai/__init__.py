"""clawcore-embeddings-openai: OpenAI and OpenAI-compatible embeddings for clawcore memory.

Registers the embedding provider ``openai`` (``memory.embeddings.provider:
openai``, or second in the ``auto`` chain after ``local``); its settings are
the ``memory.embeddings.openai`` config section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl

from clawcore_embeddings_openai.provider import OpenAIEmbeddingProvider, create_provider
from clawcore_embeddings_openai.settings import SCHEMA, OpenAIEmbeddingSettings

__all__ = ["OpenAIEmbeddingProvider", "OpenAIEmbeddingSettings", "config_schema", "create_provider",
           "register_embedding_providers"]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory.embeddings.openai": SCHEMA}


@hookimpl
def register_embedding_providers(register: Callable[..., None]) -> None:
    register("openai", create_provider)
