"""The authenticated WebSocket gateway: server, client and challenge–response auth.

``GatewayServer(runtime, GatewaySettings.from_config(config.data))`` serves a
runtime; ``GatewayClient(url, token=...)`` calls it. See docs/gateway.md.
Names are imported on first use, so loading the builtin ``gateway`` plugin
(its config sections) does not pull in the WebSocket library.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULT_URL",
    "AuthenticationFailed",
    "GatewayCallError",
    "GatewayClient",
    "GatewayConfigError",
    "GatewayError",
    "GatewayServer",
    "GatewaySettings",
    "GatewayUnavailable",
    "LockedOut",
    "check_bind",
]

_WHERE = {
    "DEFAULT_URL": "client",
    "GatewayClient": "client",
    "AuthenticationFailed": "errors",
    "GatewayCallError": "errors",
    "GatewayConfigError": "errors",
    "GatewayError": "errors",
    "GatewayUnavailable": "errors",
    "LockedOut": "errors",
    "GatewayServer": "server",
    "check_bind": "server",
    "GatewaySettings": "settings",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'clawcore.gateway' has no attribute {name!r}")
    return getattr(importlib.import_module(f"clawcore.gateway.{module}"), name)
