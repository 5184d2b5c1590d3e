"""Accumulating risk per session and conversation, with decay, the ladder and persistence.

Risk is kept per *key*: the session id, or ``session#conversation`` when a
channel carries several conversations in one session, so one conversation
cannot poison another. Each suspicious event adds its score; risk decays
exponentially (halving every half-life) instead of expiring at once; a lock
stays until an operator unlocks it. State is an SQLite database with one
row per key: an event rewrites its own row, not every session's, and
SQLite's locking keeps the gateway and the ``clawcore prism unlock``
command from overwriting each other's rows. Another process's commit is
seen through ``PRAGMA data_version`` and the cache re-read.
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from clawcore.errors import ClawcoreError
from clawcore.folders import make_folder

from clawcore_prism.settings import Thresholds

__all__ = ["RiskState", "RiskStore", "Step", "risk_key"]

STATE_FILE = "state.db"
#: A canary token is this prefix and 16 random hex digits.
CANARY_PREFIX = "PRISM-"
#: Risk below this is as good as none: a closed session's key is forgotten.
SPENT = 0.01
#: The JSON file earlier versions kept; imported once into :data:`STATE_FILE`, then renamed ``.imported``.
LEGACY_FILE = "state.json"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS risk "
           "(key TEXT PRIMARY KEY, session_id TEXT NOT NULL, state TEXT NOT NULL)")


class Step(int, enum.Enum):
    """The escalation ladder, in order."""

    RECORD = 0
    WARN = 1
    CONFIRM = 2
    BLOCK = 3
    BLOCK_SUBAGENTS = 4
    LOCK = 5

    @property
    def label(self) -> str:
        """The step as the config and the docs spell it (``blockSubagents``)."""
        first, *rest = self.name.lower().split("_")
        return first + "".join(part.title() for part in rest)

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
    #: The store's key (``session`` or ``session#conversation``).
    key: str = ""
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


_UNREADABLE_EVENT = {"ts": 0.0, "kind": "unreadable"}
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "risk": (int, float), "updated": (int, float), "locked": (bool,), "tainted": (bool,),
    "credential_read": (bool,), "canary": (str,), "events": (list,),
}


def _unreadable(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite said the file is no database or a corrupt one (not busy, locked or unopenable)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _parse_state(key: str, session_id: str, raw: str, now: float) -> RiskState:
    """A row's state; fields a later version added are ignored; anything unreadable reads as locked."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise TypeError("not an object")
        known = {name: data[name] for name in _FIELD_TYPES if name in data}
        for name, value in known.items():
            if not isinstance(value, _FIELD_TYPES[name]) or (isinstance(value, bool) and bool not in _FIELD_TYPES[name]):
                raise ValueError(f"{name} has the wrong type")
        if not all(isinstance(event, dict) for event in known.get("events", [])):
            raise ValueError("events must be objects")
        if not all(math.isfinite(known.get(name, 0.0)) for name in ("risk", "updated")):
            raise ValueError("risk and updated must be finite")  # NaN risk would compare as no risk at all
        return RiskState(session_id=session_id, key=key, **known)
    except (ValueError, TypeError):
        # Deny on doubt: a session whose state cannot be read may have been locked.
        return RiskState(session_id=session_id, key=key, locked=True, updated=now, events=[dict(_UNREADABLE_EVENT)])


