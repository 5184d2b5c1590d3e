"""The memory flush: a silent save point before the model's context is compacted.

When a session's context nears its limit, the agent runs one silent turn in
which the model may store what is worth keeping. Its only tools are
``read_file`` and an append-only ``write_file`` pinned to today's daily note
(``memory/YYYY-MM-DD.md`` in the configured ``timezone``); ``MEMORY.md`` and
every other file are read-only during it. Then the flush is recorded, and only
then is anything compacted.

:func:`should_run_memory_flush` decides when. Its counters follow the
original design, without its known failure modes:

* ``memory_flush_compaction_count`` is the ``compaction_count`` at the time
  of the last flush, or None when the session never flushed: a count of 0
  means "flushed in the first cycle", never "not yet flushed";
* the flush records the count *before* the compaction that follows it
  increments it, so the next cycle flushes again (no skipped cycles);
* the flush threshold lies below the compaction threshold, so the flush
  happens before anything is truncated.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from clawcore.errors import ConfigError
from clawcore.types import ChatModel, Decision, HookContext, Message, Tool, ToolCall, ToolResult

if TYPE_CHECKING:
    from clawcore.runtime import Runtime

__all__ = [
    "FlushOutcome",
    "MemoryFlush",
    "daily_note",
    "flush_threshold",
    "resolve_timezone",
    "should_run_memory_flush",
]

NO_REPLY = "NO_REPLY"
#: Confirm rules the flush's own pinned append may pass without asking: the
#: profile's default for write_file (tools.policy), nothing a user or monitor added.
PRE_APPROVED_RULES = frozenset({"profile-confirm"})
DEFAULT_MAX_TRANSCRIPT_BYTES = 2 * 1024 * 1024


def flush_threshold(context_window_tokens: int, reserve_tokens_floor: int = 20000,
                    soft_threshold_tokens: int = 4000) -> int:
    """Tokens at which the flush becomes due: window − reserve floor − soft threshold (never below 0)."""
    return max(0, context_window_tokens - reserve_tokens_floor - soft_threshold_tokens)


def should_run_memory_flush(
    *,
    total_tokens: int,
    context_window_tokens: int,
    reserve_tokens_floor: int = 20000,
    soft_threshold_tokens: int = 4000,
    compaction_count: int = 0,
    memory_flush_compaction_count: int | None = None,
) -> bool:
    """Whether the silent memory flush should run before the next model call.

    True when ``total_tokens`` has reached the threshold (context window −
    ``reserve_tokens_floor`` − ``soft_threshold_tokens``) and this compaction
    cycle has not flushed yet (``memory_flush_compaction_count`` differs from
    ``compaction_count``; None means never flushed).

    :raises ValueError: a negative count or a context window that is not positive.
    """
    if context_window_tokens <= 0:
        raise ValueError(f"context_window_tokens must be positive, got {context_window_tokens}")
    for name, value in (("total_tokens", total_tokens), ("reserve_tokens_floor", reserve_tokens_floor),
                        ("soft_threshold_tokens", soft_threshold_tokens), ("compaction_count", compaction_count)):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if total_tokens <= 0:
        return False
    if total_tokens < flush_threshold(context_window_tokens, reserve_tokens_floor, soft_threshold_tokens):
        return False
    # `is not None`: a flush in cycle 0 is recorded as 0, which is falsy but real.
    return memory_flush_compaction_count is None or memory_flush_compaction_count != compaction_count


def resolve_timezone(name: str | None) -> dt.tzinfo:
    """The zone for daily notes: the config's ``timezone`` (IANA name) or the machine's.

    :raises ConfigError: an unknown zone name.
    """
    if not name:
        local = dt.datetime.now().astimezone().tzinfo
        return local if local is not None else dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"timezone: {name!r} is not a known IANA zone (e.g. Europe/Berlin)") from exc


def daily_note(now: dt.datetime) -> str:
    """Today's daily note, relative to the workspace: ``memory/YYYY-MM-DD.md``."""
    return f"memory/{now.date().isoformat()}.md"


@dataclass(frozen=True)
class FlushOutcome:
    """What one flush did."""

    #: The daily note it was pinned to, relative to the workspace.
    path: str
    #: Appends that succeeded.
    writes: int
    #: Tool calls refused (another path, an unknown tool); a failed append to the note is an ``error``.
    refused: int
    #: The model's final text (``NO_REPLY`` when there was nothing to store).
    reply: str
    #: True when MEMORY.md changed during the flush and was put back.
    restored_memory_md: bool = False
    error: str = ""


