"""The ``clawcore`` command: one module per command group.

Plugins add their own commands through the ``register_commands`` hook.
Every :class:`~clawcore.errors.ClawcoreError` is printed as one line per
problem, without a traceback, and sets the exit status.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import click
import pluggy

from clawcore.config import clawcore_home
from clawcore.errors import ClawcoreError, ConfigError
from clawcore.plugins import call_plugin

__all__ = ["cli", "main"]

#: Command modules; each defines a click command or group named ``command``.
COMMAND_MODULES = (
    "clawcore.cli.plugins_cmd",
    "clawcore.cli.config_cmd",
    "clawcore.cli.scan_cmd",
    "clawcore.cli.demo_cmd",
    "clawcore.cli.audit_cmd",
    "clawcore.cli.gateway_cmd",
    "clawcore.cli.security_cmd",
    "clawcore.cli.sessions_cmd",
    "clawcore.cli.chat_cmd",
    "clawcore.cli.sandbox_cmd",
    "clawcore.cli.secrets_cmd",
    "clawcore.cli.memory_cmd",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    envvar="CLAWCORE_HOME",
    type=click.Path(file_okay=False, path_type=Path),
    help="State folder (config, workspace, sessions, index, audit). Default ~/.clawcore.",
)
@click.version_option(package_name="clawcore")
@click.pass_context
def cli(ctx: click.Context, home: Path | None) -> None:
    """clawcore: memory and defence in depth for AI agents."""
    from clawcore.cli.state import CliState

    ctx.obj = CliState(home, ctx.obj)


def _home_option(args: Sequence[str]) -> Path:
    """``--home`` among the options before the command, else ``$CLAWCORE_HOME`` or the default."""
    for index, arg in enumerate(args):
        if not arg.startswith("-"):
            break  # the command: its own options are not the root's
        if arg == "--home" and index + 1 < len(args):
            return Path(args[index + 1]).expanduser()
        if arg.startswith("--home="):
            return Path(arg.split("=", 1)[1]).expanduser()
    return clawcore_home()


def _add_commands(group: click.Group, pm: pluggy.PluginManager) -> None:
    for module_name in COMMAND_MODULES:
        group.add_command(importlib.import_module(module_name).command)
    builtin = dict(group.commands)
    for impl in pm.hook.register_commands.get_hookimpls():
        before = dict(group.commands)
        try:
            call_plugin(pm, "register_commands", impl, cli=group)
        except Exception as exc:  # noqa: BLE001 - one broken plugin must not take every command with it
            warnings.warn(f"plugin {impl.plugin_name!r} failed to add its commands: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            group.commands.clear()  # none of its commands is half kept
            group.commands.update(before)
        for name, command in builtin.items():
            if group.commands.get(name) is not command:  # a core command is not a plugin's to replace
                warnings.warn(f"plugin {impl.plugin_name!r} tried to replace the command {name!r}; kept the core's",
                              RuntimeWarning, stacklevel=2)
                group.add_command(command, name)


def report(error: ClawcoreError) -> None:
    """Print a user-facing error: one line per problem, credentials masked (a token pasted into the
    wrong setting, or into a URL, is echoed back by the message that names it)."""
    from clawcore.security.secrets import redact

    if isinstance(error, ConfigError):
        where = f"{error.path}: " if error.path else ""
        for problem in error.problems:
            click.echo(redact(f"error: {where}{problem}"), err=True)
    else:
        click.echo(redact(f"error: {error}"), err=True)


def _exit_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP end the process through ``SystemExit``, so that exit handlers still run: a
    sandbox container is removed, an audit log signed. Left at their default they end it on the spot."""
    import signal

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: sys.exit(128 + number))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    from clawcore.cli.state import build_plugin_manager

    args = list(argv) if argv is not None else sys.argv[1:]
    if argv is None:  # the console script, not a caller's process
        _exit_cleanly_on_signals()
    # A warning (a plugin skipped, a command kept) is one line on stderr, not a line of Python source too.
    warnings.formatwarning = lambda message, category, *rest, **kw: f"warning: {message}\n"
    try:
        home = _home_option(args)
        # Built before click parses the line (plugins add commands), from the home the line names: its
        # plugins.disable must block a plugin before it is ever imported.
        pm = build_plugin_manager(home)
        _add_commands(cli, pm)
        status = cli.main(args=args, prog_name="clawcore", standalone_mode=False, obj=(home, pm))
    except ClawcoreError as error:
        report(error)
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    except KeyboardInterrupt:
        return 130
    return status if isinstance(status, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
