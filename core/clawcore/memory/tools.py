"""The agent's memory tools: ``memory_search`` and ``memory_get``.

Handlers get ``(arguments, context)`` where ``context.memory`` is the
runtime's :class:`~clawcore.memory.Memory`. Bad arguments come back as an
error result with one clear line; nothing here raises into the agent loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clawcore.errors import ClawcoreError
from clawcore.types import Tool, ToolResult

__all__ = ["MEMORY_GET", "MEMORY_SEARCH", "memory_tools"]

SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to look for, in plain words."},
        "maxResults": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many results (default 5)."},
        "minScore": {"type": "number", "minimum": 0, "description": "Drop results scoring below this."},
    },
}

GET_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "A memory file, e.g. MEMORY.md or memory/2024-05-01.md."},
        "from": {"type": "integer", "minimum": 1, "description": "First line to read (1-based, default 1)."},
        "lines": {"type": "integer", "minimum": 1, "description": "How many lines (default: to the end)."},
    },
}


def _check(arguments: Any, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(arguments, Mapping):
        raise ClawcoreError("arguments must be a JSON object")
    unknown = sorted(set(arguments) - set(schema["properties"]))
    if unknown:
        raise ClawcoreError(f"unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(schema['properties'])}")
    for name in schema["required"]:
        if name not in arguments:
            raise ClawcoreError(f"missing required argument {name!r}")
    for name, value in arguments.items():
        kind = schema["properties"][name]["type"]
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        }[kind]
        if not ok:
            raise ClawcoreError(f"argument {name!r} must be a {kind}, got {type(value).__name__}")
    return arguments


def _search(arguments: Mapping[str, Any], context: Any) -> ToolResult:
    try:
        args = _check(arguments, SEARCH_PARAMETERS)
        response = context.memory.search(
            args["query"], max_results=args.get("maxResults"), min_score=args.get("minScore")
        )
    except ClawcoreError as exc:
        return ToolResult(f"error: {exc}", is_error=True)
    payload = response.to_dict()
    return ToolResult(
        json.dumps(payload, ensure_ascii=False, indent=1),
        untrusted=True,  # memory holds text that came from conversations and files
        metadata={"mode": response.mode, "results": len(response.results)},
    )


def _get(arguments: Mapping[str, Any], context: Any) -> ToolResult:
    try:
        args = _check(arguments, GET_PARAMETERS)
        text = context.memory.get(args["path"], from_line=args.get("from", 1), lines=args.get("lines"))
    except ClawcoreError as exc:
        return ToolResult(f"error: {exc}", is_error=True)
    return ToolResult(text, untrusted=True, metadata={"path": args["path"]})


MEMORY_SEARCH = Tool(
    name="memory_search",
    description=(
        "Search long-term memory (MEMORY.md and daily notes) by keywords and meaning. "
        "Returns cited snippets (path#Lx-Ly); read more with memory_get."
    ),
    parameters=SEARCH_PARAMETERS,
    handler=_search,
    groups=("memory",),
)

MEMORY_GET = Tool(
    name="memory_get",
    description="Read lines of a memory file (MEMORY.md or memory/*.md), e.g. around a memory_search citation.",
    parameters=GET_PARAMETERS,
    handler=_get,
    groups=("memory",),
)


def memory_tools() -> tuple[Tool, Tool]:
    return MEMORY_SEARCH, MEMORY_GET
