"""Folders clawcore creates: private from the first moment.

``Path.mkdir(parents=True, mode=...)`` gives the mode to the last folder only; the
parents take the umask's (usually 0755). A home that clawcore made would then be
readable by every user of the machine, and ``clawcore security audit`` would flag it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["make_folder"]


def make_folder(path: Path, mode: int = 0o700) -> Path:
    """Create ``path`` with ``mode`` and every missing folder above it with 0700; return ``path``.

    Folders that exist keep their mode: a workspace the user made stays as the user made it.
    Pass ``mode=0o777`` (narrowed by the umask) for a folder others must read, such as a
    workspace mounted into a container that runs as another user.

    :raises OSError: a folder cannot be created (a file in the way, no write access).
    """
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode if folder == path else 0o700)
        except FileExistsError:  # made meanwhile by another process
            if not folder.is_dir():
                raise
    if not missing and not path.is_dir():
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    return path
