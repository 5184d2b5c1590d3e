"""``clawcore security``: check the deployment against the production checklist."""

from __future__ import annotations

import click

__all__ = ["command"]


@click.group("security")
def command() -> None:
    """Deployment checks."""
