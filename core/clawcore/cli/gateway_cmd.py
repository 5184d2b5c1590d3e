"""``clawcore gateway``: run the WebSocket gateway and call it."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import urllib.parse

import click

from clawcore.cli.state import CliState
from clawcore.config import load_config
from clawcore.errors import ClawcoreError
from clawcore.text import printable

__all__ = ["command"]


@click.group("gateway")
def command() -> None:
    """The authenticated WebSocket gateway (loopback unless a secret is set)."""


@command.command("run")
@click.option("--host", help="Bind address (default gateway.host, 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="Port (default gateway.port, 18789; 0 picks one)."
)
@click.pass_obj
def run(state: CliState, host: str | None, port: int | None) -> None:
    """Serve memory, sessions and the audit log over WebSocket until interrupted."""
    from clawcore.gateway import GatewayServer, GatewaySettings

    runtime = state.runtime()
    settings = GatewaySettings.from_config(runtime.config.data).with_bind(host, port)
    server = GatewayServer(runtime, settings)

    async def serve() -> None:
        await server.start()
        schemes = ", ".join(sorted(server.secrets.keys)) or "none (loopback only)"
        click.echo(f"clawcore gateway listening on {server.url} (auth: {schemes}); Ctrl-C stops", err=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await server.close()

    try:
        asyncio.run(serve())
    except OSError as exc:
        raise ClawcoreError(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}"
        ) from None
    finally:
        runtime.close()
    click.echo("gateway stopped", err=True)


@command.command("call")
@click.argument("method")
@click.option("--params", "params_json", default="{}", help="Parameters as a JSON object.")
@click.option("--url", help="ws://host:port (default from gateway.host/port).")
@click.option("--token", help="Token (default CLAWCORE_GATEWAY_TOKEN, then auth.token).")
@click.option("--password", help="Password (default CLAWCORE_GATEWAY_PASSWORD, then auth.password).")
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds per step.")
@click.pass_obj
def call(
    state: CliState,
    method: str,
    params_json: str,
    url: str | None,
    token: str | None,
    password: str | None,
    timeout: float,
) -> None:
    """Call METHOD (memory.search, memory.get, sessions.list, chat.send, audit.tail, ping) and print the result.

    Exit status: 0 ok, 1 the method failed, 4 authentication failed, 5 no gateway.
    """
    from clawcore.gateway import GatewayClient
    from clawcore.gateway.settings import PASSWORD_ENV, TOKEN_ENV, GatewaySettings

    try:
        params = json.loads(params_json)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--params") from None
    if not isinstance(params, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--params")
    if token and password:
        raise click.UsageError("give --token or --password, not both")
    if not (math.isfinite(timeout) and timeout > 0):
        raise click.BadParameter(f"{timeout} is not a number of seconds above 0", param_hint="--timeout")
    if url is not None:
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError as exc:
            raise click.BadParameter(f"{url!r} is not a URL: {exc}", param_hint="--url") from None
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise click.BadParameter(f"{url!r} is not a ws:// or wss:// URL with a host", param_hint="--url")
    settings = GatewaySettings.from_config(load_config(state.home, pm=state.plugin_manager).data, os.environ)
    if not token and not password:
        token, password = settings.token, settings.password
        if os.environ.get(TOKEN_ENV):
            password = None
        elif os.environ.get(PASSWORD_ENV):
            token = None
    if url is None:
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        url = f"ws://[{host}]:{settings.port}" if ":" in host else f"ws://{host}:{settings.port}"
    with GatewayClient(url, token=token, password=password, timeout=timeout) as client:
        result = client.call(method, params)
    # The answer is the server's text: nothing in it may drive the terminal, and a lone surrogate
    # ("\ud800", which no terminal encoding takes) is shown as U+FFFD.
    click.echo(printable(json.dumps(result, indent=2, ensure_ascii=False, default=str)))
