"""``clawcore embeddings-local``: list the catalogue and fetch a model ahead of time."""

from __future__ import annotations

from typing import Any

import click
from clawcore.errors import ClawcoreError
from clawcore.types import ProviderUnavailable

from clawcore_embeddings_local.catalogue import CATALOGUE, DEFAULT_MODEL
from clawcore_embeddings_local.model_store import fetch, locate
from clawcore_embeddings_local.settings import LocalSettings

__all__ = ["command"]


@click.group("embeddings-local")
def command() -> None:
    """Offline embedding models (plugin clawcore-embeddings-local)."""


@command.command("models")
@click.pass_obj
def models(state: Any) -> None:
    """List catalogued models and whether a verified copy is on this machine."""
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "languages", "dims", "source", "status")
    for spec in CATALOGUE.values():
        try:
            files = locate(LocalSettings(model=spec.name), state.home, allow_fetch=False)
            status = f"ready ({files.source})"
        except ProviderUnavailable as exc:
            status = str(exc)
        source = "pip bundle" if spec.bundle else f"{spec.hub.repo}@{spec.hub.revision[:12]}" if spec.hub else "?"
        name = spec.name + (" (default)" if spec.name == DEFAULT_MODEL else "")
        table.add_row(name, spec.languages, str(spec.dims), source, status)
    Console().print(table)


@command.command("fetch")
@click.argument("name", type=click.Choice(sorted(CATALOGUE)))
@click.pass_obj
def fetch_command(state: Any, name: str) -> None:
    """Download a catalogued model once into $CLAWCORE_HOME/models (hash-verified)."""
    spec = CATALOGUE[name]
    if spec.hub is None:
        click.echo(f"{name} comes with pip (no download needed)")
        return
    try:
        folder = fetch(spec, state.home)
        locate(LocalSettings(model=name), state.home, allow_fetch=False)
    except ProviderUnavailable as exc:
        raise ClawcoreError(str(exc)) from exc
    except OSError as exc:  # the models folder cannot be made or written (a file in its place, a full disk)
        raise ClawcoreError(f"cannot store {name} under {state.home / 'models'}: "
                            f"{exc.strerror or exc} ({exc.filename or ''})") from exc
    click.echo(f"{name}: verified in {folder}")
