"""``clawcore secrets``: find credentials in files or standard input."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from clawcore.errors import ClawcoreError
from clawcore.security.secrets import scan_text

__all__ = ["command"]

#: Files larger than this are skipped (logs and data dumps are not source).
MAX_FILE_BYTES = 5 * 1024 * 1024
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                        ".mypy_cache", ".pytest_cache", ".ruff_cache"})


@click.group("secrets")
def command() -> None:
    """Detect credentials (API keys, tokens, private keys, passwords)."""


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file():
                yield path


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in raw[:8192]:
        return None
    return raw.decode("utf-8", errors="replace")


@command.command("scan")
@click.argument("target", type=str, metavar="PATH|-")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per finding.")
def scan(target: str, as_json: bool) -> None:
    """Scan PATH (a file or a folder, recursively) or - (standard input) for credentials.

    Prints one line per finding with a masked preview, never the secret.
    Exit status 1 when something was found, 0 when clean.
    """
    found = 0
    if target == "-":
        sources: Iterator[tuple[str, str | None]] = iter([("-", sys.stdin.read())])
    else:
        root = Path(target).expanduser()
        if not root.exists():
            raise ClawcoreError(f"{target}: no such file or folder")
        sources = ((str(p), _read(p)) for p in _files(root))
    scanned = 0
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
        click.echo(f"{found} finding(s) in {scanned} file(s)", err=True)
    raise click.exceptions.Exit(1 if found else 0)
