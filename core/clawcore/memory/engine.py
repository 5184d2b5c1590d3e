"""The memory engine: one workspace, one index file, sync and search.

The Markdown files are the truth; the SQLite file is derived from them and
can always be thrown away. Every write to the index happens under a
cross-process lock in short transactions, so a killed process leaves an
index that the next sync completes, and a search (in any process) reads a
consistent snapshot while a sync or a rebuild is running.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np

from clawcore.errors import MemoryAccessError
from clawcore.memory.chunking import CHUNKER_VERSION, Chunk, chunk_markdown, split_lines
from clawcore.memory.embeddings import ProviderChoice, choose_provider, embed_checked
from clawcore.memory.fts import FTS_SCHEME, fts_text, match_expression
from clawcore.memory.locking import IndexLock
from clawcore.memory.ranking import Candidate, cosine_from_l2, fuse, rank, snippet_for
from clawcore.memory.results import SearchResponse, SearchResult, SyncReport
from clawcore.memory.settings import MemorySettings
from clawcore.memory.sources import MemoryFile, discover, extra_path, listing, resolve_memory_path
from clawcore.memory.store import DATABASE_ERRORS, SCHEMA_VERSION, Store, connect, pack, unpack
from clawcore.security.secrets import redact
from clawcore.types import EmbeddingProvider

__all__ = ["Memory", "Progress"]

log = logging.getLogger("clawcore.memory")

#: ``progress(done, total)``: files examined so far out of those that changed on disk.
Progress = Callable[[int, int], None]

#: Meta keys whose change means the whole index must be rebuilt.
IDENTITY = ("schema", "fts", "provider", "model", "dims", "chunker", "chunkTokens", "chunkOverlap")
#: The part of it keyword search depends on: all that must match while no provider can start.
KEYWORD_IDENTITY = ("schema", "fts", "chunker", "chunkTokens", "chunkOverlap")
#: Index files up to this size get SQLite's integrity check when opened.
_CHECK_ON_OPEN_BYTES = 64 * 1024 * 1024
#: Longer queries are searched by their beginning (and the response says so): a question, not a document.
MAX_QUERY_CHARS = 4000


def _text(data: bytes) -> str:
    """A memory file's text: UTF-8 (bad bytes replaced), without a byte-order mark."""
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _is_corruption(exc: BaseException) -> bool:
    """True for errors that mean the file's contents are broken; False for ones about
    where it lives or who holds it (permissions, locks, a full disk), which a rebuild cannot fix."""
    text = str(exc).lower()
    environmental = ("unable to open", "locked", "readonly", "read-only", "permission", "disk is full", "busy",
                     "disk i/o error", "out of memory")
    return not any(s in text for s in environmental)


@dataclass
class _Counts:
    indexed: int = 0
    removed: int = 0
    embedded: int = 0
    cached: int = 0


