"""Which files are memory, and the only way a path from outside reaches one.

Memory files are ``MEMORY.md`` / ``memory.md`` at the workspace root, every
``memory/**/*.md``, and the configured ``memory.extraPaths`` (files, or
folders whose ``*.md`` files count). A symlink counts only where its target
is memory too (extra paths are trusted: the user named them), and a file
reached twice is indexed once, under its first name.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from clawcore.errors import MemoryAccessError

__all__ = ["MemoryFile", "discover", "extra_path", "listing", "note_date", "resolve_memory_path", "source_weight"]

ROOT_FILES = ("MEMORY.md", "memory.md")
_DATED = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class MemoryFile:
    """A memory file: ``path`` as it is cited (workspace-relative, ``/``-separated,
    absolute only for extra paths outside the workspace) and where it really is."""

    path: str
    real: Path
    source: str  # "memory" (MEMORY.md), "daily" (memory/**), "extra"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _memory_place(real: Path, real_root: Path) -> bool:
    """Whether a resolved path is itself where memory lives: a root file or Markdown under ``memory/``.

    A link inside the workspace may only lead to another memory file: one to ``../.env`` or to the
    runtime's config would hand files the tool policy denies to ``memory_get`` and to search snippets.
    """
    if real.parent == real_root:
        return real.name in ROOT_FILES
    return real.suffix.lower() == ".md" and _inside(real, (real_root / "memory").resolve())


def _label(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return path.as_posix()


def _walk_markdown(folder: Path, label: str, unreadable: list[str]) -> Iterable[tuple[Path, str, Path | None]]:
    """``(path, label, real path or None)`` of each ``*.md`` under ``folder``, sorted,
    without following directory symlinks (no loops). ``label`` is the folder's cited
    name. The real path is known without a system call for plain files; it is None
    for symlinks, which the caller resolves. The cited name of each folder that could
    not be listed is added to ``unreadable``."""
    real_folder = folder.resolve()

    def failed(error: OSError) -> None:
        where = os.path.relpath(error.filename or real_folder, real_folder)
        unreadable.append(label if where == "." else f"{label}/{Path(where).as_posix()}")

    for root, dirs, files in os.walk(real_folder, onerror=failed, followlinks=False):
        dirs.sort()
        relative = os.path.relpath(root, real_folder)
        shown = folder if relative == "." else folder / relative
        prefix = label if relative == "." else f"{label}/{Path(relative).as_posix()}"
        for name in sorted(files):
            if not name.lower().endswith(".md"):
                continue
            cited = f"{prefix}/{name}"
            if not _utf8(cited):
                # A name the file system holds as bytes that are no UTF-8: it cannot be cited, stored or asked for.
                shown_name = cited.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                warnings.warn(f"memory file {shown_name} is skipped: its name is not UTF-8 (rename it)",
                              RuntimeWarning, stacklevel=2)
                continue
            real = os.path.join(root, name)
            try:
                mode = os.lstat(real).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                yield shown / name, cited, None  # the caller resolves it and keeps it only if it is a file
            elif stat.S_ISREG(mode):
                yield shown / name, cited, Path(real)
            # a FIFO, socket or device named *.md is no note: reading it could block forever


def discover(workspace: Path, extra_paths: Iterable[str] = (), unreadable: list[str] | None = None) -> list[MemoryFile]:
    """Every memory file of ``workspace``, one entry per file on disk, in a stable order.

    :param unreadable: receives the cited names of folders that could not be listed (a permission
        problem; ``"."`` for the workspace itself): their files are unknown, not gone, so the index
        must keep them.
    """
    unreadable = [] if unreadable is None else unreadable
    workspace = Path(workspace).expanduser().absolute()
    real_root = workspace.resolve()
    # One entry per file on disk (device, inode): a symlink or a hard link to a file is the same file,
    # and its plain name wins over a symlink's, whatever the order the names come in.
    found: dict[tuple[int, int], MemoryFile] = {}
    via_link: set[tuple[int, int]] = set()

    def consider(
        candidate: Path, source: str, trusted: bool, label: str | None = None, real: Path | None = None
    ) -> None:
        linked = real is None and os.path.islink(candidate)
        try:
            if real is None:
                if not candidate.is_file():
                    return
                real = candidate.resolve(strict=True)
                if not trusted and not _memory_place(real, real_root):
                    return  # a symlink out of the workspace's memory (to .env, to clawcore.yaml, ...)
            st = real.stat()
        except (OSError, RuntimeError):  # dangling link, loop, permission
            return
        key = (st.st_dev, st.st_ino)
        if key in found and (linked or key not in via_link):
            return
        found[key] = MemoryFile(label or _label(candidate, workspace), real, source)
        via_link.discard(key)
        if linked:
            via_link.add(key)

    try:
        # On a case-insensitive file system both names are one file; keep the spelling on disk.
        names = set(os.listdir(workspace))
        memory_dir = workspace / "memory"
        walk = memory_dir.is_dir() and _inside(memory_dir.resolve(), real_root)
    except OSError:
        unreadable.append(".")  # the workspace itself: every file in it is unknown, not gone
        names, walk = set(), False
    for name in ROOT_FILES:
        if name in names:
            consider(workspace / name, "memory", trusted=False)
    if walk:
        for path, label, real in _walk_markdown(workspace / "memory", "memory", unreadable):
            consider(path, "daily", False, label, real)
    for entry in extra_paths:
        extra = extra_path(workspace, entry)
        if extra.is_dir():
            for path, label, real in _walk_markdown(extra, _label(extra, workspace), unreadable):
                consider(path, "extra", True, label, real)
        elif extra.is_file():
            consider(extra, "extra", trusted=True)
    return list(found.values())


def _names_under(folder: str, into: list[object]) -> bool:
    """Append the name of every folder and Markdown file under ``folder`` (recursively,
    not following links); False when a symlink could be a memory file (its target is
    resolved per call)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        into.append((folder, type(exc).__name__))
        return True
    into.append(folder)
    for entry in entries:
        if entry.is_symlink():
            if entry.name.lower().endswith(".md"):
                return False
            into.append(("link", entry.name))
        elif entry.is_dir(follow_symlinks=False):
            if not _names_under(entry.path, into):
                return False
        elif entry.name.lower().endswith(".md"):
            into.append(entry.name)  # other files are never memory: renaming one to .md shows here
    return True


