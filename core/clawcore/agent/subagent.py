"""The ``spawn_subagent`` tool: hand one self-contained task to a child session.

The child runs the same model, tools, policy and monitors as its parent, in
its own transcript (``<parent>.sub-<8 hex digits>``), and its final reply comes back to
the parent as an untrusted tool result. Before it starts, the
``subagent_spawning`` deciders answer (strictest wins; a confirm asks the
confirmation handler). A sub-agent cannot start sub-agents of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clawcore.types import Action, Tool, ToolCall, ToolResult

if TYPE_CHECKING:
    from clawcore.runtime import ToolContext

__all__ = ["SPAWN_SUBAGENT", "is_subagent", "parent_of"]

_MARK = ".sub-"

PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task"],
    "properties": {
        "task": {"type": "string", "minLength": 1,
                 "description": "The complete instruction for the sub-agent; it sees nothing else."},
    },
}


def is_subagent(session_id: str) -> bool:
    """True for the session id of a sub-agent."""
    return _MARK in session_id


def parent_of(session_id: str) -> str | None:
    """The session that started the sub-agent ``session_id``; None for a session no sub-agent's."""
    return session_id.split(_MARK, 1)[0] if is_subagent(session_id) else None


def _spawn(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    runtime, parent = context.runtime, context.hook
    task = str(arguments.get("task", "")).strip()
    if not task:
        return ToolResult("error: spawn_subagent needs a non-empty task", is_error=True)
    if is_subagent(parent.session_id):
        return ToolResult("error: a sub-agent cannot start another sub-agent", is_error=True)
    call = ToolCall("spawn_subagent", {"task": task})
    decision = runtime.settle(call, runtime.hooks.subagent_spawning(task, parent), parent, kind="subagent.decision")
    if decision.action is not Action.ALLOW:
        return ToolResult("denied: " + ("; ".join(decision.reasons) or "sub-agents are not allowed now"),
                          is_error=True, metadata={"decision": decision.action.value, "rules": list(decision.rules)})
    # The parent's id whole, so parent_of can name it; the session store admits the suffix after any valid id.
    child_id = f"{parent.session_id or 'session'}{_MARK}{uuid.uuid4().hex[:8]}"
    with runtime.session(child_id, channel="subagent") as child:
        reply = child.send(task)
    return ToolResult(reply.text, untrusted=True, metadata={"session": child_id, "withheld": reply.withheld})


SPAWN_SUBAGENT = Tool(
    "spawn_subagent",
    "Start a sub-agent on one self-contained task and return its final answer.",
    PARAMETERS,
    _spawn,
    groups=("agents",),
    high_risk=True,
)
