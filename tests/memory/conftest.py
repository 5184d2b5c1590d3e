"""Shared fixtures for the memory tests: a small workspace and a plugin manager with the hash provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from clawcore.memory import Memory, open_memory
from clawcore.testing.providers import HashEmbeddingPlugin

MEMORY_MD = """# Preferences

The user prefers green tea over coffee.
Favourite editor: Helix.

# Decisions

We chose PostgreSQL for the billing service.
"""

DAY_ONE = """# 2024-05-01

- Alice: We talked about the database migration plan for billing.
- Bob: The migration runs on Friday night.

Lunch was pizza with the team.
"""

DAY_TWO = """# 2024-05-02

- Alice: The kayak trip to the lake is planned for June.
- Bob: I will bring the tent and the stove.
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (ws / "memory" / "2024-05-01.md").write_text(DAY_ONE, encoding="utf-8")
    (ws / "memory" / "2024-05-02.md").write_text(DAY_TWO, encoding="utf-8")
    return ws


@pytest.fixture
def hash_pm(plugin_manager: pluggy.PluginManager, register_plugin: Callable[..., Any]) -> pluggy.PluginManager:
    register_plugin(HashEmbeddingPlugin(), name="hash-embeddings")
    return plugin_manager


@pytest.fixture
def open_mem(tmp_path: Path, hash_pm: pluggy.PluginManager) -> Iterator[Callable[..., Memory]]:
    """``open_mem(workspace, memory_section=None, provider="hash", index=None)`` -> an open Memory, closed afterwards."""
    opened: list[Memory] = []

    def make(
        workspace: Path,
        section: dict[str, Any] | None = None,
        *,
        provider: str = "hash",
        index: Path | None = None,
        pm: pluggy.PluginManager | None = None,
    ) -> Memory:
        memory_section = dict(section or {})
        memory_section.setdefault("embeddings", {"provider": provider})
        memory = open_memory(
            workspace,
            {"memory": memory_section},
            plugin_manager=pm or hash_pm,
            index_path=index or tmp_path / "index" / "memory.sqlite",
        )
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()
