"""Fixtures for testing clawcore plugins (loaded by pytest through ``pytest11``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from clawcore.plugins import get_plugin_manager
from clawcore.testing.recorder import HookRecorder


@pytest.fixture
def clawcore_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``$CLAWCORE_HOME`` with an empty workspace; the variable points at it."""
    home = tmp_path / "clawcore-home"
    (home / "workspace" / "memory").mkdir(parents=True)
    monkeypatch.setenv("CLAWCORE_HOME", str(home))
    return home


@pytest.fixture
def plugin_manager() -> pluggy.PluginManager:
    """A fresh plugin manager with the builtins and no installed plugins."""
    return get_plugin_manager(load_entrypoints=False)


@pytest.fixture
def register_plugin(plugin_manager: pluggy.PluginManager) -> Iterator[Callable[..., Any]]:
    """``register_plugin(obj, name=None)`` adds a plugin to ``plugin_manager`` for this test, checked as
    discovery checks an installed one: a misspelled hook fails the test instead of never being called."""
    from clawcore.plugins import _check_hooks

    added: list[Any] = []

    def register(plugin: Any, name: str | None = None) -> Any:
        plugin_manager.register(plugin, name=name)
        try:
            _check_hooks(plugin_manager, plugin)
        except pluggy.PluginValidationError:
            plugin_manager.unregister(plugin)
            raise
        added.append(plugin)
        return plugin

    yield register
    for plugin in added:
        if plugin_manager.is_registered(plugin):
            plugin_manager.unregister(plugin)


@pytest.fixture
def hook_recorder(plugin_manager: pluggy.PluginManager) -> Iterator[HookRecorder]:
    """Records every hook call made through ``plugin_manager``."""
    recorder = HookRecorder(plugin_manager)
    yield recorder
    recorder.close()


@pytest.fixture
def runtime(clawcore_home: Path, plugin_manager: pluggy.PluginManager) -> Iterator[Any]:
    """A :class:`clawcore.Runtime` on a fresh home and ``plugin_manager``, closed afterwards."""
    from clawcore.runtime import Runtime

    rt = Runtime(clawcore_home, config={}, plugin_manager=plugin_manager)
    yield rt
    rt.close()


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """A started :class:`clawcore.testing.openai_server.OpenAIServer` on 127.0.0.1, stopped afterwards."""
    from clawcore.testing.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server
