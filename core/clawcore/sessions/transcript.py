"""One session's append-only JSONL transcript.

Every line is one JSON object with a ``type``: ``session`` (the header),
``message``, ``flush``, ``compaction`` or ``notice``. Lines are only ever
appended; the model's compacted context is derived from them, the file keeps
the full history. A crash mid-write leaves at most a torn last line: reading
skips it and keeps every line before it, and the next append starts on a
fresh line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawcore.errors import ClawcoreError
from clawcore.folders import make_folder
from clawcore.text import well_formed
from clawcore.types import Message, ToolCall

__all__ = ["Transcript", "TranscriptRead", "message_from_entry", "message_to_entry"]


@dataclass(frozen=True)
class TranscriptRead:
    """What :meth:`Transcript.read` found."""

    entries: tuple[Mapping[str, Any], ...]
    #: Lines that were not JSON objects (a torn last line, a damaged middle line).
    skipped: int = 0
    #: True when the last line was incomplete (the process died mid-write).
    torn_tail: bool = False
    size: int = 0
    problems: tuple[str, ...] = field(default=())


class Transcript:
    """Append-only access to one ``<session-id>.jsonl`` file.

    Appends open the file with ``O_APPEND`` and write each line with one
    ``write`` call, so concurrent readers never see half of a line they
    could mistake for a whole one.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._checked_tail = False

    def append(self, entry: Mapping[str, Any]) -> None:
        """Write ``entry`` (a JSON-able mapping) as one line; ``ts`` is added when missing."""
        record = dict(entry)
        record.setdefault("ts", round(time.time(), 3))
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        # Text no UTF-8 file can hold (a lone surrogate: a "\ud800" escape, input that was not UTF-8)
        # is stored as U+FFFD; json.dumps leaves such characters only inside strings.
        data = well_formed(line).encode("utf-8")
        if not self._checked_tail:
            # A torn line from a crash must not swallow the next entry.
            if self._ends_without_newline():
                data = b"\n" + data
            self._checked_tail = True
        make_folder(self.path.parent)
        try:
            # O_NOFOLLOW: a transcript that is a symbolic link would carry the conversation out of the folder.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise ClawcoreError(f"cannot write the transcript {self.path}: "
                               f"{'it is a symbolic link' if self.path.is_symlink() else exc.strerror}") from None
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _ends_without_newline(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    return False
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def read(self) -> TranscriptRead:
        """Every intact entry, in order; damaged lines are counted, never fatal."""
        try:
            if self.path.is_symlink():
                return TranscriptRead((), problems=(f"{self.path.name}: a symbolic link; not read",))
            data = self.path.read_bytes()
        except FileNotFoundError:
            return TranscriptRead(())
        except OSError as exc:
            return TranscriptRead((), problems=(f"{self.path.name}: cannot be read ({exc.strerror}); skipped",))
        lines = data.split(b"\n")
        torn = bool(lines) and lines[-1] != b""
        entries: list[Mapping[str, Any]] = []
        skipped = 0
        problems: list[str] = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=_no_constant)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                value = None
            if isinstance(value, dict) and _intact(value):
                entries.append(value)
                if number == len(lines) and torn:
                    torn = False  # a complete object that only lacks its newline
            else:
                skipped += 1
                where = "torn last line" if number == len(lines) and torn else f"line {number} is damaged"
                problems.append(f"{self.path.name}: {where}; skipped")
        return TranscriptRead(tuple(entries), skipped, torn, len(data), tuple(problems))


#: The roles a transcript's messages may have.
_ROLES = frozenset({"system", "user", "assistant", "tool"})


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _intact(entry: Mapping[str, Any]) -> bool:
    """Whether an entry has the shape readers rely on; any other line counts as damaged."""
    if not isinstance(entry.get("type"), str):
        return False
    ts = entry.get("ts")
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float)) or not 0 <= ts < 1e11):
        return False  # seconds since 1970, before the year 5138: anything else is not a time
    if entry["type"] == "message":
        if entry.get("role") not in _ROLES or not isinstance(entry.get("content", ""), (str, type(None))):
            return False  # a role no chat API knows, or content that is not text
        calls = entry.get("toolCalls")
        if calls is not None and not (isinstance(calls, list) and all(
                isinstance(c, Mapping) and isinstance(c.get("arguments", {}), Mapping) for c in calls)):
            return False
        if not isinstance(entry.get("metadata", {}), Mapping):
            return False
    return True


def message_to_entry(message: Message, seq: int, **extra: Any) -> dict[str, Any]:
    """A transcript ``message`` entry for ``message``."""
    entry: dict[str, Any] = {"type": "message", "seq": seq, "role": message.role, "content": message.content}
    if message.tool_calls:
        entry["toolCalls"] = [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                              for c in message.tool_calls]
    if message.tool_call_id is not None:
        entry["toolCallId"] = message.tool_call_id
    if message.channel != "local":
        entry["channel"] = message.channel
    if message.metadata:
        entry["metadata"] = dict(message.metadata)
    entry.update({k: v for k, v in extra.items() if v is not None})
    return entry


def message_from_entry(entry: Mapping[str, Any]) -> Message:
    """The :class:`Message` of a ``message`` entry (tolerant of missing keys)."""
    calls: Sequence[Mapping[str, Any]] = entry.get("toolCalls") or ()
    return Message(
        role=str(entry.get("role", "user")),
        content=str(entry.get("content") or ""),
        tool_call_id=entry.get("toolCallId"),
        tool_calls=tuple(
            ToolCall(str(c.get("name", "")), dict(c.get("arguments") or {}), str(c.get("id", "")))
            for c in calls if isinstance(c, Mapping)
        ),
        channel=str(entry.get("channel", "local")),
        metadata=dict(entry.get("metadata") or {}),
    )
