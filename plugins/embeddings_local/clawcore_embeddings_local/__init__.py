"""clawcore-embeddings-local: offline sentence embeddings for clawcore memory with ONNX Runtime.

Registers the embedding provider ``local`` and declares the
``memory.embeddings.local`` config section. Importing this module loads no
model and touches no network: the model is located, verified and loaded only
when the memory index asks the registry's factory for a provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl

from clawcore_embeddings_local.catalogue import CATALOGUE, DEFAULT_MODEL, ModelSpec
from clawcore_embeddings_local.model_store import ModelFiles, fetch, locate
from clawcore_embeddings_local.provider import LocalEmbeddingProvider
from clawcore_embeddings_local.settings import SCHEMA, SECTION, LocalSettings

__all__ = [
    "CATALOGUE",
    "DEFAULT_MODEL",
    "LocalEmbeddingProvider",
    "LocalSettings",
    "ModelFiles",
    "ModelSpec",
    "config_schema",
    "fetch",
    "locate",
    "register_commands",
    "register_embedding_providers",
]


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {SECTION: SCHEMA}


@hookimpl
def register_embedding_providers(register: Callable[..., None]) -> None:
    register("local", LocalEmbeddingProvider.from_settings)


@hookimpl
def register_commands(cli: Any) -> None:
    from clawcore_embeddings_local.commands import command

    cli.add_command(command)
