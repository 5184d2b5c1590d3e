"""Builtin plugin ``gateway``: the ``gateway`` and ``auth`` config sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl

__all__ = ["AUTH_SCHEMA", "GATEWAY_SCHEMA"]

GATEWAY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "The WebSocket gateway (`clawcore gateway run`).",
    "properties": {
        "host": {
            "type": "string",
            "default": "127.0.0.1",
            "description": "Bind address; anything but loopback needs auth.token or auth.password.",
        },
        "port": {"type": "integer", "minimum": 0, "maximum": 65535, "default": 18789},
        "handshakeTimeout": {
            "type": ["string", "number"],
            "format": "duration",
            "x-at-least": "100ms",  # 0 would fail every client's handshake
            "default": "10s",
            "description": "Time a client has to authenticate; also the life of a nonce.",
        },
        "maxFailures": {
            "type": "integer",
            "minimum": 1,
            "default": 5,
            "description": "Failed authentications per client address within failureWindow before a lockout.",
        },
        "failureWindow": {"type": ["string", "number"], "format": "duration", "default": "5m"},
        "lockout": {
            "type": ["string", "number"],
            "format": "duration",
            "default": "15m",
            "description": "How long a client address is refused after too many failures.",
        },
        "maxMessageSize": {
            "type": ["string", "integer"],
            "format": "size",
            "x-at-least": "1k",  # an authentication answer must fit, or every client fails
            "default": "1m",
            "description": "Largest frame accepted; bigger ones close the connection.",
        },
        "allowedOrigins": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Browser origins allowed to connect; requests with any other "
            "Origin header are refused (cross-site WebSocket hijacking).",
        },
    },
}

AUTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Gateway secrets; prefer CLAWCORE_GATEWAY_TOKEN / CLAWCORE_GATEWAY_PASSWORD to the file.",
    "properties": {
        "token": {
            "type": ["string", "null"],
            "default": None,
            "description": "Shared token (at least 16 characters beyond loopback).",
        },
        "password": {
            "type": ["string", "null"],
            "default": None,
            "description": "Password; the key is derived with scrypt (at least 12 characters "
            "beyond loopback).",
        },
    },
}


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"gateway": GATEWAY_SCHEMA, "auth": AUTH_SCHEMA}
