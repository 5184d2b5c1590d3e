"""``clawcore memory``: index, search, read and watch the Markdown memory."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Any

import click

from clawcore.cli.output import echo_exact
from clawcore.cli.params import FiniteRange
from clawcore.cli.state import CliState
from clawcore.memory.results import SyncReport
from clawcore.security.secrets import redact, redact_data
from clawcore.text import printable

if TYPE_CHECKING:
    from clawcore.memory import Memory


@click.group("memory")
def command() -> None:
    """Index and search MEMORY.md and the daily notes in memory/."""
    # These commands print the memory's warnings themselves (`warning: ...`), once; without this the
    # same lines would also reach stderr through logging's last-resort handler.
    quiet = logging.getLogger("clawcore.memory")
    quiet.propagate = False
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())


def _print_report(report: SyncReport, reason: str = "") -> None:
    """The sync's summary; ``reason``: why no embedding provider runs, said unless a warning said it."""
    click.echo(
        f"{report.files} files, {report.chunks} chunks, {report.embedded} embedded, {report.cached} cached, "
        f"{report.seconds:.2f}s" + (" (rebuilt)" if report.rebuilt else "")
        + f"; {'provider ' + report.provider if report.provider else 'keyword search only (no embedding provider)'}"
    )
    for warning in report.warnings:
        click.echo(redact(f"warning: {warning}"), err=True)
    if reason and not report.provider and not any(reason in warning for warning in report.warnings):
        click.echo(redact(f"note: {reason}"), err=True)


def _no_provider_reason(memory: Memory) -> str:
    return "" if memory.provider is not None else str(memory.status()["reason"] or "")


@command.command("index")
@click.option("--force", is_flag=True, help="Rebuild the whole index (vectors still come from the cache).")
@click.pass_obj
def index(state: CliState, force: bool) -> None:
    """Bring the index up to date with the Markdown files."""
    memory = state.runtime().memory
    report = _sync_showing_progress(memory, "indexing", force=force)
    _print_report(report, _no_provider_reason(memory))


def _sync_showing_progress(memory: Memory, label: str, *, force: bool = False) -> SyncReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("files", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return memory.sync(progress, force=force)


@command.command("search")
@click.argument("query")
@click.option("-k", "--max-results", "k", type=click.IntRange(1, 100), default=None, help="How many results (default 5).")
@click.option("--min-score", type=FiniteRange(0), default=None, help="Drop results scoring below this.")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@click.pass_obj
def search(state: CliState, query: str, k: int | None, min_score: float | None, as_json: bool) -> None:
    """Search memory by keyword and meaning; print cited results."""
    memory = state.runtime().memory
    status = memory.status()
    if memory.settings.sync_on_search and status["pendingRebuild"]:
        # The search would rebuild it anyway, silently: say so, why, and show how far it is.
        click.echo(redact("the index was built with other embedding or chunking settings "
                          f"({'; '.join(status['rebuildBecause'])}); rebuilding it first"), err=True)
        _sync_showing_progress(memory, "rebuilding")
    response = memory.search(query, max_results=k, min_score=min_score)
    if as_json:
        click.echo(json.dumps(response.to_dict(), ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    mode = response.mode + (f" via {response.provider}" if response.provider else "")
    # Text, not markup: `- [x] done` and `arr[i]` are note text, and nothing in a note may drive the terminal.
    table = Table(title=Text(printable(f"{query!r} ({mode})")), show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("citation")
    table.add_column("snippet")
    for rank, result in enumerate(response.results, 1):
        table.add_row(str(rank), f"{result.score:.3f}", Text(printable(result.citation)), Text(printable(result.snippet)))
    console.print(table)
    if not response.results:
        click.echo("no results")
    if response.reason and response.mode == "fts-only":
        click.echo(redact(f"note: {response.reason}"), err=True)
    for warning in response.warnings:
        if warning != response.reason:
            click.echo(redact(f"warning: {warning}"), err=True)


@command.command("get")
@click.argument("path")
@click.option("--from", "from_line", type=int, default=1, show_default=True, help="First line (1-based).")
@click.option("--lines", type=int, default=None, help="How many lines (default: to the end).")
@click.pass_obj
def get(state: CliState, path: str, from_line: int, lines: int | None) -> None:
    """Print lines of a memory file (MEMORY.md or memory/*.md)."""
    text = state.runtime().memory.get(path, from_line=from_line, lines=lines)
    echo_exact(text)  # exact lines into a pipe or a file; on a terminal, nothing in a note may drive it


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def status(state: CliState, as_json: bool) -> None:
    """Show what the index holds and how search runs."""
    # Provider messages (reasons, warnings) are printed redacted: one may quote a misplaced key.
    info: dict[str, Any] = redact_data(state.runtime().memory.status())
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key in ("workspace", "index", "files", "chunks", "mode", "provider", "model", "dims", "vectorStore",
                "driver", "vectors", "chunking", "pendingRebuild", "dirty", "cachedEmbeddings"):
        click.echo(f"{key:>16}: {info[key]}")
    if info["reason"]:
        click.echo(f"{'reason':>16}: {info['reason']}")
    for skipped in info["skippedProviders"]:  # also those passed over for a provider that works
        click.echo(f"{'skipped':>16}: {skipped}")
    for warning in info["warnings"]:
        click.echo(f"warning: {warning}", err=True)


@command.command("watch")
@click.option("--interval", type=FiniteRange(0.1, 86400), default=None,
              help="Seconds between looks, 0.1 to 86400 (default memory.sync.watchInterval).")
@click.option("--debounce", type=FiniteRange(0, 86400), default=None,
              help="Quiet seconds before a sync, up to 86400 (default memory.sync.watchDebounce).")
@click.pass_obj
def watch(state: CliState, interval: float | None, debounce: float | None) -> None:
    """Keep the index current: sync whenever memory files change (Ctrl-C stops)."""
    from clawcore.memory.watch import watch_memory

    memory = state.runtime().memory
    click.echo(f"watching {memory.workspace} (Ctrl-C to stop)")

    def report(result: SyncReport) -> None:
        _print_report(result)
        sys.stdout.flush()

    try:
        watch_memory(memory, report, interval_s=interval, debounce_s=debounce)
    except KeyboardInterrupt:
        click.echo("stopped")