class RiskStore:
    """All sessions' risk state for one ``$CLAWCORE_HOME``, cached in memory, one row per key on disk.

    The database is created on the first write, so a process that only reads (a dry-run scan, ``status``)
    leaves no file behind. Callers serialise access (the monitor's lock).

    :param directory: where ``state.db`` lives.
    :param half_life_s: decay half-life.
    :param clock: time source (seconds); the wall clock by default.
    :param read_only: only read (``clawcore prism status``): nothing is created, imported or moved aside.
    """

    #: How long a hook waits for another process's transaction before it fails closed.
    busy_timeout_s: ClassVar[float] = 5.0

    def __init__(self, directory: Path, half_life_s: float, *, clock: Callable[[], float] = time.time,
                 recent_events: int = 20, read_only: bool = False) -> None:
        self.path = directory / STATE_FILE
        self.half_life_s = half_life_s
        self.clock = clock
        self.recent_events = recent_events
        self.read_only = read_only
        self._states: dict[str, RiskState] = {}
        self._db: sqlite3.Connection | None = None
        self._version: int | None = None

    # -- persistence -------------------------------------------------------------

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._db is not None:
            return self._db
        if self.read_only:
            if not self.path.exists():
                return None
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=self.busy_timeout_s,
                                       isolation_level=None, check_same_thread=False)
            return self._db
        if not create and not self.path.exists() and not (self.path.parent / LEGACY_FILE).exists():
            return None
        make_folder(self.path.parent)
        # Created 0600 before SQLite opens it: its -wal and -shm files take that mode (canaries are secrets).
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        db = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL under WAL: a commit survives a crash of this process; a power cut may lose the last ones.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            db.execute("SELECT count(*) FROM risk").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        self._db = db
        self._import_legacy(db)
        return db

    def _import_legacy(self, db: sqlite3.Connection) -> None:
        legacy = self.path.parent / LEGACY_FILE
        try:
            sessions = json.loads(legacy.read_text(encoding="utf-8")).get("sessions", {})
            states = [RiskState(**{**value, "key": key}) for key, value in sessions.items()]
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, AttributeError):
            os.replace(legacy, legacy.with_suffix(".unreadable"))  # kept for the operator; see status
            return
        with db:
            db.executemany("INSERT OR IGNORE INTO risk VALUES (?, ?, ?)",
                           [(st.key, st.session_id, json.dumps(vars(st))) for st in states])
        os.replace(legacy, legacy.with_suffix(".imported"))

    def load(self) -> None:
        """Read every row.

        No database is no state. A file that is no SQLite database, or a corrupt one, is moved aside to
        ``state.broken`` and every session starts afresh (``clawcore prism status`` says so while that file
        exists). A database that is busy (locked by another process) or cannot be opened is left as it is:
        its locks are still in it. A row that does not parse is one session in doubt: it is read as locked,
        and its row is left as it is until an operator unlocks the session.

        :raises ClawcoreError: when the state cannot be read now (a one-line reason): the state folder cannot
            be opened, the database is busy or cannot be opened, or (read-only) it is unreadable.
        """
        folder = self.path.parent
        existing = next(p for p in (folder, *folder.parents) if p.exists() or p == p.parent)
        if not existing.is_dir():  # nothing could ever be saved: say so now, not at the first write
            raise ClawcoreError(f"prism state {self.path}: {existing} is not a folder; fix prism.stateDir")
        try:
            db = self._connect(create=False)
            rows = self._rows(db) if db else []
            self._version = db.execute("PRAGMA data_version").fetchone()[0] if db else None
        except sqlite3.DatabaseError as exc:
            self.close()
            if self.read_only or not _unreadable(exc):
                # Busy, or not to be touched: its locks are still in it, so nothing is moved and no hook allows.
                foreign = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_ERROR
                raise ClawcoreError(f"prism state {self.path}: {exc}" + (
                    "" if _unreadable(exc) else
                    "; it holds no state this version reads: move it aside to start afresh (its locks are lost)"
                    if foreign else "; every hook is denied until it can be read")) from None
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(f"{self.path}{suffix}", f"{self.broken_path}{suffix}")
            rows = []
        except OSError as exc:
            self.close()
            raise ClawcoreError(f"prism state {self.path}: {exc.strerror or exc}") from None
        self._states = {key: _parse_state(key, session_id, raw, self.clock()) for key, session_id, raw in rows}

    def _rows(self, db: sqlite3.Connection) -> list[tuple[str, str, str]]:
        if self.read_only and not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'risk'").fetchone():
            return []  # a database of other tables: the writer adds the table at its first write
        return db.execute("SELECT key, session_id, state FROM risk").fetchall()

    @property
    def broken_path(self) -> Path:
        """Where an unreadable database is moved."""
        return self.path.with_suffix(".broken")

    def problems(self) -> list[str]:
        """What the operator should know about the state: unreadable files kept aside, sessions in doubt."""
        found = [f"{path} could not be read and was set aside; the sessions it held started afresh"
                 for path in (self.broken_path, self.path.parent / (Path(LEGACY_FILE).stem + ".unreadable"))
                 if path.exists()]
        if self.read_only and (self.path.parent / LEGACY_FILE).exists():
            found.append(f"{self.path.parent / LEGACY_FILE} of an earlier version is not shown; "
                         "it is imported when the gateway next starts")
        found += [f"session {state.session_id!r}: its saved state could not be read; locked until unlocked"
                  for _, state in self.items()
                  if state.locked and any(event.get("kind") == "unreadable" for event in state.events)]
        return found

    def refresh(self) -> None:
        """Re-read the rows when another process committed since we last read (``PRAGMA data_version``)."""
        db = self._db
        if db is None:
            # Opened by load, which knows a busy database from an unreadable one.
            if self._version is not None or self.path.exists() or \
                    (not self.read_only and (self.path.parent / LEGACY_FILE).exists()):
                self.load()
            return
        try:
            version = db.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.DatabaseError:
            version = None
        if version != self._version:
            self.load()

    def save(self, *states: RiskState) -> None:
        """Write the rows of ``states`` (each one transaction, a few hundred microseconds)."""
        if self.read_only:
            raise ClawcoreError(f"prism state {self.path}: opened read-only")
        try:
            db = self._connect(create=True)
            assert db is not None
            with db:
                db.executemany("INSERT OR REPLACE INTO risk VALUES (?, ?, ?)",
                               [(st.key, st.session_id, json.dumps(vars(st))) for st in states])
        except sqlite3.DatabaseError as exc:  # busy past the timeout: the hook fails closed, with a reason
            raise ClawcoreError(f"prism state {self.path}: {exc}") from None

    def _delete(self, keys: list[str]) -> None:
        db = self._connect(create=False)
        if db is not None and keys:
            with db:
                db.executemany("DELETE FROM risk WHERE key = ?", [(key,) for key in keys])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._version = None

    # -- access ----------------------------------------------------------------

    def get(self, key: str, session_id: str) -> RiskState:
        """The state of ``key``, created on first use."""
        state = self._states.get(key)
        if state is None:
            state = RiskState(session_id=session_id, key=key, updated=self.clock())
            self._states[key] = state
        return state

    def peek(self, key: str) -> RiskState | None:
        return self._states.get(key)

    def current(self, state: RiskState) -> float:
        """Risk now, decay applied."""
        return state.decayed(self.clock(), self.half_life_s)

    def add(self, state: RiskState, amount: float, event: Mapping[str, Any],
            thresholds: Thresholds) -> tuple[Step, Step]:
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
            state.canary = CANARY_PREFIX + secrets.token_hex(8)
        return state.canary

    def keys_of(self, session_id: str) -> list[str]:
        return [k for k, v in self._states.items() if v.session_id == session_id or k == session_id]

    def items(self) -> Iterator[tuple[str, RiskState]]:
        return iter(sorted(self._states.items()))

    def forget_spent(self, session_id: str) -> int:
        """Forget the keys of a session that hold nothing any more; returns how many were forgotten.

        A key holds something while it is locked, tainted, has read a credential, or its risk has not
        decayed below :data:`SPENT`. A closed session can be resumed (a gateway opens one per call), so
        what it holds outlives the close: a lock until an operator unlocks it, risk until it decays.
        """
        now = self.clock()
        keys = [key for key in self.keys_of(session_id)
                if not (self._states[key].locked or self._states[key].tainted or self._states[key].credential_read)
                and self._states[key].decayed(now, self.half_life_s) < SPENT]
        for key in keys:
            del self._states[key]
        self._delete(keys)
        return len(keys)

    def unlock(self, session_id: str) -> int:
        """Unlock every key of a session, reset its risk, taint and credential mark, and save; returns how many.

        The canary is renewed too: the one a lock followed may have been written down on the way
        (the audit log keeps the arguments of a refused call).
        """
        states = [self._states[key] for key in self.keys_of(session_id)]
        for state in states:
            state.locked = False
            state.risk = 0.0
            # The operator has looked at the session: what it read and took in no longer holds it back.
            state.tainted = state.credential_read = False
            state.canary = ""
            state.updated = self.clock()
            self.note(state, {"kind": "unlock"})
        if states:
            self.save(*states)
        return len(states)
