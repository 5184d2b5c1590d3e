"""``clawcore plugins``: what is installed and which hooks each implements."""

from __future__ import annotations

import dataclasses
import json

import click

from clawcore.cli.state import CliState
from clawcore.plugins import plugin_infos


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def command(state: CliState, as_json: bool) -> None:
    """List registered plugins: name, distribution, version, kind, hooks."""
    infos = plugin_infos(state.plugin_manager)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(info) for info in infos], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "distribution", "version", "kind", "hooks")
    for info in infos:
        table.add_row(info.name, info.distribution, info.version,
                      "builtin" if info.builtin else "external", ", ".join(info.hooks))
    Console().print(table)
