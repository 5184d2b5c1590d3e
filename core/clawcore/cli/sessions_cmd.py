"""``clawcore sessions``: list the session transcripts and show one."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import click

from clawcore.cli.state import CliState
from clawcore.sessions import SessionStore
from clawcore.text import printable

__all__ = ["command"]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M")


@click.group("sessions")
def command() -> None:
    """Chat sessions: one JSONL transcript each under $CLAWCORE_HOME/sessions/."""


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_sessions(state: CliState, as_json: bool) -> None:
    """Every session, most recently active first."""
    infos = SessionStore(state.home).list()
    if as_json:
        click.echo(printable(json.dumps([{**dataclasses.asdict(i), "path": str(i.path)} for i in infos], indent=2)))
        return
    if not infos:
        click.echo(f"no sessions in {state.home / 'sessions'}; start one with `clawcore chat`")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table()
    # Ids are what other commands take: shown whole, the other columns give way first.
    table.add_column("id", no_wrap=True, min_width=max(len(info.id) for info in infos))
    for title in ("started", "last activity"):
        table.add_column(title, no_wrap=True)
    for title in ("messages", "tokens", "compactions"):
        table.add_column(title, justify="right", no_wrap=True)
    for info in infos:
        table.add_row(info.id, _when(info.started), _when(info.last_activity), str(info.messages),
                      str(info.tokens), str(info.compactions))
    console = Console()
    # Wider than the terminal rather than columns squeezed to nothing: every value stays readable.
    console.width = max(console.width, console.measure(table, options=console.options.update(max_width=1000)).maximum)
    console.print(table)


@command.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSONL entries.")
@click.pass_obj
def show_session(state: CliState, session_id: str, as_json: bool) -> None:
    """The whole transcript of SESSION_ID: messages, tool calls, flushes and compactions.

    Transcripts hold untrusted text (tool results, model replies): control characters other than
    newline and tab are shown as escapes (\\u001b), so none can drive the terminal.
    """
    store = SessionStore(state.home)
    read = store.read(session_id)
    if as_json:
        for entry in read.entries:
            click.echo(printable(json.dumps(entry, ensure_ascii=False)))
        return
    for entry in read.entries:
        click.echo(printable(_render(entry)))
    for problem in read.problems:
        click.echo(f"warning: {printable(problem)}", err=True)


def _render(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    when = _when(float(entry["ts"])) if isinstance(entry.get("ts"), (int, float)) else ""
    if kind == "session":
        return f"# session {entry.get('id')} ({entry.get('channel', 'local')}), started {when}"
    if kind == "flush":
        outcome = "nothing to store" if entry.get("nothingToStore") else f"{entry.get('writes', 0)} write(s)"
        return f"-- memory flush ({entry.get('reason', '')}) to {entry.get('path', '')}: {outcome}"
    if kind == "compaction":
        return (f"-- compaction #{entry.get('compactionCount')}: {entry.get('summarisedMessages', '?')} "
                f"messages summarised\n   summary: {entry.get('summary', '')}")
    if kind == "notice":
        return f"-- {entry.get('event', 'notice')}: {'; '.join(entry.get('reasons') or [])}"
    if kind != "message":
        return f"-- {kind}"
    role = str(entry.get("role"))
    prefix = "(silent) " if entry.get("silent") else ""
    lines = [f"{prefix}[{role}] {entry.get('content') or ''}".rstrip()]
    for call in entry.get("toolCalls") or []:
        arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
        lines.append(f"{prefix}  -> {call.get('name')}({arguments})")
    return "\n".join(lines)
