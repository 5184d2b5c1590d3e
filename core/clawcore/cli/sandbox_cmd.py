"""``clawcore sandbox``: run one command through the policy and a sandbox backend; show the boundary."""

from __future__ import annotations

import shlex
import sys

import click

from clawcore.cli.output import echo_exact
from clawcore.cli.params import FiniteRange
from clawcore.cli.state import CliState
from clawcore.folders import make_folder
from clawcore.types import Action, Decision, ToolCall


@click.group("sandbox")
def command() -> None:
    """Run commands in the sandbox and describe its boundary."""


def _ask(call: ToolCall, decision: Decision) -> bool:
    reasons = "; ".join(decision.reasons) or "the policy asks for confirmation"
    return click.confirm(f"run {call.arguments.get('command')!r}? ({reasons})", default=False, err=True)


@command.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--backend", "backend_name", default=None, help="Backend to use (default sandbox.backend).")
@click.option("--timeout", "timeout_s", type=FiniteRange(0, 86400, min_open=True), default=None,
              help="Seconds before the command is killed, above 0 and up to 86400 (default sandbox.timeout).")
@click.argument("words", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND...")
@click.pass_obj
def run(state: CliState, backend_name: str | None, timeout_s: float | None, words: tuple[str, ...]) -> None:
    """Run COMMAND (after --) through the tool policy and the sandbox; print its output and exit code.

    One word is taken as a shell command line; several are quoted and joined.
    A command the policy denies (or that needs a confirmation nobody gives) is
    not run, and the exit status is 126.
    """
    from clawcore.config import parse_duration

    line = words[0] if len(words) == 1 else shlex.join(words)
    runtime = state.runtime(confirm=_ask if sys.stdin.isatty() else None)  # no terminal: no one to ask
    context = runtime.context("cli-sandbox", channel="cli")
    call = ToolCall("bash", {"command": line}, "sandbox-run")
    decision = runtime.decide(call, context)
    if decision.action is not Action.ALLOW:
        reasons = "; ".join(decision.reasons) or "by policy"
        click.echo(f"denied: {reasons}", err=True)
        raise click.exceptions.Exit(126)
    backend = runtime.make_sandbox(backend_name, session_id="cli-sandbox") if backend_name else runtime.sandbox
    workspace = runtime.workspace
    make_folder(workspace, 0o777)
    timeout = timeout_s if timeout_s is not None else parse_duration(runtime.config.get("sandbox.timeout", "30s"))
    try:
        result = backend.run(line, cwd=workspace, timeout_s=timeout)
    finally:
        if backend_name:
            backend.close()
    runtime.audit("sandbox.run", {"command": line, "backend": result.backend or backend.name,
                                  "exit_code": result.exit_code, "timed_out": result.timed_out,
                                  "seconds": result.duration_s}, session_id="cli-sandbox")
    if result.stdout:
        echo_exact(result.stdout, nl=False)
    if result.stderr:
        echo_exact(result.stderr, err=True, nl=not result.stderr.endswith("\n"))
    notes = []
    if result.timed_out:
        notes.append("timed out")
    if result.truncated:
        notes.append("output truncated")
    click.echo(f"[exit code {result.exit_code}{', ' + ', '.join(notes) if notes else ''}; "
               f"backend {result.backend or backend.name}]", err=True)
    raise click.exceptions.Exit(result.exit_code if 0 <= result.exit_code < 256 else 1)


@command.command("info")
@click.option("--backend", "backend_name", default=None, help="Backend to describe (default sandbox.backend).")
@click.pass_obj
def info(state: CliState, backend_name: str | None) -> None:
    """Print the boundary: the backend's own description and the path and network policy."""
    runtime = state.runtime()
    backend = runtime.make_sandbox(backend_name) if backend_name else runtime.sandbox
    try:
        text = backend.info()
    finally:
        if backend_name:
            backend.close()
    config = runtime.config
    network = config.section("sandbox.network")
    click.echo(f"backend: {backend.name}")
    click.echo(text)
    click.echo(f"workspace: {runtime.workspace}")
    click.echo("allowed paths: " + ", ".join(config.get("sandbox.allowedPaths", [])))
    click.echo(f"denied paths: {len(config.get('sandbox.deniedPaths', []))} entries "
               f"(see `clawcore config show`), read-only: {len(config.get('sandbox.readOnlyPaths', []))}")
    allow = network.get("allow") or []
    click.echo("web_fetch: " + (f"only {', '.join(allow)}" if allow else "any public host")
               + f"; private network {'allowed' if network.get('privateNetwork') is True else network.get('privateNetwork') or 'denied'}"
               + f"; exfiltration blocklist {'on' if network.get('blockExfiltration', True) else 'OFF'}"
               + f"; shell network {network.get('shell', 'deny')}")


__all__ = ["command"]


