"""clawcore: memory and defence in depth for AI agents.

Plugins write ``from clawcore import hookimpl`` and return the result types
exported here. The :class:`Runtime` wires everything together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawcore.hookspecs import hookimpl
from clawcore.types import (
    Action,
    AuditEvent,
    ChatModel,
    Decision,
    EmbeddingProvider,
    ExecResult,
    HookContext,
    Level,
    Message,
    ModelReply,
    PromptSection,
    ProviderUnavailable,
    SandboxBackend,
    Tool,
    ToolCall,
    ToolResult,
    Verdict,
)

if TYPE_CHECKING:
    from clawcore.runtime import Runtime

__all__ = [
    "Action",
    "AuditEvent",
    "ChatModel",
    "Decision",
    "EmbeddingProvider",
    "ExecResult",
    "HookContext",
    "Level",
    "Message",
    "ModelReply",
    "PromptSection",
    "ProviderUnavailable",
    "Runtime",
    "SandboxBackend",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Verdict",
    "hookimpl",
]


def __getattr__(name: str) -> Any:
    # The runtime pulls in every subsystem; plugins importing `hookimpl` should not pay for it.
    if name == "Runtime":
        from clawcore.runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'clawcore' has no attribute {name!r}")
