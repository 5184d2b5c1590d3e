"""Compaction: older messages become one summary; recent messages stay verbatim.

Only the model's context is compacted. The transcript keeps every message and
gets a ``compaction`` entry naming the first message kept, so a resumed
session rebuilds exactly the same context.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from clawcore.types import ChatModel, Message

__all__ = ["CompactionPlan", "Summary", "estimate_tokens", "plan_compaction", "summarise"]

#: Per-message framing the chat format adds (role, separators).
_MESSAGE_OVERHEAD = 4
#: A single message is cut to this many characters in the summariser's input.
_SUMMARY_INPUT_CAP = 4000

SUMMARY_SYSTEM = (
    "You compact a conversation for your own future reference. Write a concise summary of the messages "
    "below: the user's goals, decisions made, facts learned, files and commands involved, results, and "
    "anything still open. Keep names, paths, numbers and dates exact. Write only the summary."
)


def message_tokens(message: Message) -> int:
    """A conservative token estimate for one message (four characters a token)."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(json.dumps(dict(call.arguments), ensure_ascii=False))
    return _MESSAGE_OVERHEAD + math.ceil(chars / 4)


def estimate_tokens(messages: Sequence[Message], system_prompt: str = "") -> int:
    """Tokens of a whole context: the system prompt plus every message."""
    return math.ceil(len(system_prompt) / 4) + sum(message_tokens(m) for m in messages)


@dataclass(frozen=True)
class CompactionPlan:
    """Where to cut: ``messages[:keep_from]`` are summarised, the rest stay verbatim."""

    keep_from: int

    def older(self, messages: Sequence[Message]) -> list[Message]:
        return list(messages[: self.keep_from])

    def recent(self, messages: Sequence[Message]) -> list[Message]:
        return list(messages[self.keep_from :])


def plan_compaction(messages: Sequence[Message], keep_recent_tokens: int) -> CompactionPlan | None:
    """Keep the newest messages worth up to ``keep_recent_tokens``; None when nothing can be summarised.

    The cut never falls on a ``tool`` message, so a tool result always stays
    with the assistant message that asked for it, and the last user message
    is always kept.
    """
    if len(messages) < 2:
        return None
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages) - 1)
    budget = keep_recent_tokens
    keep_from = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        budget -= message_tokens(messages[index])
        if budget < 0 and index < last_user:
            break
        keep_from = index
    # Move the cut forward onto a message that may start a context.
    while keep_from < len(messages) and messages[keep_from].role == "tool":
        keep_from += 1
    keep_from = min(keep_from, last_user)
    while keep_from > 0 and messages[keep_from].role == "tool":
        keep_from -= 1
    if keep_from <= 0:
        return None
    return CompactionPlan(keep_from)


@dataclass(frozen=True)
class Summary:
    """What the summariser wrote, and the tokens the model reported for it over all its requests."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


def summarise(model: ChatModel, older: Sequence[Message], previous_summary: str | None, *,
              budget_tokens: int) -> Summary:
    """Ask the model for one summary of ``older`` (and of the previous summary, if any).

    No request is larger than ``budget_tokens`` (at four characters a token): each message is cut
    to a few thousand characters, and messages that do not fit one request are summarised in
    chunks, oldest first, each request folding in the summary so far. The summary is asked to stay
    within, and is cut to, a quarter of the budget: it is in every later request.
    """
    limit = max(1, budget_tokens) * 4
    line_chars = min(_SUMMARY_INPUT_CAP, limit // 4)
    summary_chars = limit // 4
    summary = Summary(_capped(previous_summary.strip(), summary_chars) if previous_summary else "")
    chunk: list[str] = []
    used = 0
    for line in (_line(message, line_chars) for message in older):
        room = limit - len(SUMMARY_SYSTEM) - len(summary.text) - 80
        if chunk and used + len(line) + 1 > room:
            summary = _ask(model, summary, chunk, summary_chars)
            chunk, used = [], 0
        chunk.append(line)
        used += len(line) + 1
    if chunk:
        summary = _ask(model, summary, chunk, summary_chars)
    if not summary.text:
        summary = replace(summary, text="(the summariser returned nothing; see the transcript for the full history)")
    return summary


def _ask(model: ChatModel, summary: Summary, lines: Sequence[str], summary_chars: int) -> Summary:
    """One summariser request: the summary so far, then the next messages; the answer capped."""
    ask = f"(Write at most about {max(20, summary_chars // 6)} words.)\n"
    earlier = [f"[earlier summary]\n{summary.text}\n"] if summary.text else []
    reply = model.complete([Message("system", SUMMARY_SYSTEM), Message("user", "\n".join([ask, *earlier, *lines]))])
    return Summary(_capped(reply.content.strip(), summary_chars), summary.input_tokens + reply.input_tokens,
                   summary.output_tokens + reply.output_tokens)


def _capped(summary: str, limit: int) -> str:
    """A summary in about ``limit`` characters, its start and end kept, saying how much was left out."""
    if len(summary) <= limit:
        return summary
    head, tail = summary[: limit * 3 // 4], summary[len(summary) - limit // 4:]
    return f"{head}\n[… {len(summary) - len(head) - len(tail)} characters of this summary left out: it was too long …]\n{tail}"


def _line(message: Message, limit: int) -> str:
    """One message for the summariser, its text and tool calls in at most about ``limit`` characters."""
    calls = "".join(
        f"\n  -> {c.name}({json.dumps(dict(c.arguments), ensure_ascii=False)[:300]})" for c in message.tool_calls
    )
    return _clip(f"[{message.role}] {message.content}{calls}", limit)


def _clip(text: str, limit: int) -> str:
    """``text`` in about ``limit`` characters: its start and end, with a mark where the middle was."""
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n[…]\n" + text[len(text) - limit // 2:]
