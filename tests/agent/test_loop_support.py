"""Shared fixtures of the agent-loop tests: a runtime on the loopback model server."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import clawcore_models_openai
import pluggy
from clawcore.runtime import Runtime
from clawcore.testing.openai_server import OpenAIServer

__all__ = ["FIXED_NOW", "make_runtime"]

FIXED_NOW = dt.datetime(2026, 3, 14, 9, 30, tzinfo=dt.UTC)


def make_runtime(
    home: Path,
    pm: pluggy.PluginManager,
    server: OpenAIServer,
    *,
    agent: Mapping[str, Any] | None = None,
    context_window: int = 128000,
    extra: Mapping[str, Any] | None = None,
    confirm: Any = None,
) -> Runtime:
    """A runtime whose model is the loopback server; the test tool ``echo`` is allowed by policy."""
    if pm.get_plugin("models_openai") is None:
        pm.register(clawcore_models_openai, name="models_openai")
    config: dict[str, Any] = {
        "models": {"openai": {"model": "scripted", "baseUrl": server.base_url, "apiKey": "sk-loop-test",
                              "retries": 0, "contextWindow": context_window, "timeout": "10s"}},
        "agent": dict(agent or {}),
        "timezone": "UTC",
        "tools": {"policy": {"allow": ["echo"]}},
        **dict(extra or {}),
    }
    return Runtime(home, config=config, plugin_manager=pm, confirm=confirm)
