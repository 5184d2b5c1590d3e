"""Tables for the side-by-side benchmarks: printed with rich, optionally appended as Markdown.

Shared by bench/peers.py and bench/scale.py so that the tables in
bench/README.md are exactly what the scripts printed.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

__all__ = ["Report", "command_line", "machine_line", "percentile"]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def machine_line() -> str:
    """When and where: date, CPUs, load average — the numbers are only as quiet as the machine."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs; "
        f"load average {load} at the start; Python {platform.python_version()}"
    )


class Report:
    """Collects tables; prints each with rich and, when ``markdown`` is set, appends it there."""

    def __init__(self, markdown: Path | None, command: str) -> None:
        self.console = Console(width=160)
        self.markdown = markdown
        self.command = command
        self._header_written = False

    def note(self, text: str) -> None:
        self.console.print(text)
        self._write(f"{text}\n\n")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        table = Table(title=title)
        for i, column in enumerate(columns):
            table.add_column(column, justify="left" if i == 0 else "right")
        for row in rows:
            table.add_row(*row)
        self.console.print(table)
        lines = [f"**{title}**", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
        self._write("\n".join(lines) + "\n\n")

    def _write(self, text: str) -> None:
        if self.markdown is None:
            return
        with self.markdown.open("a", encoding="utf-8") as out:
            if not self._header_written:
                out.write(f"`{self.command}` — {machine_line()}\n\n")
                self._header_written = True
            out.write(text)


def command_line(script: str) -> str:
    """The command as a reader would type it again."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg == "--markdown":
            skip = not skip
            continue
        args.append(f"'{arg}'" if " " in arg else arg)
    return " ".join([f"{_interpreter()} bench/{script}", *args])


def _interpreter() -> str:
    """The Python that runs this bench, as a path from the checkout (``.venv/bin/python``) where it is one."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(Path(sys.executable).absolute().relative_to(root))
    except ValueError:
        return "python"
