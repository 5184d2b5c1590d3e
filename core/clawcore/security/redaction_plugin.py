"""Builtin plugin ``redaction``: secrets never reach a transcript, and never leave in a message.

* ``tool_result_persist`` masks credentials in a tool result before it is
  written to the transcript and shown to the model (builtins run last in the
  chain, so this sees the final text of every other plugin);
* ``before_message_write`` masks credentials in any message, tool-call
  arguments included, before it is written;
* ``message_sending`` withholds an outbound message that still carries a
  credential (deny; the user gets a notice instead).

Audit payloads are redacted by the runtime itself (:func:`clawcore.runtime.Runtime.audit`).
"""

from __future__ import annotations

from dataclasses import replace

from clawcore import hookimpl
from clawcore.security.secrets import redact, redact_data, scan_text
from clawcore.types import Decision, HookContext, Message, ToolCall, ToolResult

__all__ = ["before_message_write", "message_sending", "tool_result_persist"]


@hookimpl
def tool_result_persist(call: ToolCall, result: ToolResult, text: str, context: HookContext) -> str | None:
    masked = redact(text)
    return masked if masked != text else None


@hookimpl
def before_message_write(message: Message, context: HookContext) -> Message | None:
    content = redact(message.content)
    calls = tuple(
        replace(call, arguments=redact_data(dict(call.arguments))) for call in message.tool_calls
    )
    if content == message.content and calls == message.tool_calls:
        return None
    return replace(message, content=content, tool_calls=calls)


@hookimpl
def message_sending(message: Message, context: HookContext) -> Decision | None:
    findings = scan_text(message.content)
    if not findings:
        return None
    kinds = ", ".join(sorted({f.rule for f in findings}))
    return Decision.deny(
        f"the outbound message carries a credential ({kinds}); it was withheld",
        rules=("outbound-secret",),
        source="redaction",
    )
