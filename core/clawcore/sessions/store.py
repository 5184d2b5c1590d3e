"""The sessions folder: ``$CLAWCORE_HOME/sessions/<session-id>.jsonl``, one transcript per session."""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawcore.errors import ClawcoreError
from clawcore.folders import make_folder
from clawcore.sessions.history import SessionHistory
from clawcore.sessions.transcript import Transcript, TranscriptRead

__all__ = ["InvalidSessionId", "SessionInUse", "SessionInfo", "SessionNotFound", "SessionStore"]

#: Up to 128 characters, and a sub-agent's suffix (``.sub-`` and 8 hex digits) after a parent id of any valid
#: length, so every session can start one. Whole ids only: fullmatch (`$` allows a final \n).
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}(?:\.sub-[0-9a-f]{8})?")


class SessionNotFound(ClawcoreError):
    """No transcript exists for the session id."""


class SessionInUse(ClawcoreError):
    """Another open session (in this process or another) writes this transcript."""


class InvalidSessionId(ClawcoreError):
    """A session id that could name a file outside the sessions folder."""

    exit_code = 2


@dataclass(frozen=True)
class SessionInfo:
    """One session as ``clawcore sessions list`` shows it."""

    id: str
    path: Path
    #: Unix time of the header (or the first entry).
    started: float
    #: Unix time of the last entry.
    last_activity: float
    #: User and assistant messages the user saw (tool and silent messages excluded).
    messages: int
    #: Input plus output tokens the model reported over the whole session.
    tokens: int
    compactions: int
    flushes: int
    channel: str = "local"
    #: Damaged lines skipped when reading (a torn last line after a crash).
    skipped_lines: int = 0


class SessionStore:
    """Create, open and list transcripts under ``home/sessions``.

    :param home: ``$CLAWCORE_HOME``.
    """

    def __init__(self, home: Path | str) -> None:
        self.home = Path(home).expanduser()
        self.root = self.home / "sessions"

    def path(self, session_id: str) -> Path:
        """The transcript path of ``session_id``.

        :raises InvalidSessionId: the id has characters that could escape the folder.
        """
        if not isinstance(session_id, str) or not _ID.fullmatch(session_id) or ".." in session_id:
            raise InvalidSessionId(
                f"invalid session id {session_id!r}: use letters, digits, '.', '_' and '-' (at most 128)"
            )
        return self.root / f"{session_id}.jsonl"

    @staticmethod
    def new_id() -> str:
        """A fresh id that sorts by creation time: ``20261130-164512-3fa9c1``."""
        return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)

    def exists(self, session_id: str) -> bool:
        return self.path(session_id).is_file()

    def create(self, session_id: str | None = None, *, channel: str = "local",
               header: Mapping[str, Any] | None = None) -> tuple[str, Transcript]:
        """Start a transcript with its header line.

        :raises ClawcoreError: a session with that id exists already.
        """
        session_id = session_id or self.new_id()
        path = self.path(session_id)
        if path.exists():
            raise ClawcoreError(f"session {session_id!r} exists already; open it instead")
        make_folder(self.root)
        transcript = Transcript(path)
        transcript.append({"type": "session", "version": 1, "id": session_id, "channel": channel,
                           **dict(header or {})})
        return session_id, transcript

    def open(self, session_id: str) -> Transcript:
        """The transcript of an existing session.

        :raises SessionNotFound: with the command that lists sessions.
        """
        path = self.path(session_id)
        if not path.is_file():
            raise self._not_found(session_id)
        return Transcript(path)

    def _not_found(self, session_id: str) -> SessionNotFound:
        return SessionNotFound(f"no session {session_id!r} in {self.root}; see `clawcore sessions list`")

    def claim(self, session_id: str) -> int:
        """Hold ``session_id`` for one writer: an exclusive ``flock`` on its transcript, until the returned
        descriptor is closed (or its process ends).

        Two writers would number their messages alike and each miss the other's turns.

        :raises SessionInUse: another open session holds it.
        :raises SessionNotFound: there is no such transcript.
        """
        path = self.path(session_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            raise self._not_found(session_id) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionInUse(f"session {session_id!r} is open elsewhere (another process or session); "
                               "close it there, or start a new session") from None
        return fd

    def read(self, session_id: str) -> TranscriptRead:
        return self.open(session_id).read()

    def history(self, session_id: str) -> SessionHistory:
        """The session replayed: the model's context after its last compaction, counters, usage."""
        return SessionHistory.from_entries(self.read(session_id).entries)

    def info(self, session_id: str) -> SessionInfo:
        read = self.read(session_id)
        return _summarise(session_id, self.path(session_id), read)

    def list(self) -> list[SessionInfo]:
        """Every session, most recently active first; unreadable names are ignored."""
        if not self.root.is_dir():
            return []
        infos = []
        for path in self.root.glob("*.jsonl"):
            session_id = path.stem
            if not _ID.fullmatch(session_id) or path.is_symlink() or not path.is_file():
                continue  # a link or a folder is no transcript this folder holds
            infos.append(_summarise(session_id, path, Transcript(path).read()))
        return sorted(infos, key=lambda info: (info.last_activity, info.id), reverse=True)


def _summarise(session_id: str, path: Path, read: TranscriptRead) -> SessionInfo:
    history = SessionHistory.from_entries(read.entries)
    stamps = [float(e["ts"]) for e in read.entries if isinstance(e.get("ts"), (int, float))]
    if not stamps:
        try:
            stamps = [path.stat().st_mtime]
        except OSError:
            stamps = [0.0]
    header = next((e for e in read.entries if e.get("type") == "session"), {})
    return SessionInfo(
        id=session_id,
        path=path,
        started=stamps[0],
        last_activity=max(stamps),
        messages=history.visible_messages,
        tokens=history.total_tokens,
        compactions=history.compaction_count,
        flushes=history.flush_count,
        channel=str(header.get("channel", "local")),
        skipped_lines=read.skipped,
    )