FLUSH_SYSTEM = (
    "Pre-compaction memory flush. The conversation is about to be compacted: older messages will be "
    "replaced by a short summary. Store durable memories now — decisions, facts, preferences, open tasks, "
    "names, dates — by appending concise Markdown bullet points to {path} with write_file. Use read_file "
    "first if you need to see what the note already holds, and do not repeat it. MEMORY.md and every "
    "other file are read-only now. If there is nothing worth storing, reply with exactly {no_reply}."
)
FLUSH_USER = "Memory flush: append anything worth keeping to {path} now, or reply {no_reply}."

WriteMessage = Callable[[Message, Mapping[str, Any]], None]


class MemoryFlush:
    """Runs the silent flush turn for one session.

    :param runtime: the runtime; every tool call goes through ``runtime.call_tool``
        (policy, monitors, audit) with the path pinned by this class.
    :param model: the chat model.
    :param context: the session's hook context.
    :param write: ``write(message, extra)`` appends a message to the transcript
        (the caller marks it silent).
    :param max_rounds: model calls at most.
    """

    def __init__(self, runtime: Runtime, model: ChatModel, context: HookContext, write: WriteMessage,
                 *, max_rounds: int = 3) -> None:
        self.runtime = runtime
        self.model = model
        self.context = context
        self.write = write
        self.max_rounds = max_rounds

    def tools(self, path: str) -> list[Tool]:
        """The flush's tool table: read, and the append-only write pinned to ``path``."""

        def unused(arguments: Mapping[str, Any], context: Any) -> ToolResult:  # the loop routes calls
            raise AssertionError("flush tools are routed by MemoryFlush")

        tools = [Tool(
            "write_file",
            f"Append Markdown to {path} (the only writable file now; content is always appended).",
            {"type": "object", "additionalProperties": False, "required": ["path", "content"],
             "properties": {"path": {"type": "string", "enum": [path]},
                            "content": {"type": "string", "minLength": 1}}},
            unused,
        )]
        read = self.runtime.tools.get("read_file")
        if read is not None:
            tools.insert(0, read)
        return tools

    def run(self, system_prompt: str, messages: Sequence[Message], now: dt.datetime) -> FlushOutcome:
        """The silent turn over ``messages`` (the session's current context)."""
        path = daily_note(now)
        memory_md = self.runtime.workspace / "MEMORY.md"
        before = _digest(memory_md)
        instruction = FLUSH_SYSTEM.format(path=path, no_reply=NO_REPLY)
        prompt = Message("user", FLUSH_USER.format(path=path, no_reply=NO_REPLY),
                         metadata={"phase": "flush"})
        self.write(prompt, {})
        conversation: list[Message] = [Message("system", system_prompt + "\n\n" + instruction),
                                       *messages, prompt]
        tools = self.tools(path)
        writes = refused = 0
        reply = ""
        error = ""
        try:
            for _ in range(self.max_rounds):
                answer = self.model.complete(conversation, tools)
                assistant = Message("assistant", answer.content, tool_calls=answer.tool_calls,
                                    metadata={"phase": "flush"})
                self.write(assistant, {"usage": {"input": answer.input_tokens, "output": answer.output_tokens}})
                conversation.append(assistant)
                reply = answer.content
                if not answer.tool_calls:
                    break
                for call in answer.tool_calls:
                    result, wrote = self._route(call, path)
                    writes += wrote
                    if result.metadata.get("flush") == "write-failed":
                        # The note the model meant to save is not on disk: not "nothing to store".
                        error = error or f"the append to {path} failed: {result.content.removeprefix('error: ')}"
                    else:
                        refused += int(result.is_error and not wrote and call.name != "read_file")
                    message = Message("tool", result.content, tool_call_id=call.id, metadata={"phase": "flush"})
                    self.write(message, {})
                    conversation.append(message)
        except Exception as exc:  # noqa: BLE001 - a failed flush must not stop the compaction that protects the session
            error = error or f"{type(exc).__name__}: {exc}"
        restored = False
        if _digest(memory_md) != before:
            # Defence in depth: nothing in the flush may change MEMORY.md; put it back if something did.
            restored = self._restore(memory_md, before)
        return FlushOutcome(path, writes, refused, reply.strip(), restored, error)

    def _route(self, call: ToolCall, path: str) -> tuple[ToolResult, bool]:
        if call.name == "read_file" and "read_file" in self.runtime.tools:
            return self.runtime.call_tool("read_file", call.arguments, context=self.context, call_id=call.id), False
        if call.name != "write_file":
            self.runtime.audit("memory.flush.refused", {"tool": call.name, "reason": "not offered in the flush"},
                               session_id=self.context.session_id)
            return ToolResult(f"error: only read_file and write_file to {path} are available during the "
                              "memory flush", is_error=True), False
        target = str(call.arguments.get("path", path)).strip()
        content = call.arguments.get("content")
        if _normalise(target) not in (path, str(self.runtime.workspace / path)):
            self.runtime.audit("memory.flush.refused",
                               {"tool": "write_file", "path": target, "reason": "not today's daily note"},
                               session_id=self.context.session_id)
            return ToolResult(f"error: during the memory flush only {path} may be written (append-only); "
                              f"{target!r} is read-only", is_error=True), False
        if not isinstance(content, str) or not content.strip():
            return ToolResult("error: write_file needs non-empty 'content'", is_error=True), False
        text = content if content.endswith("\n") else content + "\n"
        if "write_file" not in self.runtime.tools:
            return ToolResult("error: no write_file tool is registered", is_error=True), False
        workspace = os.path.realpath(self.runtime.workspace)
        real = os.path.realpath(self.runtime.workspace / path)
        if os.path.commonpath([workspace, real]) != workspace:
            # A link planted in memory/ would carry the note out of the workspace, where the index never
            # looks: the flush would report success and the memory would be lost.
            self.runtime.audit("memory.flush.refused",
                               {"tool": "write_file", "path": path, "reason": f"a link to {real}"},
                               session_id=self.context.session_id)
            return ToolResult(f"error: {path} is a link that leads out of the workspace ({real}); not written",
                              is_error=True), False
        if _ends_mid_line(real):
            text = "\n" + text  # a note written by hand without a final newline keeps its last line whole
        result = self._pinned_write(call.id or "flush-write", {"path": path, "content": text, "append": True})
        if result.is_error:
            return ToolResult(result.content, is_error=True, metadata={**result.metadata, "flush": "write-failed"}), False
        return result, True

    def _pinned_write(self, call_id: str, arguments: Mapping[str, Any]) -> ToolResult:
        """The append through ``runtime.call_tool``, so policy, monitors and audit all see it.

        The user enabled the flush, so a ``confirm`` whose only reason is the
        profile's default for ``write_file`` is approved for this one pinned
        call; a confirm for any other reason (a user list, an argument rule, a
        monitor) goes to the runtime's own confirm handler, and a deny stays a deny.
        """
        runtime = self.runtime
        original = runtime.confirm

        def approve(call: ToolCall, decision: Decision) -> bool:
            if call.id == call_id and decision.rules and set(decision.rules) <= PRE_APPROVED_RULES:
                # Only when the policy's own answer is the whole answer: a monitor's confirm that carries
                # no rule id of its own still adds its reason, and then the handler decides.
                from clawcore.security.plugin import policy_for

                own = policy_for(self.context).decide(call)
                if (own.action, set(own.reasons), set(own.rules)) == (decision.action, set(decision.reasons),
                                                                      set(decision.rules)):
                    return True
            return original is not None and original(call, decision) is True

        runtime.confirm = approve
        try:
            return runtime.call_tool("write_file", arguments, context=self.context, call_id=call_id)
        finally:
            runtime.confirm = original

    def _restore(self, memory_md: Path, digest: tuple[str, bytes | None]) -> bool:
        original = digest[1]
        try:
            if original is None:
                memory_md.unlink(missing_ok=True)
            else:
                memory_md.write_bytes(original)
        except OSError:
            return False
        self.runtime.audit("memory.flush.memory_md_restored", {"path": str(memory_md)},
                           session_id=self.context.session_id)
        return True


def _ends_mid_line(path: str) -> bool:
    """Whether a file exists, is not empty, and its last byte is not a newline."""
    try:
        with open(path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:  # missing, empty (cannot seek before the start), a folder
        return False


def _normalise(path: str) -> str:
    text = path.replace("\\", "/")
    text = text.removeprefix("./")
    if text.startswith("/"):
        return text
    return str(PurePosixPath(text))


def _digest(path: Path) -> tuple[str, bytes | None]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ("missing", None)
    return (hashlib.sha256(data).hexdigest(), data)