class Memory:
    """A workspace's memory and its index. Build one with :func:`clawcore.memory.open_memory`.

    Safe to share between threads (calls are serialised); several processes
    may open the same index at once.
    """

    def __init__(
        self,
        workspace: Path,
        settings: MemorySettings,
        *,
        home: Path,
        index_path: Path,
        providers: Mapping[str, Callable[[Mapping[str, Any], Path], EmbeddingProvider]],
        broken: Sequence[str] = (),
    ) -> None:
        self.workspace = Path(workspace).expanduser().absolute()
        self.settings = settings
        self.home = home
        self.index_path = Path(index_path).expanduser().absolute()
        self._choice: ProviderChoice = choose_provider(settings.embeddings, providers, home, broken)
        self.provider: EmbeddingProvider | None = self._choice.provider
        self._lock = threading.RLock()
        self._file_lock = IndexLock(self.index_path.with_name(self.index_path.name + ".lock"))
        self._said: set[str] = set()
        self._notes: list[str] = []
        self._reported = 0  # notes already returned in a SyncReport
        self._store: Store | None = None
        self._inode: int | None = None
        self._matrix: tuple[int, np.ndarray, np.ndarray] | None = None
        self._discovered: tuple[tuple[object, ...], list[MemoryFile]] | None = None
        #: Folders the last discovery could not list: their indexed files are kept, not pruned.
        self._unreadable: tuple[str, ...] = ()
        self._closed = False
        #: Set when an unreadable index was moved aside: the next search rebuilds first.
        self._restore = False
        if self._choice.degraded:
            self._warn(self._choice.reason + "; searching by keyword until a provider works")
        try:
            self._open()
        except MemoryAccessError:
            if os.path.lexists(self.index_path):
                raise
            # No index yet, and none can be made here (a read-only home): reading memory files
            # still works; search, sync and status raise this again when they need the index.

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Close the index file; idempotent."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _warn(self, message: str) -> None:
        """Say a problem once per open memory: logged, and kept for reports and status."""
        message = redact(message)  # a provider's message may quote a key pasted into the wrong setting
        if message not in self._said:
            self._said.add(message)
            self._notes.append(message)
            log.warning("%s", message)

    def _desired(self) -> dict[str, str]:
        p = self.provider
        return {
            "schema": SCHEMA_VERSION,
            "fts": FTS_SCHEME,
            "provider": p.name if p else "none",
            "model": p.model if p else "",
            "dims": str(p.dims if p else 0),
            "chunker": CHUNKER_VERSION,
            "chunkTokens": str(self.settings.chunking.tokens),
            "chunkOverlap": str(self.settings.chunking.overlap),
        }

    def _matches(self, meta: Mapping[str, str]) -> bool:
        """True when the index was built with this memory's settings, so it needs no rebuild.

        A configured provider that could not start for this run (offline, a probe that failed)
        is no change of settings: the index keeps its vectors for when the provider is back, and
        keyword search uses it meanwhile. Only the keyword side has to match then.
        """
        return not self._changes(meta)

    def _changes(self, meta: Mapping[str, str]) -> list[str]:
        """What differs between the index and this memory's settings (``model: a → b``), for a rebuild's reason."""
        desired = self._desired()
        unavailable = self.provider is None and bool(self._choice.skipped)
        keys = KEYWORD_IDENTITY if unavailable else IDENTITY
        return [f"{k}: {meta.get(k) or 'none'} → {desired[k] or 'none'}" for k in keys if meta.get(k) != desired[k]]

    @property
    def store(self) -> Store:
        if self._closed:
            raise MemoryAccessError("this memory is closed; open it again with open_memory()")
        if self._store is None:
            self._open()
        assert self._store is not None
        return self._store

    def _open(self) -> None:
        path = self.index_path
        store: Store | None = None
        try:
            store = connect(path)
            # A full integrity check costs a read of the whole file: worth it on open for
            # ordinary indexes; a larger one is checked when a query or sync hits a bad page.
            if path.exists() and path.stat().st_size <= _CHECK_ON_OPEN_BYTES:
                row = store.conn.execute("PRAGMA quick_check(1)").fetchone()
                if row is None or row[0] != "ok":
                    raise _CorruptIndex(f"integrity check failed: {row[0] if row else 'no answer'}")
            meta = store.meta()
        except (*DATABASE_ERRORS, _CorruptIndex) as exc:  # type: ignore[misc]
            if store is not None:
                store.close()
            if not isinstance(exc, _CorruptIndex) and not _is_corruption(exc):
                raise self._unusable("cannot open", exc) from exc
            self._quarantine(exc)
            store, meta = self._fresh(), {}
        except OSError as exc:
            raise MemoryAccessError(
                f"cannot open the memory index {path}: {exc.strerror or exc}; check that its folder is writable"
            ) from exc
        if not meta:
            try:
                self._initialise(store)
            except DATABASE_ERRORS as exc:  # a database of someone else's tables, under our file name
                store.close()
                if not _is_corruption(exc):
                    raise self._unusable("cannot open", exc) from exc
                self._quarantine(exc)
                store = self._fresh()
                self._initialise(store)
        self._store = store
        self._inode = os.stat(path).st_ino
        self._matrix = None
        if store.vec_problem and self.provider is not None:
            self._warn(
                f"sqlite-vec is not available ({store.vec_problem}); vector search runs in numpy "
                "over the stored vectors (slower on large indexes)"
            )

    def _fresh(self) -> Store:
        """A new index file where a broken one was moved aside."""
        try:
            return connect(self.index_path)
        except DATABASE_ERRORS as exc:  # type: ignore[misc]
            raise self._unusable("cannot create", exc) from exc

    def _initialise(self, store: Store) -> None:
        """Create the schema of a new (empty) index."""
        with self._file_lock:
            self._begin(store)
            try:
                if not store.meta():  # another process may have initialised it meanwhile
                    store.create_schema(self.provider.dims if self.provider else None)
                    store.set_meta({**self._desired(), "vectors": "complete",
                                    "vecTable": "complete" if store.vec else "stale"})
                store.conn.execute("COMMIT")
            except BaseException:
                store.conn.execute("ROLLBACK")
                raise

    def _quarantine(self, exc: BaseException) -> None:
        """Move an unreadable index aside (nothing is deleted) so a fresh one is built."""
        path = self.index_path
        target = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            source = Path(str(path) + suffix)
            if source.exists():
                os.replace(source, Path(str(target) + suffix))
        self._restore = True
        self._warn(
            f"memory index {path} could not be read ({exc}); moved it to {target.name} "
            "and rebuilding it from the Markdown files"
        )

    def _check_file(self) -> None:
        """Reopen (and rebuild) when the index file was deleted or replaced under us."""
        try:
            inode = os.stat(self.index_path).st_ino
        except OSError:  # gone, or never made (its folder cannot be: the store property says why)
            inode = None
        if inode != self._inode:
            if self._inode is not None:
                self._warn(f"memory index {self.index_path} was deleted; rebuilding it from the Markdown files")
            if self._store is not None:
                self._store.close()
                self._store = None
            self._open()

    def _unusable(self, what: str, exc: BaseException) -> MemoryAccessError:
        """The one-line error for an index that works but cannot be used here (permissions, locks, a full disk)."""
        path = self.index_path
        stuck = [p.name for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
                 if p.exists() and not os.access(p, os.W_OK)]
        if stuck:
            hint = f"{', '.join(stuck)} cannot be written: make them writable, or delete {path.parent} to rebuild"
        else:
            hint = "check that its folder is writable"
        return MemoryAccessError(f"{what} the memory index {path}: {exc}; {hint}")

    @staticmethod
    def _begin(store: Store) -> None:
        store.conn.execute("BEGIN IMMEDIATE")

    # -- sync ------------------------------------------------------------------

    def sync(self, progress: Progress | None = None, *, force: bool = False) -> SyncReport:
        """Bring the index up to date with the Markdown files.

        Only files whose content changed are re-chunked, and only chunks not
        in the embedding cache are embedded. A change of provider, model,
        dims or chunking (or ``force``) rebuilds the index into a new file
        that replaces the old one's contents in one transaction.

        :param progress: called as ``progress(done, total)`` while files are indexed.
        :param force: rebuild everything (vectors still come from the cache).
        :raises LockTimeout: another process held the index for too long.
        """
        with self._lock:
            _ = self.store  # raises when closed
            with self._file_lock:
                return self._sync_locked(progress, force)

    def _sync_locked(self, progress: Progress | None, force: bool) -> SyncReport:
        started = time.monotonic()
        self._check_file()
        try:
            return self._sync_once(progress, force, started)
        except DATABASE_ERRORS as exc:
            if not _is_corruption(exc):
                raise self._unusable("cannot update", exc) from exc
            self.store.close()
            self._store = None
            self._quarantine(exc)
            self._open()
            return self._sync_once(progress, True, started)

    def _sync_once(self, progress: Progress | None, force: bool, started: float) -> SyncReport:
        self._restore = False
        store = self.store
        meta = store.meta()
        rebuilt = force or not self._matches(meta)
        if rebuilt:
            counts = self._rebuild(progress)
        else:
            counts = self._index_into(store, progress)
            self._complete_vectors(store, counts)
        self._matrix = None
        files, chunks = store.conn.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)"
        ).fetchone()
        return SyncReport(
            files=files,
            chunks=chunks,
            indexed=counts.indexed,
            removed=counts.removed,
            embedded=counts.embedded,
            cached=counts.cached,
            seconds=time.monotonic() - started,
            rebuilt=rebuilt,
            provider=self.provider.name if self.provider else None,
            warnings=self._unreported(),
        )

    def _unreported(self) -> tuple[str, ...]:
        fresh = tuple(self._notes[self._reported :])
        self._reported = len(self._notes)
        return fresh

    def _discover(self) -> list[MemoryFile]:
        """The memory files now; reuses the last answer while the folders list the same
        names (see :func:`listing`), so the check before each search stays cheap."""
        fingerprint = listing(self.workspace, self.settings.extra_paths)
        cached = self._discovered
        if fingerprint is not None and cached is not None and cached[0] == fingerprint:
            return cached[1]
        unreadable: list[str] = []
        files = discover(self.workspace, self.settings.extra_paths, unreadable)
        if not self.workspace.exists():
            self._warn(f"the workspace {self.workspace} does not exist; there is no memory to index or search "
                       "(create it, or check --home and the workspace setting)")
        for entry in self.settings.extra_paths:
            if not extra_path(self.workspace, entry).exists():
                self._warn(f"memory.extraPaths entry {entry} does not exist; nothing is indexed from it")
        self._unreadable = tuple(unreadable)
        self._discovered = (fingerprint, files) if fingerprint is not None and not unreadable else None
        return files

    def _index_into(self, store: Store, progress: Progress | None) -> _Counts:
        """Incremental sync of ``store`` (the live index or a rebuild's new file)."""
        counts = _Counts()
        conn = store.conn
        rows = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, hash, mtime_ns, size FROM files")}
        files = self._discover()
        present = {f.path for f in files}
        stale = []
        for f in files:
            try:
                st = f.real.stat()
            except OSError:
                continue
            row = rows.get(f.path)
            if row is None or (row[1], row[2]) != (st.st_mtime_ns, st.st_size):
                stale.append(f)
        for folder in self._unreadable:
            if folder == "." and not self.workspace.exists():
                continue  # said by discovery: it does not exist
            where = f"the workspace {self.workspace}" if folder == "." else f"the memory folder {folder}"
            self._warn(f"could not list {where}; its files stay indexed as they were")
        removed = [p for p in rows if p not in present
                   and not any(folder == "." or p.startswith(folder + "/") for folder in self._unreadable)]
        if removed:
            self._begin(store)
            try:
                for path in removed:
                    self._delete_file(store, path)
                store.conn.execute("COMMIT")
            except BaseException:
                store.conn.execute("ROLLBACK")
                raise
            counts.removed = len(removed)

        group: list[tuple[MemoryFile, os.stat_result, str, list[Chunk]]] = []
        touched: list[tuple[int, int, str]] = []
        size = 0
        for done, f in enumerate(stale, start=1):
            try:
                data = f.real.read_bytes()
                st = f.real.stat()
            except OSError as exc:
                self._warn(f"could not read memory file {f.path}: {exc}; skipped")
                continue
            digest = hashlib.sha256(data).hexdigest()
            row = rows.get(f.path)
            if row is not None and row[0] == digest:
                touched.append((st.st_mtime_ns, st.st_size, f.path))
            else:
                binary = b"\x00" in data  # a binary file under a .md name: its "text" would be replacement characters
                if binary:
                    self._warn(f"memory file {f.path} is not text (it holds NUL bytes); nothing of it is indexed")
                chunks = [] if binary else chunk_markdown(_text(data), self.settings.chunking)
                group.append((f, st, digest, chunks))
                size += len(chunks)
            # Written in groups of a few embedding batches: a killed sync loses at most one group.
            if size >= self.settings.batch_size * 4:
                self._write_group(store, group, counts)
                group, size = [], 0
            if progress is not None:
                progress(done, len(stale))
        if group:
            self._write_group(store, group, counts)
        if touched:
            self._begin(store)
            conn.executemany("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", touched)
            conn.execute("COMMIT")
        return counts

    def _delete_file(self, store: Store, path: str) -> None:
        conn = store.conn
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids:
            store.delete_fts(ids)
            if store.has_table("chunks_vec") and store.vec:
                conn.executemany("DELETE FROM chunks_vec WHERE rowid = ?", [(i,) for i in ids])
            conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def _embed_missing(self, store: Store, texts_by_hash: Mapping[str, str], counts: _Counts) -> tuple[dict[str, bytes], list[tuple[str, bytes]]]:
        """Vectors for these chunk hashes: from the cache, the rest from the provider.

        Returns ``(hash -> vector blob, new cache rows)``. A provider failure
        is reported once and leaves those chunks without vectors (keyword
        search still finds them; the next sync fills them in).
        """
        provider = self.provider
        if provider is None:
            if texts_by_hash and store.meta().get("provider", "none") != "none":
                # An index with vectors, its provider unavailable this run: these chunks get theirs when it is back.
                store.set_meta({"vectors": "partial"})
            return {}, []
        found = store.cached_vectors(provider.name, provider.model, provider.dims, texts_by_hash)
        counts.cached += len(found)
        missing = [h for h in texts_by_hash if h not in found]
        fresh: list[tuple[str, bytes]] = []
        batch = self.settings.batch_size
        try:
            for start in range(0, len(missing), batch):
                hashes = missing[start : start + batch]
                vectors = embed_checked(provider, [texts_by_hash[h] for h in hashes])
                for h, vector in zip(hashes, vectors, strict=True):
                    blob = pack(vector)
                    found[h] = blob
                    fresh.append((h, blob))
                counts.embedded += len(hashes)
        except Exception as exc:  # noqa: BLE001 - the provider's failure must not stop keyword indexing
            self._warn(
                f"embedding provider {provider.name!r} failed during sync ({type(exc).__name__}: {exc}); "
                "those chunks are searchable by keyword now and get vectors on the next sync"
            )
            store.set_meta({"vectors": "partial"})
        return found, fresh

    def _write_group(self, store: Store, group: list[tuple[MemoryFile, os.stat_result, str, list[Chunk]]], counts: _Counts) -> None:
        texts = {c.hash: c.text for _, _, _, chunks in group for c in chunks}
        vectors, fresh = self._embed_missing(store, texts, counts)
        provider = self.provider
        conn = store.conn
        use_vec = store.vec and store.has_table("chunks_vec")
        self._begin(store)
        try:
            if provider is not None and fresh:
                conn.executemany(
                    "INSERT OR REPLACE INTO embedding_cache(provider, model, hash, dims, vector) VALUES (?, ?, ?, ?, ?)",
                    [(provider.name, provider.model, h, provider.dims, blob) for h, blob in fresh],
                )
            for f, st, digest, chunks in group:
                self._delete_file(store, f.path)
                for chunk in chunks:
                    cur = conn.execute(
                        "INSERT INTO chunks(path, source, start_line, end_line, hash, text) VALUES (?, ?, ?, ?, ?, ?)",
                        (f.path, f.source, chunk.start_line, chunk.end_line, chunk.hash, chunk.text),
                    )
                    cid = cur.lastrowid
                    conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (cid, fts_text(chunk.text)))
                    blob = vectors.get(chunk.hash)
                    if use_vec and blob is not None:
                        conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)", (cid, blob))
                conn.execute(
                    "INSERT INTO files(path, source, hash, mtime_ns, size) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
                    "mtime_ns = excluded.mtime_ns, size = excluded.size",
                    (f.path, f.source, digest, st.st_mtime_ns, st.st_size),
                )
                counts.indexed += 1
            if provider is not None and not use_vec:
                store.set_meta({"vecTable": "stale"})
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _complete_vectors(self, store: Store, counts: _Counts) -> None:
        """Fill in what an earlier sync could not: vectors a failing provider skipped,
        and the sqlite-vec table when an earlier run had no sqlite-vec."""
        provider = self.provider
        if provider is None:
            return
        meta = store.meta()
        conn = store.conn
        if meta.get("vectors") == "partial":
            rows = conn.execute(
                "SELECT DISTINCT c.hash, c.text FROM chunks c LEFT JOIN embedding_cache e "
                "ON e.provider = ? AND e.model = ? AND e.hash = c.hash WHERE e.hash IS NULL",
                (provider.name, provider.model),
            ).fetchall()
            _, fresh = self._embed_missing(store, dict(rows), counts)
            self._begin(store)
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO embedding_cache(provider, model, hash, dims, vector) VALUES (?, ?, ?, ?, ?)",
                    [(provider.name, provider.model, h, provider.dims, blob) for h, blob in fresh],
                )
                if len(fresh) == len(rows):
                    store.set_meta({"vectors": "complete", "vecTable": "stale"})
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            meta = store.meta()
        if store.vec and meta.get("vecTable") != "complete":
            self._begin(store)
            try:
                store.create_schema(provider.dims)
                conn.execute("DELETE FROM chunks_vec")
                conn.execute(
                    "INSERT INTO chunks_vec(rowid, embedding) SELECT c.id, e.vector FROM chunks c "
                    "JOIN embedding_cache e ON e.provider = ? AND e.model = ? AND e.hash = c.hash",
                    (provider.name, provider.model),
                )
                store.set_meta({"vecTable": "complete"})
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _rebuild(self, progress: Progress | None) -> _Counts:
        """Build a complete index in a new file, then swap its contents in with one transaction.

        Until the swap commits, every reader (this process or another) sees
        the old index; a rebuild killed halfway leaves the old index intact
        and its half-built file is discarded by the next rebuild.
        """
        staging = self.index_path.with_name(self.index_path.name + ".rebuild")
        for suffix in ("", "-wal", "-shm"):
            Path(str(staging) + suffix).unlink(missing_ok=True)
        dims = self.provider.dims if self.provider else None
        new = connect(staging)
        try:
            new.conn.execute("BEGIN IMMEDIATE")
            new.create_schema(dims)
            new.set_meta({**self._desired(), "vectors": "complete",
                          "vecTable": "complete" if new.vec else "stale"})
            new.conn.execute("COMMIT")
            # Vectors already computed (any provider, any model) carry over.
            new.conn.execute("ATTACH DATABASE ? AS old", (str(self.index_path),))
            try:
                if new.conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'embedding_cache'").fetchone():
                    new.conn.execute("INSERT OR IGNORE INTO main.embedding_cache SELECT * FROM old.embedding_cache")
            finally:
                new.conn.execute("DETACH DATABASE old")
            counts = self._index_into(new, progress)
            self._complete_vectors(new, counts)
            new.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            new.close()
        self._swap_in(staging, dims)
        for suffix in ("", "-wal", "-shm"):
            Path(str(staging) + suffix).unlink(missing_ok=True)
        return counts

    def _swap_in(self, staging: Path, dims: int | None) -> None:
        store = self.store
        conn = store.conn
        conn.execute("ATTACH DATABASE ? AS fresh", (str(staging),))
        try:
            self._begin(store)
            try:
                conn.execute("DROP TABLE IF EXISTS main.chunks_vec")
                conn.execute("DROP TABLE IF EXISTS main.chunks_fts")
                for table in ("chunks", "files", "meta"):
                    conn.execute(f"DELETE FROM main.{table}")
                store.create_schema(dims)
                conn.execute("INSERT INTO main.files SELECT * FROM fresh.files")
                conn.execute("INSERT INTO main.chunks SELECT * FROM fresh.chunks")
                # The FTS table keeps no text to copy: index the chunks again, in batches.
                last = 0
                while True:
                    rows = conn.execute(
                        "SELECT id, text FROM main.chunks WHERE id > ? ORDER BY id LIMIT 1000", (last,)
                    ).fetchall()
                    if not rows:
                        break
                    conn.executemany(
                        "INSERT INTO main.chunks_fts(rowid, text) VALUES (?, ?)",
                        [(cid, fts_text(text)) for cid, text in rows],
                    )
                    last = rows[-1][0]
                has_vec = conn.execute("SELECT 1 FROM fresh.sqlite_master WHERE name = 'chunks_vec'").fetchone()
                if store.vec and dims and has_vec:
                    conn.execute(
                        "INSERT INTO main.chunks_vec(rowid, embedding) SELECT rowid, embedding FROM fresh.chunks_vec"
                    )
                conn.execute("INSERT OR IGNORE INTO main.embedding_cache SELECT * FROM fresh.embedding_cache")
                conn.execute("INSERT INTO main.meta SELECT * FROM fresh.meta")
                if not (store.vec and has_vec) and dims:
                    store.set_meta({"vecTable": "stale"})
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute("DETACH DATABASE fresh")

    def _needs_sync(self) -> bool:
        """Cheap check: did any memory file appear, vanish, or change mtime or size?"""
        store = self.store
        meta = store.meta()
        if not self._matches(meta):
            return True
        if self.provider is not None and store.vec and meta.get("vecTable") != "complete":
            return True  # vectors stored without sqlite-vec earlier: fill its table now
        rows = {r[0]: (r[1], r[2]) for r in store.conn.execute("SELECT path, mtime_ns, size FROM files")}
        files = self._discover()
        if len(files) != len(rows):
            return True
        for f in files:
            try:
                st = os.stat(f.real)
            except OSError:
                return True
            if rows.get(f.path) != (st.st_mtime_ns, st.st_size):
                return True
        return False

    # -- search ----------------------------------------------------------------

    def search(
        self,
        query: str,
        max_results: int | None = None,
        min_score: float | None = None,
        *,
        keyword: bool = True,
        vector: bool = True,
    ) -> SearchResponse:
        """Search memory by keyword (BM25) and meaning (vectors), fused and cited.

        Syncs first when files changed on disk (``memory.sync.onSearch``).
        When the query cannot be embedded the answer is keyword-only and
        says so (``mode == "fts-only"``, ``reason``).

        :param max_results: default ``memory.search.maxResults``.
        :param min_score: default ``memory.search.minScore``.
        :param keyword: False skips BM25 (for measuring vector search alone).
        :param vector: False skips vectors (for measuring BM25 alone).
        :raises MemoryAccessError: an empty query or an out-of-range limit.
        """
        if not isinstance(query, str) or not query.strip():
            raise MemoryAccessError("memory search needs a non-empty query")
        s = self.settings.search
        k = s.max_results if max_results is None else max_results
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise MemoryAccessError(f"maxResults must be an integer from 1 to 100, got {max_results!r}")
        floor = s.min_score if min_score is None else min_score
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor < math.inf:
            raise MemoryAccessError(f"minScore must be a number of at least 0, got {min_score!r}")
        query = query.strip()
        response = self._search_repairing(query[:MAX_QUERY_CHARS], k, float(floor), keyword, vector)
        if len(query) > MAX_QUERY_CHARS:
            note = f"the query is longer than {MAX_QUERY_CHARS} characters: only its beginning was searched"
            response = replace(response, warnings=(*response.warnings, note))
        return response

    def _search_repairing(self, query: str, k: int, floor: float, keyword: bool, vector: bool) -> SearchResponse:
        """:meth:`_search`, with a corrupt index found on the way moved aside, rebuilt and asked again."""
        with self._lock:
            try:
                return self._search(query, k, floor, keyword, vector)
            except DATABASE_ERRORS as exc:
                if not _is_corruption(exc):
                    raise self._unusable("cannot search", exc) from exc
                with self._file_lock:
                    self.store.close()
                    self._store = None
                    self._quarantine(exc)
                    self._open()
                    self._sync_locked(None, True)
                response = self._search(query, k, floor, keyword, vector)
                note = self._notes[-1] if self._notes else ""
                return replace(response, warnings=tuple(dict.fromkeys((*response.warnings, note)))) if note else response

    def _search(self, query: str, k: int, floor: float, keyword: bool, vector: bool) -> SearchResponse:
        s = self.settings.search
        warnings = self._sync_before_search() if self.settings.sync_on_search or self._restore else []
        store = self.store
        meta = store.meta()
        wanted = max(s.candidates, k * s.per_file * 4)
        candidates: dict[int, Candidate] = {}
        # One keyword query serves twice: its top ``wanted`` are candidates, the longer
        # list gives BM25 scores to chunks that only the vector search found.
        extended = self._bm25(store, query, wanted * 4, warnings) if keyword else {}
        text_scores = dict(sorted(extended.items(), key=lambda item: -item[1])[:wanted])
        self._fetch(store, text_scores, candidates)
        vector_scores: dict[int, float] = {}
        mode = "fts-only"
        reason = ""
        provider = self.provider
        if vector:
            if provider is None:
                reason = self._choice.reason
            elif not self._matches(meta):
                # A sync on search would be rebuilding it now; without one it waits for `memory index`.
                reason = (
                    f"the index is being rebuilt for provider {provider.name!r} ({provider.model}); "
                    "answered by keyword search from the current index meanwhile"
                ) if self.settings.sync_on_search else (
                    f"the index was built for another embedding provider than {provider.name!r} "
                    f"({provider.model}); answered by keyword search until `clawcore memory index` rebuilds it"
                )
                warnings.append(reason)
            else:
                try:
                    [qv] = embed_checked(provider, [query])
                except Exception as exc:  # noqa: BLE001 - the provider's failure must not fail the search
                    reason = (
                        f"embedding provider {provider.name!r} failed for this query "
                        f"({type(exc).__name__}: {exc}); answered by keyword search"
                    )
                    warnings.append(reason)
                else:
                    query_vector = np.asarray(qv, dtype=np.float32)
                    vector_scores = self._knn(store, query_vector, wanted, candidates)
                    mode = "hybrid"
                    if keyword:
                        # Score the union exactly: a chunk found by one search gets its
                        # real score from the other, not a zero for being outside its top list.
                        self._complete_vector(store, query_vector, text_scores, vector_scores)
                        self._complete_text(extended, vector_scores, text_scores)
        fused = fuse(text_scores, vector_scores, s)
        ranked = rank(candidates, fused, s, max_results=k, min_score=floor)
        results = []
        for candidate, score in ranked:
            snippet, _ = snippet_for(candidate.text, query)
            results.append(
                SearchResult(candidate.path, candidate.start_line, candidate.end_line, score, snippet, candidate.source)
            )
        return SearchResponse(
            query=query,
            results=tuple(results),
            mode=mode,  # type: ignore[arg-type]
            provider=provider.name if provider and mode == "hybrid" else None,
            # Provider messages reach the model through memory_search: never a credential in them.
            reason=redact(reason),
            warnings=tuple(dict.fromkeys(map(redact, warnings))),
        )

    def _sync_before_search(self) -> list[str]:
        try:
            self._check_file()
            if not self._needs_sync():
                return list(self._unreported())  # what the look for changes found to say (a missing workspace)
        except DATABASE_ERRORS:
            pass  # a broken file: let sync repair it below
        if not self._file_lock.acquire(timeout_s=0):
            return ["the memory index is being updated by another process; answered from the index as it is"]
        try:
            report = self._sync_locked(None, False)
        except Exception as exc:  # noqa: BLE001 - a failed refresh must not fail the search
            return [f"could not refresh the memory index ({type(exc).__name__}: {exc}); answered from the index as it is"]
        finally:
            self._file_lock.release()
        return list(report.warnings)

    def _fetch(self, store: Store, ids: Iterable[int], into: dict[int, Candidate]) -> None:
        wanted = [i for i in ids if i not in into]
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in store.conn.execute(
                f"SELECT id, path, source, start_line, end_line, text FROM chunks WHERE id IN ({marks})", batch
            ):
                into[row[0]] = Candidate(*row)

    def _bm25(self, store: Store, query: str, limit: int, warnings: list[str]) -> dict[int, float]:
        """BM25 scores (higher is better) of the best ``limit`` chunks for ``query``."""
        expression = match_expression(query)
        if expression is None:
            return {}
        try:
            rows = store.conn.execute(
                # ``rank`` is bm25(chunks_fts), computed once per match for the ORDER BY;
                # selecting bm25() as well would compute it again for every row returned.
                "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, limit),
            ).fetchall()
        except DATABASE_ERRORS as exc:
            if _is_corruption(exc) and not str(exc).startswith("fts5:"):
                raise  # the table is broken, not the query: search() repairs the index and asks again
            warnings.append(f"keyword search failed for this query ({exc})")  # never expected: terms are quoted
            return {}
        return {int(rowid): -float(score) for rowid, score in rows}

    def _complete_vector(self, store: Store, query: np.ndarray, text_scores: Mapping[int, float],
                         vector_scores: dict[int, float]) -> None:
        provider = self.provider
        missing = [cid for cid in text_scores if cid not in vector_scores]
        if provider is None or not missing:
            return
        marks = ",".join("?" * len(missing))
        hashes = dict(store.conn.execute(f"SELECT id, hash FROM chunks WHERE id IN ({marks})", missing).fetchall())
        vectors = store.cached_vectors(provider.name, provider.model, provider.dims, hashes.values())
        for cid, digest in hashes.items():
            blob = vectors.get(digest)
            if blob is not None:
                vector_scores[int(cid)] = float(unpack(blob) @ query)

    @staticmethod
    def _complete_text(extended: Mapping[int, float], vector_scores: Mapping[int, float],
                       text_scores: dict[int, float]) -> None:
        """BM25 scores of vector hits from the longer keyword list; a chunk not on it
        scores below every listed one, and 0 is close enough for fusion."""
        for cid in vector_scores:
            if cid not in text_scores and cid in extended:
                text_scores[cid] = extended[cid]

    def _knn(self, store: Store, query: np.ndarray, limit: int, into: dict[int, Candidate]) -> dict[int, float]:
        meta = store.meta()
        if store.vec and meta.get("vecTable") == "complete" and store.has_table("chunks_vec"):
            rows = store.conn.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?",
                (pack(query), min(limit, 4096)),
            ).fetchall()
            # A vector stored with NaN (by a provider before its vectors were checked) has no distance.
            scores = {int(rowid): cosine_from_l2(float(d)) for rowid, d in rows if d is not None and math.isfinite(d)}
        else:
            ids, matrix = self._vector_matrix(store)
            if not len(ids):
                return {}
            sims = np.nan_to_num(matrix @ query, nan=-np.inf)
            top = np.argsort(-sims)[:limit] if len(sims) <= limit else np.argpartition(-sims, limit)[:limit]
            scores = {int(ids[i]): float(sims[i]) for i in top if math.isfinite(sims[i])}
        self._fetch(store, scores, into)
        return scores

    def _vector_matrix(self, store: Store) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk's vector from the embedding cache (numpy scoring without sqlite-vec),
        reloaded only when the index changed."""
        provider = self.provider
        assert provider is not None
        version = store.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._matrix is not None and self._matrix[0] == version:
            return self._matrix[1], self._matrix[2]
        rows = store.conn.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embedding_cache e "
            "ON e.provider = ? AND e.model = ? AND e.hash = c.hash",
            (provider.name, provider.model),
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = (
            np.vstack([unpack(r[1]) for r in rows]) if rows else np.zeros((0, provider.dims), dtype=np.float32)
        )
        self._matrix = (version, ids, matrix)
        return ids, matrix

    # -- reading -----------------------------------------------------------------

    def get(self, path: str, from_line: int = 1, lines: int | None = None) -> str:
        """The text of a memory file, from ``from_line`` (1-based) for ``lines`` lines (default: to the end).

        :raises MemoryAccessError: the path is not a memory file of this
            workspace (traversal, absolute paths and symlinks out of the
            workspace included) or the range is invalid.
        """
        if isinstance(from_line, bool) or not isinstance(from_line, int) or from_line < 1:
            raise MemoryAccessError(f"from must be a line number of at least 1, got {from_line!r}")
        if lines is not None and (isinstance(lines, bool) or not isinstance(lines, int) or lines < 1):
            raise MemoryAccessError(f"lines must be a positive number of lines, got {lines!r}")
        memory_file = resolve_memory_path(path, self._discover(), self.workspace)
        try:
            data = memory_file.real.read_bytes()
        except OSError as exc:
            raise MemoryAccessError(f"cannot read memory file {memory_file.path}: {exc.strerror}") from exc
        if b"\x00" in data:
            raise MemoryAccessError(f"{memory_file.path} is not text (it holds NUL bytes)")
        text = _text(data)
        all_lines = split_lines(text)
        if from_line > max(len(all_lines), 1):
            raise MemoryAccessError(
                f"{memory_file.path} has {len(all_lines)} lines; from={from_line} is past the end"
            )
        end = len(all_lines) if lines is None else from_line - 1 + lines
        return "\n".join(all_lines[from_line - 1 : end])

    def status(self) -> dict[str, Any]:
        """What the index holds and how search will run, for ``clawcore memory status``."""
        with self._lock:
            store = self.store
            meta = store.meta()
            files, chunks = store.conn.execute(
                "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)"
            ).fetchone()
            cached = store.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
            provider = self.provider
            changes = self._changes(meta)
            if provider is None:
                vector_store = "none"
            elif store.vec and meta.get("vecTable") == "complete":
                vector_store = "sqlite-vec"
            else:
                vector_store = "numpy"
            try:
                dirty = self._needs_sync()
            except DATABASE_ERRORS:
                dirty = True
            return {
                "workspace": str(self.workspace),
                "index": str(self.index_path),
                "files": files,
                "chunks": chunks,
                "cachedEmbeddings": cached,
                "mode": "hybrid" if provider is not None and not changes else "fts-only",
                "provider": provider.name if provider else None,
                "model": provider.model if provider else None,
                "dims": provider.dims if provider else None,
                "reason": self._choice.reason,
                "skippedProviders": list(self._choice.skipped),
                "vectorStore": vector_store,
                "driver": store.driver,
                "sqliteVec": store.vec,
                "vectors": meta.get("vectors", "complete"),
                "chunking": {"tokens": self.settings.chunking.tokens, "overlap": self.settings.chunking.overlap},
                "pendingRebuild": bool(changes),
                "rebuildBecause": changes,
                "dirty": dirty,
                "warnings": list(self._notes),
            }


class _CorruptIndex(Exception):
    """The index file opened but failed SQLite's integrity check."""
