"""The hash-chained, append-only JSONL audit log.

One record per line, canonical JSON (sorted keys, no spaces, UTF-8)::

    {"data":{...},"hash":"…","kind":"tool.decision","prev":"…","seq":7,"session":"s1","ts":"2026-…Z"}

``hash`` is the SHA-256 of the canonical record without ``hash`` and ``mac``;
``prev`` is the previous record's ``hash`` (64 zeros for ``seq`` 1). With
``hmac`` on, ``mac`` is ``"<key id>:<HMAC-SHA256(key, hash)>"``.

Every ``checkpointEvery`` records, on close and on demand, a checkpoint
``{size, head, ts, key}`` signed with Ed25519 is appended to a separate file
(``audit.checkpoints.jsonl`` next to ``audit.jsonl``). A verifier needs only
the public keys (``<keys>/<key id>.pub``).

Writers in several processes are serialised with ``fcntl.flock`` on the log
file; a writer re-reads the tail when another process appended since its
last write. A torn last line (a crash in the middle of a write) is detected
by every reader and repaired by the next writer: a complete record missing
only its newline is kept, anything else is moved to ``audit.jsonl.torn``
and an ``audit.recovered`` record says how many bytes were set aside.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import fcntl
import hashlib
import hmac as hmac_module
import json
import math
import os
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Self

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from clawcore.errors import ClawcoreError
from clawcore.folders import make_folder
from clawcore.text import well_formed

__all__ = [
    "AuditError",
    "AuditLog",
    "AuditRecord",
    "Checkpoint",
    "Failure",
    "FailureKind",
    "KeyStore",
    "VerifyReport",
    "canonical_json",
    "checkpoints_path_for",
    "export_bundle",
    "kind_matches",
    "load_bundle",
    "load_public_key",
    "plain_json",
    "public_key_id",
    "read_checkpoints",
    "read_records",
    "tail_records",
    "verify_log",
]

GENESIS = "0" * 64
ROTATION_KIND = "audit.key_rotated"
RECOVERY_KIND = "audit.recovered"
#: The first record of a log begun while the keyring already held keys: an earlier log was deleted.
RESTART_KIND = "audit.restarted"
#: Kinds the log writes itself (key rotation, recovery); refused from callers so none can be forged.
RESERVED_PREFIX = "audit."
_TAIL_CHUNK = 64 * 1024


class AuditError(ClawcoreError):
    """The audit log cannot be written or read (permissions, bad keys, bad input)."""


def canonical_json(value: Any) -> str:
    """The one serialisation that is hashed: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def plain_json(value: Any) -> Any:
    """``value`` as plain JSON types that survive a round trip through a UTF-8 file unchanged.

    Keys become strings, tuples lists, NaN/infinity and unknown objects their ``str``; a lone
    surrogate in text (which no UTF-8 file can hold) becomes U+FFFD.
    """
    if value is None or isinstance(value, int):  # bool is an int
        return value
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {well_formed(k if isinstance(k, str) else str(k)): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    return well_formed(str(value))


def _loads(raw: bytes | str) -> Any:
    """``json.loads``, where text nested too deeply to parse is a ``ValueError`` like any other bad line."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _record_hash(record: Mapping[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k not in ("hash", "mac")}
    # surrogatepass: a line read back may spell a lone surrogate as an escape; no writer does, so it
    # hashes to something else than the record's hash instead of failing the reader.
    return hashlib.sha256(canonical_json(body).encode("utf-8", "surrogatepass")).hexdigest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def checkpoints_path_for(log_path: Path) -> Path:
    """Where the checkpoints of ``log_path`` live: ``audit.jsonl`` -> ``audit.checkpoints.jsonl``."""
    return log_path.with_name(log_path.stem + ".checkpoints.jsonl")


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditRecord:
    """One chained record as it stands in the file."""

    seq: int
    ts: str
    kind: str
    data: Mapping[str, Any]
    prev: str
    hash: str
    session: str = ""
    mac: str = ""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AuditRecord:
        """The record of a parsed line; ``KeyError`` / ``TypeError`` when it has not a record's shape."""
        record = cls(
            seq=obj["seq"],
            ts=obj["ts"],
            kind=obj["kind"],
            data=obj.get("data", {}),
            prev=obj["prev"],
            hash=obj["hash"],
            session=obj.get("session", ""),
            mac=obj.get("mac", ""),
        )
        if not (
            isinstance(record.seq, int)
            and not isinstance(record.seq, bool)
            and all(isinstance(v, str) for v in (record.ts, record.kind, record.prev, record.hash, record.session,
                                                 record.mac))
            and isinstance(record.data, Mapping)
        ):
            raise TypeError("a field has the wrong type")
        return record

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seq": self.seq,
            "ts": self.ts,
            "kind": self.kind,
            "data": self.data,
            "prev": self.prev,
            "hash": self.hash,
        }
        if self.session:
            out["session"] = self.session
        if self.mac:
            out["mac"] = self.mac
        return out

    @property
    def timestamp(self) -> float:
        """``ts`` as seconds since the epoch."""
        return datetime.strptime(self.ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Checkpoint:
    """A signed statement: the log had ``size`` records and its head hash was ``head``."""

    size: int
    head: str
    ts: str
    key: str
    sig: str

    def body(self) -> bytes:
        return canonical_json({"head": self.head, "key": self.key, "size": self.size, "ts": self.ts}).encode()

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "head": self.head, "ts": self.ts, "key": self.key, "sig": self.sig}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Checkpoint:
        size, head, ts, key, sig = obj["size"], obj["head"], obj["ts"], obj["key"], obj["sig"]
        if not (isinstance(size, int) and all(isinstance(v, str) for v in (head, ts, key, sig))):
            raise ValueError("checkpoint fields have the wrong types")
        return cls(size, head, ts, key, sig)


