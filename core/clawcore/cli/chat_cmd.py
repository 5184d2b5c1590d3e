"""``clawcore chat``: an interactive terminal chat on the configured model.

Tool calls that the policy marks ``confirm`` are asked inline (y/N, default
no). ``/exit`` or end of input leaves; the transcript stays in
``$CLAWCORE_HOME/sessions/`` and ``--session ID`` resumes it.
"""

from __future__ import annotations

import contextlib
import json
import sys

import click

from clawcore.cli.state import CliState
from clawcore.errors import ClawcoreError
from clawcore.text import printable, well_formed
from clawcore.types import Decision, ToolCall

__all__ = ["command"]


def ask(call: ToolCall, decision: Decision) -> bool:
    """The inline confirmation: show the call and why it needs a yes."""
    arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
    if len(arguments) > 400:
        arguments = arguments[:400] + "…"
    reasons = "; ".join(decision.reasons) or "policy asks for confirmation"
    click.echo(printable(f"  ? {call.name} {arguments}\n    ({reasons})"), err=True)
    return click.confirm("    allow?", default=False, err=True)


@click.command("chat")
@click.option("--session", "session_id", default=None, help="Resume this session instead of starting one.")
@click.pass_obj
def command(state: CliState, session_id: str | None) -> None:
    """Chat with the agent; /exit or Ctrl-D leaves."""
    if session_id is not None:
        from clawcore.sessions import SessionStore

        SessionStore(state.home).open(session_id)  # --session resumes: an unknown id is an error, not a new one
    # Bytes that are not UTF-8 are typed text too: kept, as U+FFFD, whatever the locale's strictness.
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdin.reconfigure(errors="replace")  # type: ignore[union-attr]
    runtime = state.runtime(confirm=ask)
    session = runtime.session(session_id)
    click.echo(f"session {session.id}{' (resumed)' if session.resumed else ''} — /exit to leave", err=True)
    try:
        while True:
            try:
                text = click.prompt("you", prompt_suffix="> ", default="", show_default=False, err=True)
            except (EOFError, click.exceptions.Abort):
                break
            text = well_formed(text.strip())  # input that was not UTF-8 is kept, its bad bytes as U+FFFD
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            try:
                reply = session.send(text)
            except ClawcoreError as exc:  # the model is down: say so, keep the session open
                click.echo(f"error: {exc}", err=True)
                continue
            click.echo(printable(reply.text))  # a prompt-injected model must not drive the terminal
    finally:
        session.close()
        runtime.close()
