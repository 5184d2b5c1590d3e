"""Accumulating risk per session and conversation, with decay, the ladder and persistence.

Risk is kept per *key*: the session id, or ``session#conversation`` when a
channel carries several conversations in one session, so one conversation
cannot poison another. Each suspicious event adds its score; risk decays
exponentially (halving every half-life) instead of expiring at once; a lock
stays until an operator unlocks it. State is one JSON file written
atomically (temporary file + rename), re-read when another process (the
``clawcore prism unlock`` command) changed it.
"""

from __future__ import annotations

import enum
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clawcore_prism.settings import Thresholds

__all__ = ["RiskState", "RiskStore", "Step", "risk_key"]

STATE_FILE = "state.json"
_VERSION = 1


class Step(int, enum.Enum):
    """The escalation ladder, in order."""

    RECORD = 0
    WARN = 1
    CONFIRM = 2
    BLOCK = 3
    BLOCK_SUBAGENTS = 4
    LOCK = 5

    @classmethod
    def for_risk(cls, risk: float, thresholds: Thresholds) -> Step:
        if risk >= thresholds.lock:
            return cls.LOCK
        if risk >= thresholds.block_subagents:
            return cls.BLOCK_SUBAGENTS
        if risk >= thresholds.block:
            return cls.BLOCK
        if risk >= thresholds.confirm:
            return cls.CONFIRM
        if risk >= thresholds.warn:
            return cls.WARN
        return cls.RECORD


def risk_key(session_id: str, conversation_id: str = "") -> str:
    """The state key: the session, or session#conversation when they differ."""
    if conversation_id and conversation_id != session_id:
        return f"{session_id}#{conversation_id}"
    return session_id


@dataclass
class RiskState:
    """Everything PRISM remembers about one session (or conversation)."""

    session_id: str
    risk: float = 0.0
    updated: float = 0.0
    locked: bool = False
    tainted: bool = False
    credential_read: bool = False
    canary: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)

    def decayed(self, now: float, half_life_s: float) -> float:
        if self.risk <= 0 or half_life_s <= 0 or now <= self.updated:
            return self.risk
        return self.risk * 0.5 ** ((now - self.updated) / half_life_s)


class RiskStore:
    """All sessions' risk state for one ``$CLAWCORE_HOME``.

    :param directory: where ``state.json`` lives.
    :param half_life_s: decay half-life.
    :param clock: time source (seconds); the wall clock by default.
    """

    def __init__(self, directory: Path, half_life_s: float, *, clock: Callable[[], float] = time.time,
                 recent_events: int = 20) -> None:
        self.path = directory / STATE_FILE
        self.half_life_s = half_life_s
        self.clock = clock
        self.recent_events = recent_events
        self._states: dict[str, RiskState] = {}
        self._seen: tuple[int, int] | None = None

    # -- persistence -------------------------------------------------------------

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self) -> None:
        """Read the state file (missing = empty; unreadable = empty, the broken file kept aside)."""
        self._seen = self._stamp()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            states = {key: RiskState(**value) for key, value in data.get("sessions", {}).items()}
        except FileNotFoundError:
            states = {}
        except (OSError, ValueError, TypeError):
            broken = self.path.with_suffix(".broken")
            os.replace(self.path, broken)
            states = {}
        self._states = states

    def refresh(self) -> None:
        """Re-read the file when another process changed it since we last read or wrote it."""
        if self._stamp() != self._seen:
            self.load()

    def save(self) -> None:
        """Write the state atomically (temporary file in the same folder, then rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"version": _VERSION, "sessions": {k: asdict(v) for k, v in self._states.items()}}
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=1, sort_keys=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._seen = self._stamp()

    # -- access ----------------------------------------------------------------

    def get(self, key: str, session_id: str) -> RiskState:
        """The state of ``key``, created on first use."""
        state = self._states.get(key)
        if state is None:
            state = RiskState(session_id=session_id, updated=self.clock())
            self._states[key] = state
        return state

    def peek(self, key: str) -> RiskState | None:
        return self._states.get(key)

    def current(self, state: RiskState) -> float:
        """Risk now, decay applied."""
        return state.decayed(self.clock(), self.half_life_s)

    def add(self, state: RiskState, amount: float, event: Mapping[str, Any], thresholds: Thresholds) -> tuple[Step, Step]:
        """Add risk and an event; returns the ladder step before and after."""
        now = self.clock()
        before = self.step(state, thresholds)
        state.risk = state.decayed(now, self.half_life_s) + max(0.0, amount)
        state.updated = now
        self.note(state, event)
        after = Step.for_risk(state.risk, thresholds)
        if after is Step.LOCK:
            state.locked = True
        return before, self.step(state, thresholds)

    def note(self, state: RiskState, event: Mapping[str, Any]) -> None:
        state.events.append({"ts": round(self.clock(), 3), **event})
        del state.events[: max(0, len(state.events) - self.recent_events)]

    def step(self, state: RiskState, thresholds: Thresholds) -> Step:
        if state.locked:
            return Step.LOCK
        return Step.for_risk(self.current(state), thresholds)

    def canary(self, state: RiskState) -> str:
        if not state.canary:
            state.canary = "PRISM-" + secrets.token_hex(8)
        return state.canary

    def keys_of(self, session_id: str) -> list[str]:
        return [k for k, v in self._states.items() if v.session_id == session_id or k == session_id]

    def items(self) -> Iterator[tuple[str, RiskState]]:
        return iter(sorted(self._states.items()))

    def clear_session(self, session_id: str) -> int:
        keys = self.keys_of(session_id)
        for key in keys:
            del self._states[key]
        return len(keys)

    def unlock(self, session_id: str) -> int:
        """Unlock every key of a session and reset its risk; returns how many keys."""
        keys = self.keys_of(session_id)
        for key in keys:
            state = self._states[key]
            state.locked = False
            state.risk = 0.0
            state.updated = self.clock()
            self.note(state, {"kind": "unlock"})
        return len(keys)
