"""Builtin plugin ``tools``: the agent's builtin tools and the ``agent`` config section."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"agent": {
        "type": "object",
        "additionalProperties": False,
        "description": "The agent loop: model, tool rounds, memory flush and compaction.",
        "properties": {
            "model": {"type": "string", "minLength": 1, "default": "openai",
                      "description": "Registered chat model; its settings are models.<name>."},
            "systemPrompt": {"type": ["string", "null"], "default": None,
                             "description": "Extra instructions added to the system prompt."},
            "maxToolRounds": {"type": "integer", "minimum": 1, "maximum": 100, "default": 12},
            "compaction": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "enabled": {"type": "boolean", "default": True},
                    "reserveTokensFloor": {"type": "integer", "minimum": 0, "default": 20000,
                                           "description": "Compact when the context reaches window - this."},
                    "keepRecentTokens": {"type": "integer", "minimum": 1, "default": 8000,
                                         "description": "Newest messages kept verbatim after compaction."},
                    "memoryFlush": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "enabled": {"type": "boolean", "default": True},
                            "softThresholdTokens": {"type": "integer", "minimum": 0, "default": 4000,
                                                    "description": "Flush this many tokens before compaction."},
                            "maxTranscriptSize": {"type": ["string", "integer"], "format": "size",
                                                  "default": "2m",
                                                  "description": "Flush and compact when the live part of "
                                                                 "the transcript grows past this."},
                            "maxRounds": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                        },
                    },
                },
            },
        },
    }}


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    from clawcore.agent.subagent import SPAWN_SUBAGENT
    from clawcore.agent.tools import builtin_tools

    for tool in builtin_tools():
        register(tool)
    register(SPAWN_SUBAGENT)
