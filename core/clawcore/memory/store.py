"""The SQLite file behind memory search: driver choice, schema, and vector storage.

The standard ``sqlite3`` module is used where it can load extensions; many
Python builds (pyenv, macOS) cannot, and there the ``sqlean`` driver, which
can, takes over. When sqlite-vec cannot be loaded at all the index still
works: vectors live in the embedding cache and are scored with numpy.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from clawcore.folders import make_folder
from clawcore.memory.fts import TOKENIZER, fts_text

__all__ = ["DATABASE_ERRORS", "SCHEMA_VERSION", "Store", "connect", "pack", "unpack"]

SCHEMA_VERSION = "1"
#: Page cache per connection (see :func:`connect`).
CACHE_KIB = 32 * 1024


def _database_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [sqlite3.DatabaseError]
    try:
        import sqlean

        errors.append(sqlean.DatabaseError)
    except ImportError:  # pragma: no cover - sqlean is a core dependency
        pass
    return tuple(errors)


#: What a broken or foreign file raises, whichever driver opened it.
DATABASE_ERRORS = _database_errors()


def pack(vector: Sequence[float] | np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


@dataclass
class Store:
    """An open index file: the connection and what it can do."""

    path: Path
    conn: Any
    driver: str
    vec: bool
    #: Why sqlite-vec is not in use ("" when it is).
    vec_problem: str

    # -- meta ----------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        try:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        except DATABASE_ERRORS as exc:
            if "no such table" in str(exc):
                return {}
            raise

    def set_meta(self, values: dict[str, str]) -> None:
        self.conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )

    # -- schema ----------------------------------------------------------------

    def create_schema(self, dims: int | None) -> None:
        """Create every table (idempotent); the vector table only with a provider and sqlite-vec."""
        c = self.conn
        c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        c.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, source TEXT NOT NULL, "
            "hash TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL)"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, "
            "source TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, "
            "hash TEXT NOT NULL, text TEXT NOT NULL)"
        )
        c.execute("CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path)")
        c.execute("CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash)")
        # Contentless: the text lives once, in ``chunks``; FTS5 keeps only its index
        # (and the document sizes BM25 needs). Rows are removed with FTS5's 'delete'
        # command, which takes the indexed text again (see :meth:`delete_fts`).
        c.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, content='', tokenize='{TOKENIZER}')"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS embedding_cache (provider TEXT NOT NULL, model TEXT NOT NULL, "
            "hash TEXT NOT NULL, dims INTEGER NOT NULL, vector BLOB NOT NULL, "
            "PRIMARY KEY (provider, model, hash))"
        )
        if dims and self.vec:
            c.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(embedding float[{int(dims)}])")

    def delete_fts(self, ids: Sequence[int]) -> None:
        """Remove these chunks from the FTS table; call before their ``chunks`` rows go.

        A contentless table forgets a row only when given the text it indexed,
        which :func:`fts_text` derives again from ``chunks.text``. An index
        written before the table was contentless (about to be rebuilt) takes a
        plain DELETE.
        """
        if not ids:
            return
        sql = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
        if sql is None or "content=''" not in sql[0]:
            self.conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
            return
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", batch).fetchall()
            self.conn.executemany(
                "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)",
                [(cid, fts_text(text)) for cid, text in rows],
            )

    def has_table(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    # -- vectors -------------------------------------------------------------

    def cached_vectors(self, provider: str, model: str, dims: int, hashes: Iterable[str]) -> dict[str, bytes]:
        """Cached vectors of these chunk hashes; only those of ``dims`` (a model can answer in several sizes)."""
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(
                f"SELECT hash, vector FROM embedding_cache WHERE provider = ? AND model = ? AND dims = ? "
                f"AND hash IN ({marks})",
                (provider, model, int(dims), *batch),
            )
            found.update(dict(rows.fetchall()))
        return found

    def close(self) -> None:
        try:
            self.conn.close()
        except DATABASE_ERRORS:  # pragma: no cover - closing a broken file
            pass


def _load_vec(conn: Any) -> str:
    """Load sqlite-vec into ``conn``; "" on success, else why not."""
    try:
        import sqlite_vec
    except ImportError as exc:
        return f"the sqlite-vec package is not installed ({exc}); pip install sqlite-vec"
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        conn.execute("SELECT vec_version()").fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure to load means: no vector tables here
        return f"sqlite-vec failed to load ({type(exc).__name__}: {exc})"
    return ""


def _driver_modules() -> list[tuple[str, ModuleType]]:
    drivers: list[tuple[str, ModuleType]] = []
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        drivers.append(("sqlite3", sqlite3))
    try:
        import sqlean

        drivers.append(("sqlean", sqlean))
    except ImportError:
        pass
    if not drivers or drivers[-1][1] is not sqlite3:
        drivers.append(("sqlite3", sqlite3))
    return drivers


def _set_wal(conn: Any, timeout_s: float) -> None:
    """``PRAGMA journal_mode = WAL``, waiting out another process that holds the new file.

    Switching to WAL takes an exclusive lock and SQLite does not call the busy handler
    for it: two processes creating the index at once saw "database is locked" at once.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:  # the driver's OperationalError (sqlite3 or sqlean)
            if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _match_side_files(path: Path) -> None:
    """Give ``-wal`` and ``-shm`` the index's own mode again.

    SQLite creates them with the database file's mode: one made while the index was read-only stays
    read-only after the user makes the index writable, and every later write fails on it.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    if not mode & stat.S_IWUSR:
        return
    for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            if stat.S_IMODE(side.stat().st_mode) != mode and side.stat().st_uid == os.geteuid():
                os.chmod(side, mode)


def connect(path: Path, *, busy_timeout_s: float = 30.0) -> Store:
    """Open (or create) the index file with the best driver that loads sqlite-vec.

    Tries the standard module first where it can load extensions, then
    sqlean; falls back to the standard module without vectors in SQLite.
    WAL mode lets searches read while a sync writes.

    :raises sqlite3.DatabaseError: (or the driver's equivalent) when the file is not a usable database.
    """
    make_folder(path.parent)
    # Created private before SQLite opens it (its -wal and -shm files take its mode): the index holds
    # the text of every memory file.
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    _match_side_files(path)
    problems: list[str] = []
    candidates = _driver_modules()
    for index, (name, module) in enumerate(candidates):
        conn = module.connect(str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        problem = _load_vec(conn) if hasattr(conn, "enable_load_extension") else (
            "this Python's sqlite3 cannot load extensions and no driver that can (sqlean.py) is installed"
        )
        last = index == len(candidates) - 1
        if problem and not last:
            problems.append(f"{name}: {problem}")
            conn.close()
            continue
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            _set_wal(conn, busy_timeout_s)
            conn.execute("PRAGMA synchronous = NORMAL")
            # Searches read the FTS doclists and vector chunks of much of the index;
            # a larger page cache (default 2 MB) keeps them between searches. No
            # mmap: with it, a search over corrupted pages answered empty instead
            # of raising the error that makes the index repair itself.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            conn.execute("PRAGMA temp_store = MEMORY")
        except BaseException:
            conn.close()
            raise
        return Store(path, conn, name, not problem, "; ".join([*problems, problem]) if problem else "")
    raise AssertionError("unreachable: the last driver always returns")  # pragma: no cover
