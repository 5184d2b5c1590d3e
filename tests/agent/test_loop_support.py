"""Shared fixtures of the agent-loop tests: a runtime on the loopback model server, file tools."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pluggy
import pytest

import clawcore_models_openai
from clawcore import Tool, ToolResult, hookimpl
from clawcore.hooks import Hooks
from clawcore.runtime import Runtime
from clawcore.testing.openai_server import OpenAIServer

__all__ = ["FileTools", "FIXED_NOW", "make_runtime"]

FIXED_NOW = dt.datetime(2026, 3, 14, 9, 30, tzinfo=dt.timezone.utc)


class FileTools:
    """read_file / write_file over the workspace, for runs before the builtin file tools exist."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def _path(self, arguments: Mapping[str, Any]) -> Path:
        return self.workspace / str(arguments["path"])

    @hookimpl
    def register_tools(self, register: Callable[..., None]) -> None:
        def read(arguments: Mapping[str, Any], context: Any) -> ToolResult:
            try:
                return ToolResult(self._path(arguments).read_text(encoding="utf-8"), untrusted=True)
            except FileNotFoundError:
                return ToolResult(f"error: {arguments['path']} does not exist", is_error=True)

        def write(arguments: Mapping[str, Any], context: Any) -> ToolResult:
            path = self._path(arguments)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a" if arguments.get("append") else "w", encoding="utf-8") as handle:
                handle.write(str(arguments["content"]))
            return ToolResult(f"wrote {arguments['path']}")

        register(Tool("read_file", "Read a file.", {"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}}, read,
            groups=("fs",)))
        register(Tool("write_file", "Write a file.", {"type": "object", "required": ["path", "content"],
                      "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                                     "append": {"type": "boolean"}}}, write, groups=("fs",), high_risk=True))


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
    """A runtime whose model is the loopback server, with file tools when no builtin provides them."""
    if pm.get_plugin("models_openai") is None:
        pm.register(clawcore_models_openai, name="models_openai")
    if pm.get_plugin("test-file-tools") is None and "write_file" not in Hooks(pm).tools():
        pm.register(FileTools(home / "workspace"), name="test-file-tools")
    config: dict[str, Any] = {
        "models": {"openai": {"model": "scripted", "baseUrl": server.base_url, "apiKey": "sk-loop-test",
                              "retries": 0, "contextWindow": context_window, "timeout": "10s"}},
        "agent": dict(agent or {}),
        "timezone": "UTC",
        **dict(extra or {}),
    }
    return Runtime(home, config=config, plugin_manager=pm, confirm=confirm)


@pytest.fixture
def loop_runtime(clawcore_home: Path, plugin_manager: pluggy.PluginManager,
                 openai_server: OpenAIServer) -> Iterator[Runtime]:
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server)
    yield runtime
    runtime.close()
