"""Sessions: one append-only JSONL transcript per session under ``$CLAWCORE_HOME/sessions/``.

``SessionStore(home).list()`` describes every session; the agent loop
(:mod:`clawcore.agent.loop`) writes the transcripts and replays them with
:class:`SessionHistory` when a session is resumed.
"""

from __future__ import annotations

from clawcore.sessions.history import SessionHistory
from clawcore.sessions.store import InvalidSessionId, SessionInfo, SessionInUse, SessionNotFound, SessionStore
from clawcore.sessions.transcript import Transcript, TranscriptRead, message_from_entry, message_to_entry

__all__ = [
    "InvalidSessionId",
    "SessionHistory",
    "SessionInUse",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "Transcript",
    "TranscriptRead",
    "message_from_entry",
    "message_to_entry",
]
