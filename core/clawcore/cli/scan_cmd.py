"""``clawcore scan``: dry-run the security stack over JSON-lines cases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import click

from clawcore.cli.state import CliState

__all__ = ["command"]


@click.command("scan")
@click.argument("source", default="-", metavar="[FILE|-]")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file to judge with (default: $CLAWCORE_HOME/clawcore.yaml).",
)
@click.option(
    "--output",
    "-o",
    type=click.File("w", encoding="utf-8"),
    default="-",
    help="Where to write the result lines (default stdout).",
)
@click.pass_obj
def command(state: CliState, source: str, config_file: Path | None, output: TextIO) -> None:
    """Judge each case of FILE (or stdin) without running anything.

    Each line is {"id", "kind": exec|path|url|text|secret, ...}; each output line is
    {"id", "decision", "flagged", "reasons", "findings"}. Malformed cases get an
    "error" and a one-line warning on stderr; the exit status is 1 if any case was malformed.
    """
    from clawcore.config import load_config
    from clawcore.errors import ClawcoreError, ConfigError
    from clawcore.runtime import Runtime
    from clawcore.scan import Scanner, read_cases

    if config_file is not None and not config_file.exists():
        raise ConfigError("no such file (from --config)", path=str(config_file))  # exit 2, as every config error
    config = load_config(state.home, path=config_file, pm=state.plugin_manager)
    runtime = Runtime(state.home, config=config, plugin_manager=state.plugin_manager)
    runtime.start()  # monitors take the effective config (and --config) as a real runtime gives it
    if source == "-":
        stream: TextIO = sys.stdin
    else:
        try:
            stream = open(source, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise ClawcoreError(f"cannot read cases from {source}: {exc.strerror}") from exc
    failures = 0
    try:
        scanner = Scanner(runtime)
        for result in scanner.scan_all(read_cases(stream)):
            if result.error:
                failures += 1
                click.echo(f"warning: case {result.id or '?'}: {result.error}", err=True)
            output.write(result.to_json() + "\n")
    finally:
        if stream is not sys.stdin:
            stream.close()
        runtime.close()
    if failures:
        raise click.exceptions.Exit(1)
