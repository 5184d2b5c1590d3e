"""PRISM's hook implementations: thin adapters from the ten runtime hooks to a :class:`Monitor`.

One monitor per ``$CLAWCORE_HOME`` lives in :data:`_MONITORS`; it is
created by ``gateway_start`` (which also restores persisted risk and arms
config hot-reload) or, when a runtime never fires that hook, on first use.
With ``prism.enabled: false`` every hook answers None.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clawcore import Decision, HookContext, Message, PromptSection, ToolCall, ToolResult, Verdict, hookimpl

from clawcore_prism.monitor import Monitor
from clawcore_prism.settings import SCHEMA, PrismSettings

__all__ = [
    "after_tool_call",
    "before_message_write",
    "before_prompt_build",
    "before_tool_call",
    "config_schema",
    "gateway_start",
    "message_received",
    "message_sending",
    "monitor_for",
    "register_commands",
    "section_of",
    "session_end",
    "subagent_spawning",
    "tool_result_persist",
]

_MONITORS: dict[Path, Monitor] = {}
_GUARD = threading.Lock()


def section_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    section = config.get("prism") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def monitor_for(home: Path, config: Mapping[str, Any]) -> Monitor:
    """The monitor of ``home``, created from ``config``'s ``prism`` section on first use."""
    key = Path(home).expanduser().resolve()
    with _GUARD:
        monitor = _MONITORS.get(key)
        if monitor is None:
            monitor = Monitor(key, PrismSettings.from_section(section_of(config)), config=config)
            _MONITORS[key] = monitor
        return monitor


def _active(context: HookContext) -> Monitor | None:
    monitor = monitor_for(context.home, context.config)
    if not monitor.settings.enabled:
        with monitor.lock:
            monitor.reload_config(context)  # a disabled monitor still notices being switched back on
    return monitor if monitor.settings.enabled else None


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"prism": SCHEMA}


@hookimpl
def gateway_start(config: Mapping[str, Any], home: Any) -> None:
    """Restore persisted risk and take the current config (later changes are hot-reloaded)."""
    key = Path(home).expanduser().resolve()
    settings = PrismSettings.from_section(section_of(config))
    with _GUARD:
        monitor = _MONITORS.get(key)
        if monitor is None:
            _MONITORS[key] = Monitor(key, settings, config=config)
            return
    with monitor.lock:
        monitor.config = config
        monitor.apply(settings)
        monitor.store.load()
        monitor.reload_config(force=True)


@hookimpl
def message_received(message: Message, context: HookContext) -> Verdict | None:
    monitor = _active(context)
    return monitor.message_received(message, context) if monitor else None


@hookimpl
def before_prompt_build(context: HookContext) -> Sequence[PromptSection] | None:
    monitor = _active(context)
    return monitor.before_prompt_build(context) if monitor else None


@hookimpl
def before_tool_call(call: ToolCall, context: HookContext) -> Decision | None:
    monitor = _active(context)
    return monitor.before_tool_call(call, context) if monitor else None


@hookimpl
def after_tool_call(call: ToolCall, result: ToolResult, context: HookContext) -> Verdict | None:
    monitor = _active(context)
    return monitor.after_tool_call(call, result, context) if monitor else None


@hookimpl
def tool_result_persist(call: ToolCall, result: ToolResult, text: str, context: HookContext) -> str | None:
    monitor = _active(context)
    return monitor.tool_result_persist(call, result, text, context) if monitor else None


@hookimpl
def before_message_write(message: Message, context: HookContext) -> Message | None:
    monitor = _active(context)
    return monitor.before_message_write(message, context) if monitor else None


@hookimpl
def message_sending(message: Message, context: HookContext) -> Decision | None:
    monitor = _active(context)
    return monitor.message_sending(message, context) if monitor else None


@hookimpl
def subagent_spawning(task: str, context: HookContext) -> Decision | None:
    monitor = _active(context)
    return monitor.subagent_spawning(task, context) if monitor else None


@hookimpl
def session_end(context: HookContext) -> None:
    monitor = _active(context)
    if monitor:
        monitor.session_end(context)


@hookimpl
def register_commands(cli: Any) -> None:
    from clawcore_prism.cli import command

    cli.add_command(command)
