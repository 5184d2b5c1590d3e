"""clawcore-prism: the runtime monitor with accumulating risk.

Installed, it attaches to the ten runtime hooks of clawcore (no change to
the core): it scans inbound messages and tool output for prompt injection,
keeps a decaying risk per session, escalates from a warning to a lock, tracks
taint and canary tokens, and audits every verdict. This module is the plugin
registered through the ``clawcore`` entry point.
"""

from __future__ import annotations

from clawcore_prism.plugin import (
    after_tool_call,
    before_message_write,
    before_prompt_build,
    before_tool_call,
    config_schema,
    gateway_start,
    message_received,
    message_sending,
    register_commands,
    session_end,
    subagent_spawning,
    tool_result_persist,
)

__all__ = [
    "after_tool_call",
    "before_message_write",
    "before_prompt_build",
    "before_tool_call",
    "config_schema",
    "gateway_start",
    "message_received",
    "message_sending",
    "register_commands",
    "session_end",
    "subagent_spawning",
    "tool_result_persist",
]
