"""``clawcore prism status [SESSION]`` and ``clawcore prism unlock SESSION``."""

from __future__ import annotations

import contextlib
import time

import click
from rich.console import Console
from rich.table import Table

from clawcore.errors import ClawcoreError, ConfigError
from clawcore_prism.monitor import NO_SESSION, Monitor

__all__ = ["command"]


def _monitor(ctx: click.Context, *, strict: bool) -> Monitor:
    """The monitor of this home.

    ``strict=False`` (status) only reads: a monitor of its own that creates, imports and moves aside
    nothing, which still shows the state while ``clawcore.yaml`` does not validate — the moment an
    operator most needs it — with default settings and the file's ``stateDir``; ``unlock`` is strict,
    because it must be audited and the audit log's settings live in that file.
    """
    from clawcore.config import load_config, read_config_file

    from clawcore_prism.plugin import monitor_for, section_of
    from clawcore_prism.settings import PrismSettings

    state = ctx.find_root().obj
    try:
        config = load_config(state.home, pm=state.plugin_manager)
    except ConfigError as exc:
        if strict:
            raise
        section = None
        with contextlib.suppress(ClawcoreError):
            section = read_config_file(state.home / "clawcore.yaml").get("prism")
        state_dir = section.get("stateDir") if isinstance(section, dict) else None
        monitor = Monitor(state.home.expanduser().resolve(),
                          PrismSettings(**({"state_dir": state_dir} if isinstance(state_dir, str) else {})),
                          read_only=True)
        monitor.config_error = f"clawcore.yaml does not validate, showing the state with default settings: {exc}"
        return monitor
    if strict:
        return monitor_for(state.home, config.data)
    return Monitor(state.home.expanduser().resolve(), PrismSettings.from_section(section_of(config.data)),
                   config=config.data, read_only=True)


def _session(argument: str) -> str:
    """A session as operators write it: ``(no session)`` (or ``""``) is the state of calls made outside any."""
    return "" if argument in (NO_SESSION, "") else argument


@click.group("prism")
def command() -> None:
    """PRISM runtime monitor: session risk, locks, recent events."""


@command.command("status")
@click.argument("session", required=False)
@click.pass_context
def status(ctx: click.Context, session: str | None) -> None:
    """Show risk, ladder step and recent events (all sessions, or SESSION)."""
    monitor = _monitor(ctx, strict=False)
    rows = monitor.status(_session(session) if session is not None else None)
    console = Console()
    for problem in [monitor.config_error, *monitor.store.problems()]:
        if problem:
            console.print(f"[yellow]warning:[/] {problem}", highlight=False)
    if session is not None and not rows:
        raise ClawcoreError(f"no prism state for session {session!r} (it has seen no event, or it ended)")
    table = Table(title="prism sessions")
    # Keys are what `unlock` takes: shown whole, the other columns give way first.
    table.add_column("session", no_wrap=True, min_width=max([len(row["key"] or NO_SESSION) for row in rows] or [7]))
    for name in ("risk", "step", "locked", "tainted", "credential read", "events"):
        table.add_column(name)
    for row in rows:
        table.add_row(row["key"] or NO_SESSION, f"{row['risk']:.2f}", row["step"], "yes" if row["locked"] else "",
                      "yes" if row["tainted"] else "", "yes" if row["credentialRead"] else "", str(len(row["events"])))
    console.print(table)
    if session is not None:
        events = Table(title=f"recent events of {session}")
        for name in ("time", "kind", "detail"):
            events.add_column(name)
        for row in rows:
            for event in row["events"]:
                detail = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("ts", "kind"))
                events.add_row(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.get("ts", 0))),
                               str(event.get("kind", "")), detail)
        console.print(events)


@command.command("unlock")
@click.argument("session")
@click.pass_context
def unlock(ctx: click.Context, session: str) -> None:
    """Unlock SESSION and reset its risk and canary (audited); '(no session)' is calls made outside any."""
    session = _session(session)
    monitor = _monitor(ctx, strict=True)
    with monitor.lock:
        monitor.store.refresh()
        count = monitor.store.unlock(session)
        if not count:
            raise ClawcoreError(f"no prism state for session {session!r}; nothing to unlock "
                                "(see `clawcore prism status`)")
    runtime = ctx.find_root().obj.runtime()
    runtime.audit("prism.unlock", {"session": session, "keys": count}, session_id=session)
    click.echo(f"unlocked {session or NO_SESSION} ({count} conversation state{'s' if count != 1 else ''}); risk reset to 0")
