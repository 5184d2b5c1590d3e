"""Memory: Markdown files first, a derived SQLite index for search.

``open_memory(workspace)`` gives a :class:`Memory` over ``MEMORY.md`` and
``memory/**/*.md``; ``sync`` updates its index, ``search`` finds chunks by
keyword and meaning, ``get`` reads exact lines.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pluggy

from clawcore.config import Config, clawcore_home, load_config
from clawcore.memory.engine import Memory, Progress
from clawcore.memory.results import SearchMode, SearchResponse, SearchResult, SyncReport
from clawcore.memory.settings import MemorySettings

__all__ = [
    "Memory",
    "MemorySettings",
    "Progress",
    "SearchMode",
    "SearchResponse",
    "SearchResult",
    "SyncReport",
    "default_index",
    "open_memory",
]


def open_memory(
    workspace: Path | str,
    config: Config | Mapping[str, Any] | None = None,
    *,
    plugin_manager: pluggy.PluginManager | None = None,
    index_path: Path | str | None = None,
    on_failure: Callable[[str, str, BaseException, Any], None] | None = None,
) -> Memory:
    """Open the memory of ``workspace`` and its index.

    :param workspace: the folder holding ``MEMORY.md`` and ``memory/``.
    :param config: the effective :class:`~clawcore.config.Config`, a plain
        config mapping (validated here; ``{"memory": {...}}``), or None for
        the defaults.
    :param plugin_manager: where embedding providers come from; default a
        manager with the builtins and every installed plugin.
    :param index_path: the SQLite file; default ``<home>/index/memory.sqlite`` for the home's own
        workspace, and a file of its own under ``<home>/index/`` for any other (see :func:`default_index`).
    :param on_failure: told of a plugin whose ``register_embedding_providers`` raised (the runtime audits
        it); default a one-line warning. That plugin's providers are not offered.
    :raises ConfigError: the memory section is invalid.
    """
    from clawcore.hooks import Hooks
    from clawcore.plugins import PluginSettings, get_plugin_manager

    if isinstance(config, Config):
        effective = config
        pm = plugin_manager
        if pm is None:
            section = config.raw.get("plugins") if isinstance(config.raw.get("plugins"), Mapping) else None
            pm = get_plugin_manager(PluginSettings.from_sources(section))
    else:
        raw = dict(config or {})
        pm = plugin_manager
        if pm is None:
            section = raw.get("plugins") if isinstance(raw.get("plugins"), Mapping) else None
            pm = get_plugin_manager(PluginSettings.from_sources(section))
        effective = load_config(clawcore_home(), data=raw, pm=pm)
    settings = MemorySettings.from_section(effective.section("memory"))
    broken: list[str] = []

    def failed(hook: str, plugin: str, exc: BaseException, context: Any) -> None:
        broken.append(f"plugin {plugin!r} failed to register its providers ({type(exc).__name__}: {exc})")
        (on_failure or _warn_failure)(hook, plugin, exc, context)

    providers = Hooks(pm, on_failure=failed).embedding_providers()
    path = Path(index_path) if index_path is not None else default_index(workspace, effective)
    return Memory(Path(workspace), settings, home=effective.home, index_path=path, providers=providers,
                  broken=broken)


def _warn_failure(hook: str, plugin: str, exc: BaseException, context: Any) -> None:
    warnings.warn(f"plugin {plugin!r} failed in {hook} ({type(exc).__name__}: {exc}); its embedding providers "
                  "are not available", RuntimeWarning, stacklevel=2)


def default_index(workspace: Path | str, config: Config) -> Path:
    """Where the index of ``workspace`` lives by default: ``<home>/index/memory.sqlite`` for the home's
    workspace; ``memory-<digest of its path>.sqlite`` beside it for another, so that opening some other
    folder's memory never rebuilds the home's index over it."""
    folder = config.home / "index"
    mine = Path(workspace).expanduser().resolve()
    if mine == config.workspace.expanduser().resolve():
        return folder / "memory.sqlite"
    return folder / f"memory-{hashlib.sha256(str(mine).encode('utf-8', 'surrogateescape')).hexdigest()[:16]}.sqlite"
