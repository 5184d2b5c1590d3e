"""``clawcore config``: check and show the configuration."""

from __future__ import annotations

import json

import click
import yaml

from clawcore.cli.state import CliState
from clawcore.config import load_config


@click.group("config")
def command() -> None:
    """Validate and show $CLAWCORE_HOME/clawcore.yaml."""


@command.command("check")
@click.pass_obj
def check(state: CliState) -> None:
    """Validate the config; print every problem with its key path (exit 2 if any)."""
    config = load_config(state.home, pm=state.plugin_manager)
    where = config.path if config.path and config.path.exists() else "defaults (no clawcore.yaml)"
    click.echo(f"ok: {where}")


@command.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.option("--raw", is_flag=True, help="Only what the file says, without defaults.")
@click.pass_obj
def show(state: CliState, as_json: bool, raw: bool) -> None:
    """Print the effective config, defaults filled in, secrets masked."""
    from clawcore.security.secrets import mask_config

    config = load_config(state.home, pm=state.plugin_manager)
    data = mask_config(dict(config.raw if raw else config.data))
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip())
