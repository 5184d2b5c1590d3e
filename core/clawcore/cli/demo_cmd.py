"""``clawcore demo``: the main job on the embedded defaults, start to finish.

Creates the workspace (never overwriting a file that exists), indexes it,
runs a memory search, and pushes one safe and one dangerous tool call
through the policy, printing what happened at each step.
"""

from __future__ import annotations

import datetime as dt

import click

from clawcore.cli.state import CliState
from clawcore.folders import make_folder

SAMPLE_MEMORY = """\
# Persistent memory

## Project decisions
- We chose PostgreSQL 16 as the primary database; SQLite stays for local tests.
- Deployments go through the staging cluster first, never straight to production.

## People
- Dana owns the billing service and prefers written design reviews.
"""

SAMPLE_NOTE = """\
# {day}

- Discussed the database migration plan with Dana: the schema change ships behind a flag.
- The nightly backup job failed twice this week; the disk on backup-2 is full.
- 我们决定使用数据库迁移工具来管理表结构。
"""

SAFE_CALL = ("read_file", {"path": "MEMORY.md"})
DANGEROUS_CALL = ("bash", {"command": "rm -rf / --no-preserve-root"})


@click.command("demo")
@click.option("--query", default="which database did we choose?", show_default=True)
@click.pass_obj
def command(state: CliState, query: str) -> None:
    """Create a sample workspace, index it, search it, and try two tool calls."""
    runtime = state.runtime()
    workspace = runtime.workspace
    make_folder(workspace, 0o777)  # a workspace keeps the umask's mode: a container's user may need to read it
    make_folder(workspace / "memory", 0o777)
    today = dt.date.today().isoformat()
    for path, text in (
        (workspace / "MEMORY.md", SAMPLE_MEMORY),
        (workspace / "memory" / f"{today}.md", SAMPLE_NOTE.format(day=today)),
    ):
        if path.exists():
            click.echo(f"kept     {path} (already there)")
        else:
            path.write_text(text, encoding="utf-8")
            click.echo(f"wrote    {path}")

    report = runtime.memory.sync()
    click.echo(
        f"indexed  {report.files} files, {report.chunks} chunks "
        f"({report.embedded} embedded, {report.cached} cached) in {report.seconds:.2f}s"
        f" with {report.provider or 'no embedding provider (BM25 only)'}"
    )
    for warning in report.warnings:
        click.echo(f"warning  {warning}")

    response = runtime.memory.search(query)
    click.echo(f"\nmemory_search {query!r}  [mode: {response.mode}{', ' + response.reason if response.reason else ''}]")
    words = {w.strip("?.,!").lower() for w in query.split()}
    for rank, result in enumerate(response.results, 1):
        lines = [line.strip() for line in result.snippet.splitlines() if line.strip()] or [""]
        best = max(lines, key=lambda line: len(words & {w.strip("?.,!;:").lower() for w in line.split()}))
        click.echo(f"  {rank}. {result.citation}  score {result.score:.3f}  {best[:90]}")

    click.echo("\ntool calls through the policy:")
    context = runtime.context("demo")
    for name, arguments in (SAFE_CALL, DANGEROUS_CALL):
        result = runtime.call_tool(name, arguments, context=context)
        verdict = "DENIED " if result.is_error and result.metadata.get("decision") else (
            "ERROR  " if result.is_error else "ALLOWED")
        detail = result.content.strip().splitlines()[0] if result.content.strip() else ""
        if len(detail) > 120:  # whole reasons only
            cut = detail.rfind("; ", 0, 120)
            detail = (detail[:cut] if cut > 0 else detail[:117]) + " …"
        click.echo(f"  {verdict} {name} {arguments}  ->  {detail}")
    runtime.close()
