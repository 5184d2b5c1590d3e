"""``clawcore secrets``: find credentials in files or standard input."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from clawcore.errors import ClawcoreError
from clawcore.security.secrets import scan_text

__all__ = ["CLEAN", "FOUND", "UNSCANNED", "command"]

#: Exit statuses of ``secrets scan``: nothing found in everything asked for; a credential found;
#: no credential found, but something could not be scanned (or the command was misused).
CLEAN, FOUND, UNSCANNED = 0, 1, 2
#: Files larger than this are skipped (logs and data dumps are not source); streams are read this far.
MAX_FILE_BYTES = 5 * 1024 * 1024
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                        ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
         (b"\xfe\xff", "utf-16"))


class ScanUsageError(ClawcoreError):
    """The target does not exist: nothing was scanned."""

    exit_code = UNSCANNED


@click.group("secrets")
def command() -> None:
    """Detect credentials (API keys, tokens, private keys, passwords)."""


class _Scan:
    """Counts what could not be scanned; each such thing is one warning line."""

    def __init__(self) -> None:
        self.unscanned = 0

    def warn(self, message: str) -> None:
        self.unscanned += 1
        click.echo(f"warning: {message}", err=True)


def _files(root: Path, scan: _Scan) -> Iterator[Path]:
    """Regular files under ``root``, in sorted order, without following links and without recursion."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            scan.warn(f"{folder}: cannot be read ({exc.strerror or exc}); not scanned")
            continue
        subfolders: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_symlink():
                    continue  # not followed: what it leads to may be outside the folder, or a loop
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIP_DIRS:
                        subfolders.append(path)
                elif entry.is_file(follow_symlinks=False):
                    yield path
                else:
                    scan.warn(f"{path}: not a regular file (a FIFO, socket or device); not scanned")
            except OSError as exc:
                scan.warn(f"{path}: cannot be read ({exc.strerror or exc}); not scanned")
        stack.extend(reversed(subfolders))


def _decode(raw: bytes) -> str | None:
    """Text, or None for binary data; UTF-16 and UTF-32 are known by their byte-order mark."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            return raw.decode(codec, errors="replace")
    if b"\x00" in raw[:8192]:
        return None
    return raw.decode("utf-8", errors="replace")


def _read_limited(fd: int) -> tuple[bytes, bool]:
    """Up to :data:`MAX_FILE_BYTES` from ``fd``, and whether more followed."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_FILE_BYTES:
        chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:MAX_FILE_BYTES], size > MAX_FILE_BYTES


def _text(path: Path, scan: _Scan, *, named: bool) -> str | None:
    """The text of ``path``, or None when it is skipped (binary, too large) or cannot be read.

    ``named``: the target the user gave. Its links are followed, and a FIFO or a character device
    (``<(cmd)``, ``/dev/stdin``) is read as a stream; a skipped file is a warning there, since
    nothing else was asked for. Inside a folder nothing blocks: a file swapped for a FIFO is refused.
    """
    flags = os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC
    try:
        if not named:
            flags |= os.O_NOFOLLOW | os.O_NONBLOCK
        elif not stat.S_ISFIFO(os.stat(path).st_mode):  # a FIFO waits for its writer, as `cat` would
            flags |= os.O_NONBLOCK
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            stream = named and (stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode))
            if not (stat.S_ISREG(info.st_mode) or stream):
                scan.warn(f"{path}: not a regular file; not scanned")
                return None
            if not stream and info.st_size > MAX_FILE_BYTES:
                if named:
                    scan.warn(f"{path}: larger than 5 MiB; not scanned")
                return None
            os.set_blocking(fd, True)
            raw, more = _read_limited(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        scan.warn(f"{path}: cannot be read ({exc.strerror or exc}); not scanned")
        return None
    if more:
        scan.warn(f"{path}: more than 5 MiB; only the first 5 MiB were scanned")
    text = _decode(raw)
    if text is None and named:
        scan.warn(f"{path}: binary; not scanned")
    return text


def _stdin(scan: _Scan) -> str | None:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in its place (tests, embedding)
        text: str = sys.stdin.read(MAX_FILE_BYTES + 1)
        more = len(text) > MAX_FILE_BYTES
        text = text[:MAX_FILE_BYTES]
    else:
        raw: bytes = buffer.read(MAX_FILE_BYTES + 1)
        more = len(raw) > MAX_FILE_BYTES
        decoded = _decode(raw[:MAX_FILE_BYTES])
        if decoded is None:
            scan.warn("standard input is binary; not scanned")
            return None
        text = decoded
    if more:
        scan.warn("standard input: more than 5 MiB; only the first 5 MiB were scanned")
    return text


@command.command("scan")
@click.argument("target", type=str, metavar="PATH|-")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per finding.")
def scan(target: str, as_json: bool) -> None:
    """Scan PATH (a file or a folder, recursively) or - (standard input) for credentials.

    Prints one line per finding with a masked preview, never the secret, and one warning line per
    file or folder that could not be scanned. Exit status 0 when everything was scanned and nothing
    found, 1 when something was found, 2 when nothing was found but something could not be scanned
    (or PATH does not exist).
    """
    progress = _Scan()
    sources: Iterator[tuple[str, str | None]]
    if target == "-":
        sources = iter([("-", _stdin(progress))])
    else:
        root = Path(target).expanduser()
        if not os.path.lexists(root):
            raise ScanUsageError(f"{target}: no such file or folder")
        if root.is_dir():
            sources = ((str(p), _text(p, progress, named=False)) for p in _files(root, progress))
        else:
            sources = iter([(str(root), _text(root, progress, named=True))])
    found = scanned = 0
    for name, text in sources:
        if text is None:
            continue
        scanned += 1
        for finding in scan_text(text):
            found += 1
            if as_json:
                click.echo(json.dumps({"path": name, **finding.to_dict()}))
            else:
                click.echo(f"{name}:{finding.line}: {finding.rule}: {finding.preview}")
    if not as_json:
        unscanned = f"; {progress.unscanned} not scanned" if progress.unscanned else ""
        click.echo(f"{found} finding(s) in {scanned} file(s){unscanned}", err=True)
    raise click.exceptions.Exit(FOUND if found else UNSCANNED if progress.unscanned else CLEAN)
