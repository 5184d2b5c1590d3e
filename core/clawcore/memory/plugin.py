"""Builtin plugin ``memory``: the memory config section, the ``hybrid`` retriever and the memory tools."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl
from clawcore.memory.settings import MEMORY_SCHEMA
from clawcore.memory.tools import memory_tools

__all__ = ["HybridRetriever", "config_schema", "register_retrievers", "register_tools"]


class HybridRetriever:
    """The builtin retriever: the index's BM25 + vector search (:meth:`Memory.search`)."""

    name = "hybrid"

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    def search(self, query: str, max_results: int = 5, min_score: float | None = None) -> Any:
        return self.memory.search(query, max_results=max_results, min_score=min_score)


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"memory": MEMORY_SCHEMA}


@hookimpl
def register_retrievers(register: Callable[..., None]) -> None:
    register("hybrid", HybridRetriever)


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    for tool in memory_tools():
        register(tool)