def extra_path(workspace: Path, entry: str) -> Path:
    """Where a ``memory.extraPaths`` entry points: ``~`` expanded, relative to the workspace."""
    extra = Path(os.path.expanduser(entry))
    return extra if extra.is_absolute() else workspace / extra


def listing(workspace: Path, extra_paths: Iterable[str] = ()) -> tuple[object, ...] | None:
    """A fingerprint of everything :func:`discover` decides by: the names (and kinds)
    of the entries it walks and where the folders really are. Equal fingerprints
    mean ``discover`` returns the same files, so its answer can be reused; this
    costs one ``scandir`` per folder instead of per-file path work. None when
    the answer cannot be reused (a symlinked Markdown file: its target may
    change without any listing changing).
    """
    workspace = Path(workspace).expanduser().absolute()
    parts: list[object] = [os.path.realpath(workspace)]
    for name in ROOT_FILES:
        path = workspace / name
        if os.path.islink(path):
            return None
        parts.append((name, os.path.isfile(path)))
    try:
        parts.append(tuple(sorted(n for n in os.listdir(workspace) if n in ROOT_FILES)))
    except OSError as exc:
        parts.append(type(exc).__name__)
    folders = [workspace / "memory"]
    for entry in extra_paths:
        extra = extra_path(workspace, entry)
        if os.path.islink(extra) and not extra.is_dir():
            return None
        parts.append((str(extra), extra.is_dir(), extra.is_file()))
        folders.append(extra)
    for folder in folders:
        real = os.path.realpath(folder)
        parts.append((str(folder), real, os.path.isdir(real)))
        if os.path.isdir(real) and not _names_under(real, parts):
            return None
    return tuple(parts)


def resolve_memory_path(requested: str, files: Iterable[MemoryFile], workspace: Path) -> MemoryFile:
    """The memory file a user or agent asked for, or a :class:`MemoryAccessError`.

    Only indexed memory files can be read: traversal (``..``), absolute
    paths, NUL bytes, and symlinks that lead out of the workspace are all
    refused with a message that says what is allowed.
    """
    if not isinstance(requested, str) or not requested.strip():
        raise MemoryAccessError("memory_get needs a path such as MEMORY.md or memory/2024-05-01.md")
    if "\x00" in requested:
        raise MemoryAccessError("memory path contains a NUL byte; refused")
    by_label = {f.path: f for f in files}
    cleaned = requested.strip().replace("\\", "/")
    cleaned = cleaned.removeprefix("./")
    if cleaned in by_label:
        return by_label[cleaned]
    if cleaned.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", cleaned):
        raise MemoryAccessError(
            f"memory path {requested!r} is absolute; give a path relative to the workspace, such as MEMORY.md"
        )
    if ".." in cleaned.split("/"):
        raise MemoryAccessError(f"memory path {requested!r} contains '..', which memory paths may not")
    candidate = Path(workspace) / cleaned
    same = _same_file(candidate, files)
    if same is not None:
        return same  # another name (a link) of a memory file, which is indexed under one name
    if candidate.is_symlink():
        try:
            outside = not _memory_place(candidate.resolve(), Path(workspace).resolve())
        except (OSError, RuntimeError):
            outside = True
        if outside:
            raise MemoryAccessError(
                f"memory path {requested!r} is a symlink that leads out of the workspace's memory; refused")
    if (cleaned in ROOT_FILES or cleaned.startswith("memory/") and cleaned.lower().endswith(".md")) \
            and not candidate.exists():
        raise MemoryAccessError(f"there is no memory file {requested!r}; use memory_search to find one")
    raise MemoryAccessError(
        f"{requested!r} is not a memory file (MEMORY.md, memory/**/*.md or memory.extraPaths); "
        "use memory_search to find one"
    )


def _same_file(candidate: Path, files: Iterable[MemoryFile]) -> MemoryFile | None:
    try:
        wanted = candidate.stat()
    except (OSError, ValueError):
        return None
    for memory_file in files:
        try:
            st = memory_file.real.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (wanted.st_dev, wanted.st_ino):
            return memory_file
    return None


def source_weight(path: str, weights: Mapping[str, float]) -> float:
    """The weight of the first glob in ``weights`` that matches ``path`` (``*`` crosses ``/``); 1.0 if none."""
    for pattern, weight in weights.items():
        if fnmatch.fnmatchcase(path, pattern):
            return float(weight)
    return 1.0


def note_date(path: str) -> date | None:
    """The date in a daily note's file name (``memory/2024-05-01.md``), or None for undated files."""
    match = _DATED.search(Path(path).name)
    if not match:
        return None
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None
