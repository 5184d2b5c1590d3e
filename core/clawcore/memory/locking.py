"""A cross-process lock beside the index file, so two syncs never write at once.

``fcntl.flock`` is released by the kernel when its holder dies, so a
process killed mid-sync never leaves the index locked.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from clawcore.errors import ClawcoreError, MemoryAccessError
from clawcore.folders import make_folder

__all__ = ["IndexLock", "LockTimeout"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: rely on SQLite's own locking
    fcntl = None  # type: ignore[assignment]


class LockTimeout(ClawcoreError):
    """Another process held the index lock for longer than we were willing to wait."""


class IndexLock:
    """``with IndexLock(path, timeout_s):`` — exclusive, re-entrant within one object."""

    def __init__(self, path: Path, timeout_s: float = 600.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._fd: int | None = None
        self._depth = 0

    def acquire(self, timeout_s: float | None = None) -> bool:
        """Take the lock; False when ``timeout_s`` passed first (0 = try once)."""
        if self._depth:
            self._depth += 1
            return True
        timeout = self.timeout_s if timeout_s is None else timeout_s
        fd = self._open()
        if fcntl is None:  # pragma: no cover
            self._fd, self._depth = fd, 1
            return True
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
        self._fd, self._depth = fd, 1
        return True

    def _open(self) -> int:
        try:
            make_folder(self.path.parent)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            problem = exc
        try:
            return os.open(self.path, os.O_RDONLY)  # flock needs no write access to a lock file that exists
        except OSError:
            raise MemoryAccessError(f"cannot open the memory index lock {self.path}: {problem.strerror or problem}; "
                                    "check that its folder is writable") from problem

    def release(self) -> None:
        if not self._depth:
            return
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        if not self.acquire():
            raise LockTimeout(
                f"another process has held the memory index lock {self.path} for over {self.timeout_s:.0f}s"
            )
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