class FailureKind(str, enum.Enum):
    """Why a log failed verification."""

    EDITED = "edited"  # a record's content does not match its hash (or is not canonical)
    MALFORMED = "malformed"  # a line is not a JSON record
    BROKEN_LINK = "broken-link"  # prev is not the previous record's hash
    SEQ_GAP = "seq-gap"  # seq jumps forward: records were removed
    REORDERED = "reordered"  # seq repeats or goes back: a record was inserted or moved
    BAD_MAC = "bad-mac"  # the per-record HMAC is wrong or missing
    BAD_SIGNATURE = "bad-signature"  # a checkpoint's signature is invalid or its key unknown
    CHECKPOINT_MISMATCH = "checkpoint-mismatch"  # a checkpoint's head differs from the log's record
    TRUNCATED = "truncated"  # the log is shorter than its last checkpoint
    TORN = "torn"  # the last line is incomplete (a crash while writing)


@dataclass(frozen=True)
class Failure:
    """The first problem found: its kind, where, and what it means."""

    kind: FailureKind
    message: str
    #: 1-based line in the log (0 when the problem is in the checkpoints).
    line: int = 0
    seq: int | None = None

    def __str__(self) -> str:
        where = (
            f"line {self.line}" + (f" (seq {self.seq})" if self.seq is not None else "") if self.line else ""
        )
        return f"{self.kind.value}: {where + ': ' if where else ''}{self.message}"


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify_log`."""

    path: Path
    records: int
    checkpoints: int
    head: str
    failure: Failure | None = None
    warnings: tuple[str, ...] = ()
    #: Key ids of the checkpoint signatures that were checked.
    keys: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.failure is None


# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------


def public_key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def _write_private(path: Path, data: bytes) -> None:
    """Write a secret file atomically with mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class KeyStore:
    """The signing key, the public keyring and the HMAC keys in one folder.

    ``signing.pem`` is the current Ed25519 private key (mode 0600), every
    public key ever used is kept as ``<key id>.pub``, HMAC keys live in
    ``hmac.json``. The folder is created with mode 0700.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def signing_path(self) -> Path:
        return self.folder / "signing.pem"

    @property
    def hmac_path(self) -> Path:
        return self.folder / "hmac.json"

    def _ensure_folder(self) -> None:
        make_folder(self.folder)

    def signing_key(self, *, create: bool = True, keep_public: bool = True) -> Ed25519PrivateKey:
        """The current private key, generated on first use; ``keep_public`` files its public key too."""
        try:
            data = self.signing_path.read_bytes()
        except FileNotFoundError:
            if not create:
                raise AuditError(f"no audit signing key at {self.signing_path}") from None
            return self._new_signing_key()
        except OSError as exc:
            raise AuditError(f"cannot read the audit signing key {self.signing_path}: {exc}") from exc
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise AuditError(f"{self.signing_path} is not a PEM private key: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise AuditError(f"{self.signing_path} is not an Ed25519 key")
        if keep_public:
            self._store_public(key.public_key())
        return key

    def _new_signing_key(self) -> Ed25519PrivateKey:
        self._ensure_folder()
        key = Ed25519PrivateKey.generate()
        self._store_public(key.public_key())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        _write_private(self.signing_path, pem)
        return key

    def _store_public(self, public: Ed25519PublicKey) -> None:
        path = self.folder / f"{public_key_id(public)}.pub"
        if not path.exists():
            self._ensure_folder()
            pem = public.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(pem)
            os.replace(tmp, path)

    def public_keys(self) -> dict[str, Ed25519PublicKey]:
        """Every public key in the keyring, by key id."""
        found: dict[str, Ed25519PublicKey] = {}
        if not self.folder.is_dir():
            return found
        for path in sorted(self.folder.glob("*.pub")):
            try:
                key = load_public_key(path)
            except AuditError:
                continue
            found[public_key_id(key)] = key
        return found

    def hmac_keys(self) -> dict[str, Any]:
        """``{"current": id, "keys": {id: hex}}``, empty when there is none."""
        try:
            data = _loads(self.hmac_path.read_text())
        except FileNotFoundError:
            return {"current": "", "keys": {}}
        except (OSError, ValueError) as exc:
            raise AuditError(f"cannot read the audit HMAC keys {self.hmac_path}: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("keys"), dict):
            raise AuditError(f"{self.hmac_path} is not an HMAC key file")
        return data

    def current_hmac(self, *, create: bool = True) -> tuple[str, bytes]:
        data = self.hmac_keys()
        current = data.get("current", "")
        if current and current in data["keys"]:
            return current, bytes.fromhex(data["keys"][current])
        if not create:
            raise AuditError(f"no audit HMAC key in {self.hmac_path}")
        return self.new_hmac()

    def new_hmac(self) -> tuple[str, bytes]:
        data = self.hmac_keys()
        key = secrets.token_bytes(32)
        key_id = hashlib.sha256(b"clawcore-audit-hmac-id" + key).hexdigest()[:16]
        data["keys"][key_id] = key.hex()
        data["current"] = key_id
        self._ensure_folder()
        _write_private(self.hmac_path, json.dumps(data, indent=2).encode())
        return key_id, key

    def rotate_signing(self) -> tuple[Ed25519PrivateKey, Ed25519PrivateKey]:
        """Make a new signing key current; return ``(old, new)``. The old public key stays."""
        old = self.signing_key()
        new = self._new_signing_key()
        return old, new


def _earlier_keys(keystore: KeyStore, checkpoints: Path) -> list[str]:
    """Ids of the public keys an earlier log left behind, when there is no checkpoint at all; else nothing.

    A signing key is made for the first checkpoint, which covers at least one record, so a keyring
    (public keys, or the private key alone) next to no checkpoint (no file, or an emptied one) is what
    remains of a deleted log. (HMAC keys say nothing: one may be made before the first record, for
    several writers to share.)
    """
    found, problems = read_checkpoints(checkpoints)
    if found or problems:
        return []
    ids = set(keystore.public_keys())
    try:  # the private key alone says as much, its public files deleted or not
        ids.add(public_key_id(keystore.signing_key(create=False, keep_public=False).public_key()))
    except AuditError:
        pass
    return sorted(ids)


def load_public_key(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file."""
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise AuditError(f"cannot load the public key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise AuditError(f"{path} is not an Ed25519 public key")
    return key


def _public_from_b64(text: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(text))


def _public_b64(key: Ed25519PublicKey) -> str:
    return base64.b64encode(
        key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    ).decode()


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def _last_line(fd: int, size: int) -> tuple[bytes, int]:
    """The last line before ``size`` (where the file holds a newline) and its offset.

    Returns ``(b"", 0)`` for an empty region.
    """
    if size == 0:
        return b"", 0
    pos = size - 1  # leave out the final newline
    buf = b""
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        buf = os.pread(fd, pos - start, start) + buf
        cut = buf.rfind(b"\n")
        if cut >= 0:
            return buf[cut + 1 :], start + cut + 1
        pos = start
    return buf, 0


def _split_torn(fd: int, size: int) -> tuple[int, bytes]:
    """``(offset of the torn tail, its bytes)``; the tail is empty when the file ends in a newline."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size, b""
    pos = size
    tail = b""
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        chunk = os.pread(fd, pos - start, start)
        tail = chunk + tail
        pos = start
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            offset = start + cut + 1
            return offset, tail[cut + 1 :]
    return 0, tail


def read_records(path: Path) -> Iterator[AuditRecord]:
    """Every complete, parseable record in file order (no verification; a torn tail is skipped)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                return
            try:
                yield AuditRecord.from_json(_loads(raw))
            except (ValueError, KeyError, TypeError):
                continue


def kind_matches(kind: str, pattern: str) -> bool:
    """Whether ``kind`` is ``pattern``, or starts with it when it ends with ``*`` (``tool.*``)."""
    return kind.startswith(pattern[:-1]) if pattern.endswith("*") else kind == pattern


def _lines_backwards(fd: int, end: int) -> Iterator[bytes]:
    """The non-empty lines before offset ``end`` (just after a newline), the last one first."""
    pos, rest = end, b""
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        lines = (os.pread(fd, pos - start, start) + rest).split(b"\n")
        pos, rest = start, lines[0]  # the first piece may begin in the chunk before
        yield from (line for line in reversed(lines[1:]) if line)
    if rest:
        yield rest


def tail_records(path: Path, count: int, kind: str | None = None, *, max_bytes: int | None = None) -> list[AuditRecord]:
    """The last ``count`` complete records, read from the end of the file; lines that are not records
    are skipped.

    :param kind: only records of this kind (a trailing ``*`` matches a prefix). The log is read
        backwards only as far as it takes to find ``count`` of them — the whole log when there are
        fewer; lines that cannot hold the kind are not parsed.
    :param max_bytes: read no more than this much of the log's end (a server answering many clients
        must not read a log of gigabytes for one of them).
    """
    if count <= 0:
        return []
    needle = b""
    if kind is not None:
        try:  # the kind as a canonical line spells it
            needle = json.dumps(kind.removesuffix("*"), ensure_ascii=False)[1:-1].encode()
        except UnicodeEncodeError:  # a lone surrogate: no record holds one
            return []
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    out: list[AuditRecord] = []
    try:
        end, _ = _split_torn(fd, os.fstat(fd).st_size)
        budget = end if max_bytes is None else max_bytes
        for raw in _lines_backwards(fd, end):
            budget -= len(raw) + 1
            if budget < 0:
                break
            if needle not in raw:
                continue
            try:
                record = AuditRecord.from_json(_loads(raw))
            except (ValueError, KeyError, TypeError):
                continue
            if kind is None or kind_matches(record.kind, kind):
                out.append(record)
                if len(out) == count:
                    break
    finally:
        os.close(fd)
    out.reverse()
    return out


def read_checkpoints(path: Path) -> tuple[list[Checkpoint], list[str]]:
    """The checkpoints in a checkpoints file, and one problem line per unreadable entry."""
    checkpoints: list[Checkpoint] = []
    problems: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    lines = text.split("\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if number == len(lines) and not text.endswith("\n"):
            problems.append(f"{path.name} line {number}: torn (incomplete) checkpoint ignored")
            continue
        try:
            checkpoints.append(Checkpoint.from_json(_loads(raw)))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path.name} line {number}: not a checkpoint ({exc})")
    return checkpoints, problems


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


class AuditLog:
    """Appends records to one log file; safe across threads and processes.

    :param path: the JSONL log.
    :param keys: where the signing and HMAC keys live; default ``<log dir>/keys``.
    :param checkpoint_every: write a signed checkpoint after every N records (0: only on close/demand).
    :param use_hmac: add a per-record HMAC.
    :param fsync: ``"always"`` fsyncs every record, ``"checkpoint"`` only at checkpoints.
    """

    def __init__(
        self,
        path: Path,
        *,
        keys: Path | None = None,
        checkpoint_every: int = 1000,
        use_hmac: bool = False,
        fsync: str = "checkpoint",
    ) -> None:
        self.path = Path(path)
        self.checkpoints_path = checkpoints_path_for(self.path)
        self.keystore = KeyStore(keys or self.path.parent / "keys")
        self.checkpoint_every = max(0, int(checkpoint_every))
        self.use_hmac = use_hmac
        if fsync not in ("always", "checkpoint"):
            raise AuditError(f"audit.fsync must be 'always' or 'checkpoint', not {fsync!r}")
        self.fsync = fsync
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        # The tail as this writer last saw it: file size, last seq, last hash.
        self._known: tuple[int, int, str] | None = None
        self._hmac: tuple[int, str, bytes] | None = None  # (mtime of hmac.json, id, key)
        self._last_record: AuditRecord | None = None

    # -- file handling -------------------------------------------------------

    def _open(self) -> int:
        if self._fd is None:
            try:
                make_folder(self.path.parent)
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            except OSError as exc:
                raise AuditError(f"cannot open the audit log {self.path}: {exc}") from exc
        return self._fd

    def _is_current(self, fd: int) -> bool:
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (mine.st_ino, mine.st_dev) == (on_disk.st_ino, on_disk.st_dev)

    @contextlib.contextmanager
    def locked(self) -> Iterator[int]:
        """Hold the thread lock and an exclusive ``flock`` on the log; yields its descriptor."""
        with self._thread_lock:
            fd = self._open()
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not self._is_current(fd):
                # The file was moved aside or replaced since we opened it: follow the path.
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                self._fd, self._known = None, None
                fd = self._open()
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield fd
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Write a final checkpoint when records were added since the last one, then close."""
        if self._fd is None:
            return
        try:
            with self.locked() as fd:
                seq, head = self._tail(fd)
                if seq and self._last_checkpoint_size() < seq:
                    self._write_checkpoint(seq, head)
        finally:
            with self._thread_lock:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                    self._known = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the tail --------------------------------------------------------------

    def _tail(self, fd: int) -> tuple[int, str]:
        """``(last seq, last hash)`` under the lock, repairing a torn tail first."""
        size = os.fstat(fd).st_size
        if self._known is not None and self._known[0] == size:
            return self._known[1], self._known[2]
        offset, torn = _split_torn(fd, size)
        line, _ = _last_line(fd, offset)
        if line:
            try:
                last = AuditRecord.from_json(_loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise AuditError(
                    f"the last record of {self.path} is unreadable ({exc}); run `clawcore audit verify` "
                    "and move the damaged log aside before writing"
                ) from exc
            seq, head = last.seq, last.hash
        else:
            seq, head = 0, GENESIS
        if torn:
            seq, head = self._repair(fd, offset, torn, seq, head)
        self._known = (os.fstat(fd).st_size, seq, head)
        return seq, head

    def _repair(self, fd: int, offset: int, torn: bytes, seq: int, head: str) -> tuple[int, str]:
        """Recover a torn last line: keep it when it is a whole valid record, else set it aside."""
        try:
            obj = _loads(torn)
            record = AuditRecord.from_json(obj)
            if (
                record.seq == seq + 1
                and record.prev == head
                and _record_hash(obj) == record.hash
                and canonical_json(obj).encode() == torn
            ):
                os.write(fd, b"\n")
                return record.seq, record.hash
        except (ValueError, KeyError, TypeError):
            pass
        aside = self.path.with_name(self.path.name + ".torn")
        # Private like the log itself (0600), whatever the umask: the torn bytes are a record's.
        with os.fdopen(os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as out:
            out.write(f"# {_iso(time.time())} offset {offset} bytes {len(torn)}\n".encode())
            out.write(torn + b"\n")
        os.ftruncate(fd, offset)
        self._known = (offset, seq, head)
        data = {
            "droppedBytes": len(torn),
            "offset": offset,
            "savedTo": aside.name,
            "reason": "torn last line after an interrupted write",
        }
        return self._append_locked(fd, RECOVERY_KIND, data, "", time.time(), seq, head)

    # -- appending -------------------------------------------------------------

    def append(
        self, kind: str, data: Mapping[str, Any] | None = None, *, session: str = "", ts: float | None = None
    ) -> AuditRecord:
        """Chain one record and write it; checkpoint when ``checkpoint_every`` is reached."""
        if not isinstance(kind, str) or not kind.strip() or "\n" in kind:
            raise AuditError(f"an audit record kind must be a non-empty single-line string, not {kind!r}")
        if kind.startswith(RESERVED_PREFIX):
            raise AuditError(
                f"audit record kinds starting with {RESERVED_PREFIX!r} are written only by the "
                f"audit log itself; choose another kind than {kind!r}"
            )
        payload = plain_json(dict(data or {}))
        kind, session = well_formed(kind), well_formed(session)
        with self.locked() as fd:
            seq, head = self._tail(fd)
            if seq == 0 and (earlier := _earlier_keys(self.keystore, self.checkpoints_path)):
                # Keys sign only checkpoints of a log with records: that log and its checkpoints are gone.
                # Say so in the new chain, which then never verifies as a complete history.
                seq, head = self._append_locked(fd, RESTART_KIND, {
                    "keys": earlier,
                    "reason": "no log and no checkpoints, but the keyring holds the keys of an earlier log",
                }, "", time.time(), seq, head)
            self._append_locked(fd, kind, payload, session, ts if ts else time.time(), seq, head)
            record = self._last_record
            assert record is not None
            if self.checkpoint_every and record.seq % self.checkpoint_every == 0:
                self._write_checkpoint(record.seq, record.hash)
        return record

    def _current_hmac(self) -> tuple[str, bytes]:
        """The current HMAC key, re-read when another process rotated it."""
        try:
            mtime = self.keystore.hmac_path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = -1
        if self._hmac is None or self._hmac[0] != mtime:
            key_id, key = self.keystore.current_hmac()
            self._hmac = (self.keystore.hmac_path.stat().st_mtime_ns, key_id, key)
        return self._hmac[1], self._hmac[2]

    def _append_locked(
        self, fd: int, kind: str, data: Any, session: str, ts: float, seq: int, head: str
    ) -> tuple[int, str]:
        # The canonical line is assembled around one serialisation of the payload;
        # keys in sorted order: data, hash, kind, mac, prev, seq, session, ts.
        stamp = _iso(ts)
        data_json = canonical_json(data)
        kind_json = json.dumps(kind, ensure_ascii=False)
        session_part = f',"session":{json.dumps(session, ensure_ascii=False)}' if session else ""
        tail = f',"prev":"{head}","seq":{seq + 1}{session_part},"ts":"{stamp}"}}'
        digest = hashlib.sha256(f'{{"data":{data_json},"kind":{kind_json}{tail}'.encode()).hexdigest()
        mac = ""
        if self.use_hmac:
            key_id, key = self._current_hmac()
            mac = f"{key_id}:{hmac_module.new(key, digest.encode(), hashlib.sha256).hexdigest()}"
        mac_part = f',"mac":"{mac}"' if mac else ""
        line = f'{{"data":{data_json},"hash":"{digest}","kind":{kind_json}{mac_part}{tail}\n'.encode()
        written = os.write(fd, line)
        while written < len(line):  # a short write on a full disk: finish or fail loudly
            more = os.write(fd, line[written:])
            if more <= 0:
                raise AuditError(f"short write to {self.path}")
            written += more
        if self.fsync == "always":
            os.fsync(fd)
        size = self._known[0] + len(line) if self._known else os.fstat(fd).st_size
        self._known = (size, seq + 1, digest)
        self._last_record = AuditRecord(seq + 1, stamp, kind, data, head, digest, session, mac)
        return seq + 1, digest

    # -- checkpoints -----------------------------------------------------------

    def _last_checkpoint_size(self) -> int:
        try:
            fd = os.open(self.checkpoints_path, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            size = os.fstat(fd).st_size
            offset, _ = _split_torn(fd, size)
            line, _ = _last_line(fd, offset)
        finally:
            os.close(fd)
        if not line:
            return 0
        try:
            return int(_loads(line)["size"])
        except (ValueError, KeyError, TypeError):
            return 0

    def _write_checkpoint(self, size: int, head: str, key: Ed25519PrivateKey | None = None) -> Checkpoint:
        if key is None:
            key = self.keystore.signing_key()  # re-read: another process may have rotated it
        key_id = public_key_id(key.public_key())
        unsigned = Checkpoint(size, head, _iso(time.time()), key_id, "")
        signature = base64.b64encode(key.sign(unsigned.body())).decode()
        checkpoint = Checkpoint(size, head, unsigned.ts, key_id, signature)
        if self._fd is not None:
            os.fsync(self._fd)
        fd = os.open(self.checkpoints_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size_now = os.fstat(fd).st_size
            if size_now:
                offset, torn = _split_torn(fd, size_now)
                if torn:
                    os.ftruncate(fd, offset)
            os.write(fd, (canonical_json(checkpoint.to_json()) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return checkpoint

    def repair(self) -> bool:
        """Repair a torn last line now (the next append would too); True when there was one."""
        with self.locked() as fd:
            _, torn = _split_torn(fd, os.fstat(fd).st_size)
            if not torn:
                return False
            self._known = None
            self._tail(fd)
            return True

    def checkpoint(self) -> Checkpoint | None:
        """Sign the current head now; None for an empty log."""
        with self.locked() as fd:
            seq, head = self._tail(fd)
            if seq == 0:
                return None
            return self._write_checkpoint(seq, head)

    def rotate_keys(self) -> tuple[str, str]:
        """Replace the signing key (and the HMAC key when in use); returns ``(old id, new id)``.

        The old key signs a checkpoint that covers an ``audit.key_rotated``
        record naming the new public key, so a verifier that trusts only the
        first key can follow the chain of keys.
        """
        with self.locked() as fd:
            seq, head = self._tail(fd)
            old, new = self.keystore.rotate_signing()
            data: dict[str, Any] = {
                "oldKey": public_key_id(old.public_key()),
                "newKey": public_key_id(new.public_key()),
                "publicKey": _public_b64(new.public_key()),
            }
            if self.use_hmac:
                new_hmac_id, _ = self.keystore.new_hmac()
                data["hmacKey"] = new_hmac_id
            seq, head = self._append_locked(fd, ROTATION_KIND, data, "", time.time(), seq, head)
            self._write_checkpoint(seq, head, key=old)
            self._hmac = None
            self._write_checkpoint(seq, head, key=new)
            return data["oldKey"], data["newKey"]


# --------------------------------------------------------------------------
# Verifying
# --------------------------------------------------------------------------


def _peek_seq(raw: bytes | None) -> int | None:
    try:
        seq = _loads(raw)["seq"] if raw else None
    except (ValueError, KeyError, TypeError):
        return None
    return seq if isinstance(seq, int) else None


def verify_log(
    path: Path,
    *,
    keys: Path | None = None,
    trusted: Mapping[str, Ed25519PublicKey] | None = None,
    extra_checkpoints: Sequence[Checkpoint] = (),
    require_mac: bool = False,
) -> VerifyReport:
    """Check the whole chain and every checkpoint; report the first problem.

    :param keys: the key folder (public keys, HMAC keys); default ``<log dir>/keys``.
    :param trusted: pin the checkpoint keys (an exported bundle or ``--public-key``);
        further keys are trusted only through rotation records covered by a
        checkpoint signed with an already trusted key. Default: the keyring.
    :param extra_checkpoints: checkpoints kept elsewhere (an export), checked as well.
    :param require_mac: every record must carry a valid HMAC.
    """
    path = Path(path)
    keystore = KeyStore(keys or path.parent / "keys")
    warnings: list[str] = []
    local, problems = read_checkpoints(checkpoints_path_for(path))
    warnings.extend(p for p in problems if "torn" in p)
    damaged = [p for p in problems if "torn" not in p]
    seen_sigs = {c.sig for c in local}
    checkpoints = list(local) + [c for c in extra_checkpoints if c.sig not in seen_sigs]
    checkpoints.sort(key=lambda c: c.size)
    trust: dict[str, Ed25519PublicKey] = dict(trusted) if trusted is not None else keystore.public_keys()
    pinned = trusted is not None
    hmac_keys: dict[str, bytes] = {}
    try:
        hmac_keys = {k: bytes.fromhex(v) for k, v in keystore.hmac_keys()["keys"].items()}
    except (AuditError, ValueError) as exc:
        warnings.append(f"HMAC keys unreadable: {exc}")
    mac_unchecked = 0
    macs_seen = False
    rotations: list[tuple[int, str, str, Ed25519PublicKey]] = []
    used_keys: list[str] = []
    pending = 0  # index of the next checkpoint to check
    seq, head, line_no = 0, GENESIS, 0

    def report(failure: Failure) -> VerifyReport:
        return VerifyReport(path, seq, len(checkpoints), head, failure, tuple(warnings), tuple(used_keys))

    def check_checkpoints_at(size: int, head_hash: str) -> Failure | None:
        nonlocal pending
        while pending < len(checkpoints) and checkpoints[pending].size <= size:
            cp = checkpoints[pending]
            index = pending + 1
            pending += 1
            if cp.size < 1:
                return Failure(FailureKind.CHECKPOINT_MISMATCH, f"checkpoint {index} has size {cp.size}")
            if cp.size == size and cp.head != head_hash:
                return Failure(
                    FailureKind.CHECKPOINT_MISMATCH,
                    f"checkpoint {index} ({cp.ts}) says record {cp.size} has hash {cp.head[:16]}…, "
                    f"the log has {head_hash[:16]}… (the log was rewritten)",
                    line_no,
                    size,
                )
            key = trust.get(cp.key)
            if key is None:
                why = "not trusted" if pinned else "not in the keyring"
                return Failure(
                    FailureKind.BAD_SIGNATURE,
                    f"checkpoint {index} (size {cp.size}) is signed by key {cp.key}, which is {why}",
                )
            try:
                key.verify(base64.b64decode(cp.sig, validate=True), cp.body())
            except (InvalidSignature, ValueError):
                return Failure(
                    FailureKind.BAD_SIGNATURE,
                    f"checkpoint {index} (size {cp.size}, key {cp.key}) has an invalid signature",
                )
            if cp.key not in used_keys:
                used_keys.append(cp.key)
            # A valid checkpoint vouches for every rotation record it covers.
            for rot_seq, old_id, rot_id, rot_key in rotations:
                if rot_seq <= cp.size and old_id in trust:
                    trust.setdefault(rot_id, rot_key)
        return None

    if damaged:
        # Only the last line can be cut by a crash; a damaged line before it was written over.
        return report(Failure(FailureKind.BAD_SIGNATURE, f"{damaged[0]}: the checkpoints file was edited"))
    for index, (before, after) in enumerate(pairwise(local), start=2):
        if after.size < before.size:  # writers append them under the log's lock, in order
            return report(Failure(FailureKind.REORDERED, f"checkpoint {index} (size {after.size}) comes after "
                                  f"one of size {before.size}: the checkpoints file was reordered"))
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        if checkpoints:
            return report(
                Failure(
                    FailureKind.TRUNCATED,
                    f"the log is missing but {len(checkpoints)} checkpoints exist "
                    f"(last at {checkpoints[-1].size} records)",
                )
            )
        if earlier := _earlier_keys(keystore, checkpoints_path_for(path)):
            return report(
                Failure(
                    FailureKind.TRUNCATED,
                    f"the log and its checkpoints are gone, but the keyring holds the keys of an earlier log "
                    f"({', '.join(earlier)}); to start over on purpose, move the whole audit folder aside",
                )
            )
        return VerifyReport(path, 0, 0, GENESIS, None, ("no audit log yet",))
    with handle:
        lines = iter(handle)
        upcoming = next(lines, None)
        while upcoming is not None:
            raw, upcoming = upcoming, next(lines, None)
            line_no += 1
            expected = seq + 1
            if not raw.endswith(b"\n"):
                return report(
                    Failure(
                        FailureKind.TORN,
                        f"the last line is incomplete ({len(raw)} bytes, an interrupted write); the next "
                        "write or `clawcore audit verify --repair` sets it aside without losing "
                        "earlier records",
                        line_no,
                    )
                )
            try:
                obj = _loads(raw)
                record = AuditRecord.from_json(obj)
            except (ValueError, KeyError, TypeError) as exc:
                return report(Failure(FailureKind.MALFORMED, f"not an audit record ({exc})", line_no))
            try:
                canonical = canonical_json(obj).encode() + b"\n" == raw
            except ValueError:  # a lone surrogate spelt as an escape: no writer writes one
                canonical = False
            if canonical:
                # The hashed body is the line without its hash and mac members: no second serialisation.
                body = raw[:-1].replace(b',"hash":"' + record.hash.encode() + b'"', b"", 1)
                if record.mac:
                    body = body.replace(b',"mac":"' + record.mac.encode() + b'"', b"", 1)
                digest = hashlib.sha256(body).hexdigest()
            else:
                digest = _record_hash(obj)
            if digest != record.hash:
                return report(
                    Failure(
                        FailureKind.EDITED,
                        "the content does not match its hash (the record was edited)",
                        line_no,
                        record.seq,
                    )
                )
            if not canonical:
                return report(
                    Failure(
                        FailureKind.EDITED,
                        "the line is not in canonical form (it was rewritten)",
                        line_no,
                        record.seq,
                    )
                )
            if record.seq > expected:
                later = _peek_seq(upcoming)
                if later is not None and later < record.seq:
                    return report(
                        Failure(
                            FailureKind.REORDERED,
                            f"seq {record.seq} comes before seq {later}: records were moved",
                            line_no,
                            record.seq,
                        )
                    )
                return report(
                    Failure(
                        FailureKind.SEQ_GAP,
                        f"seq jumps from {seq} to {record.seq}: {record.seq - expected} record(s) missing",
                        line_no,
                        record.seq,
                    )
                )
            if record.seq < expected:
                return report(
                    Failure(
                        FailureKind.REORDERED,
                        f"seq {record.seq} after {seq}: a record was inserted or moved",
                        line_no,
                        record.seq,
                    )
                )
            if record.prev != head:
                return report(
                    Failure(
                        FailureKind.BROKEN_LINK,
                        f"prev does not match the hash of record {seq} (a record was replaced or removed)",
                        line_no,
                        record.seq,
                    )
                )
            if record.mac:
                macs_seen = True
                key_id, _, mac = record.mac.partition(":")
                key = hmac_keys.get(key_id)
                if key is None:
                    mac_unchecked += 1
                elif not hmac_module.compare_digest(
                    hmac_module.new(key, record.hash.encode(), hashlib.sha256).hexdigest(), mac
                ):
                    return report(
                        Failure(FailureKind.BAD_MAC, "the record's HMAC is wrong", line_no, record.seq)
                    )
            elif require_mac or macs_seen:
                # A writer with a key MACs every record; one without a MAC after MACed ones was rewritten.
                return report(Failure(FailureKind.BAD_MAC, "the record has no HMAC", line_no, record.seq))
            if record.kind == RESTART_KIND:
                keys_named = record.data.get("keys") if isinstance(record.data, Mapping) else None
                return report(
                    Failure(
                        FailureKind.TRUNCATED,
                        f"the log was begun again at {record.ts}: an earlier log and its checkpoints were deleted "
                        f"while the keyring kept their keys ({', '.join(map(str, keys_named or []))}); "
                        "to start over on purpose, move the whole audit folder aside",
                        line_no,
                        record.seq,
                    )
                )
            if record.kind == ROTATION_KIND and isinstance(record.data, Mapping):
                try:
                    new_key = _public_from_b64(str(record.data["publicKey"]))
                    rotations.append(
                        (record.seq, str(record.data.get("oldKey", "")), public_key_id(new_key), new_key)
                    )
                except (KeyError, ValueError) as exc:
                    warnings.append(f"seq {record.seq}: unusable key rotation record ({exc})")
            seq, head = record.seq, record.hash
            failure = check_checkpoints_at(seq, head)
            if failure is not None:
                return report(failure)
    if pending < len(checkpoints):
        last = checkpoints[-1]
        return report(
            Failure(
                FailureKind.TRUNCATED,
                f"the log has {seq} records but checkpoint of {last.ts} covers {last.size}: "
                f"{last.size - seq} record(s) were cut off",
                line_no,
                None,
            )
        )
    if mac_unchecked:
        warnings.append(f"{mac_unchecked} record HMAC(s) not checked: their key is not available here")
    if seq and not checkpoints:
        warnings.append(
            f"no signed checkpoint covers the {seq} record(s): a writer that closed would have signed one, and "
            "without one a consistent rewrite of the whole chain would not show (keep exports elsewhere)"
        )
    if checkpoints and checkpoints[-1].size < seq:
        warnings.append(
            f"{seq - checkpoints[-1].size} record(s) after the last checkpoint are covered only "
            "by the hash chain"
        )
    return VerifyReport(path, seq, len(checkpoints), head, None, tuple(warnings), tuple(used_keys))


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def export_bundle(log_path: Path, keys: Path | None = None) -> dict[str, Any]:
    """Checkpoints and public keys as one JSON document to keep somewhere the log's writers cannot reach."""
    checkpoints, _ = read_checkpoints(checkpoints_path_for(log_path))
    keystore = KeyStore(keys or log_path.parent / "keys")
    return {
        "format": "clawcore-audit-checkpoints/1",
        "log": str(log_path),
        "exported": _iso(time.time()),
        "publicKeys": {key_id: _public_b64(key) for key_id, key in keystore.public_keys().items()},
        "checkpoints": [c.to_json() for c in checkpoints],
    }


def load_bundle(path: Path) -> tuple[dict[str, Ed25519PublicKey], list[Checkpoint]]:
    """The trusted keys and checkpoints of an exported bundle."""
    try:
        data = _loads(path.read_text(encoding="utf-8"))
        keys = {k: _public_from_b64(v) for k, v in data["publicKeys"].items()}
        checkpoints = [Checkpoint.from_json(c) for c in data["checkpoints"]]
    except FileNotFoundError:
        raise AuditError(f"no checkpoint export at {path}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AuditError(f"{path} is not a checkpoint export: {exc}") from exc
    for key_id, key in keys.items():
        if public_key_id(key) != key_id:
            raise AuditError(f"{path}: public key id {key_id} does not match its key")
    return keys, checkpoints
