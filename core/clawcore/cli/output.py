"""Printing what a command or a note holds: exact into a pipe or a file, harmless on a terminal."""

from __future__ import annotations

import sys

import click

from clawcore.text import printable

__all__ = ["echo_exact"]


def echo_exact(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Print ``text`` as it is into a pipe or a file (``color=True``: click would strip what it takes for
    colour codes); on a terminal, control characters are shown as escapes so the text cannot drive it."""
    stream = sys.stderr if err else sys.stdout
    click.echo(printable(text) if stream.isatty() else text, err=err, nl=nl, color=True)
