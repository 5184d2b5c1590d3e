"""A session replayed from its transcript: what the model sees after the last compaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clawcore.sessions.transcript import message_from_entry
from clawcore.types import Message

__all__ = ["INTERRUPTED", "SessionHistory", "paired"]


@dataclass(frozen=True)
class SessionHistory:
    """Counters and the live context of a session, rebuilt from its entries.

    ``context`` holds the messages from the last compaction's first kept
    message on, silent (memory-flush) messages excluded; ``summary`` is that
    compaction's summary of everything older.
    """

    context: tuple[tuple[int, Message], ...] = ()
    summary: str | None = None
    compaction_count: int = 0
    #: ``compactionCount`` at the last memory flush; None when the session never flushed.
    memory_flush_compaction_count: int | None = None
    flush_count: int = 0
    next_seq: int = 1
    visible_messages: int = 0
    total_tokens: int = 0
    channel: str = "local"
    notices: tuple[str, ...] = field(default=())

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> SessionHistory:
        messages: list[tuple[int, Message]] = []
        summary: str | None = None
        compactions = 0
        flushed_at: int | None = None
        flushes = 0
        next_seq = 1
        visible = 0
        tokens = 0
        first_kept = 0
        channel = "local"
        for entry in entries:
            kind = entry.get("type")
            usage = entry.get("usage")  # a message's, or the summariser's in a compaction
            if kind in ("message", "compaction") and isinstance(usage, Mapping):
                tokens += _int(usage.get("input"), 0) + _int(usage.get("output"), 0)
            if kind == "session":
                channel = str(entry.get("channel", channel))
            elif kind == "message":
                seq = _int(entry.get("seq"), next_seq)
                next_seq = max(next_seq, seq + 1)
                if entry.get("silent"):
                    continue
                message = message_from_entry(entry)
                messages.append((seq, message))
                if message.role in ("user", "assistant") and not message.tool_calls:
                    visible += 1
            elif kind == "flush":
                flushes += 1
                if not entry.get("error"):  # a failed flush saved nothing: its cycle is still to flush
                    flushed_at = _int(entry.get("compactionCount"), compactions)
            elif kind == "compaction":
                compactions = _int(entry.get("compactionCount"), compactions + 1)
                summary = str(entry.get("summary") or "")
                first_kept = _int(entry.get("firstKeptSeq"), next_seq)
            elif kind == "usage":
                tokens += _int(entry.get("input"), 0) + _int(entry.get("output"), 0)
        context = paired([(seq, m) for seq, m in messages if seq >= first_kept])
        return cls(context, summary, compactions, flushed_at, flushes, next_seq, visible, tokens, channel)


#: What the model is told for a call whose result never reached the transcript.
INTERRUPTED = "[no result: the turn was interrupted before this tool call finished]"


def paired(context: Iterable[tuple[int, Message]]) -> tuple[tuple[int, Message], ...]:
    """The context with every tool call answered and every tool result matched to its call.

    Chat APIs refuse a history in which an assistant's tool call has no result before the next
    message (a turn cut off by Ctrl-C or a crash mid-tool), or a result that answers no call still
    open: its call was cut away by compaction, already answered, or closed by a later message. Each
    call left open gets a result saying it was interrupted; each such result is left out. The
    transcript itself is not changed.
    """
    out: list[tuple[int, Message]] = []
    open_calls: list[tuple[int, str]] = []

    def close_open() -> None:
        out.extend((seq, Message("tool", INTERRUPTED, tool_call_id=call_id)) for seq, call_id in open_calls)
        open_calls.clear()

    for seq, message in context:
        if message.role == "tool":
            answered = [(s, c) for s, c in open_calls if c == message.tool_call_id]
            if answered:
                open_calls.remove(answered[0])
                out.append((seq, message))
            continue
        close_open()
        out.append((seq, message))
        for call in message.tool_calls:
            open_calls.append((seq, call.id))
    close_open()
    return tuple(out)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
