"""The gateway's effective settings: the ``gateway`` and ``auth`` sections plus the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clawcore.config import parse_duration, parse_size
from clawcore.gateway.plugin import AUTH_SCHEMA, GATEWAY_SCHEMA

__all__ = ["PASSWORD_ENV", "TOKEN_ENV", "GatewaySettings"]

TOKEN_ENV = "CLAWCORE_GATEWAY_TOKEN"
PASSWORD_ENV = "CLAWCORE_GATEWAY_PASSWORD"


def _defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v.get("default") for k, v in schema["properties"].items()}


@dataclass(frozen=True)
class GatewaySettings:
    """Where the gateway listens, how it authenticates and how it limits failures."""

    host: str = "127.0.0.1"
    port: int = 18789
    token: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    handshake_timeout: float = 10.0
    max_failures: int = 5
    failure_window: float = 300.0
    lockout: float = 900.0
    max_message_size: int = 1024 * 1024
    allowed_origins: tuple[str, ...] = ()

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], environ: Mapping[str, str] | None = None
    ) -> GatewaySettings:
        """Read the sections; ``CLAWCORE_GATEWAY_TOKEN``/``_PASSWORD`` win over the file."""
        environ = os.environ if environ is None else environ
        gw = {**_defaults(GATEWAY_SCHEMA), **dict(config.get("gateway") or {})}
        auth = {**_defaults(AUTH_SCHEMA), **dict(config.get("auth") or {})}
        return cls(
            host=str(gw["host"]),
            port=int(gw["port"]),
            token=environ.get(TOKEN_ENV) or auth["token"] or None,
            password=environ.get(PASSWORD_ENV) or auth["password"] or None,
            handshake_timeout=parse_duration(gw["handshakeTimeout"]),
            max_failures=int(gw["maxFailures"]),
            failure_window=parse_duration(gw["failureWindow"]),
            lockout=parse_duration(gw["lockout"]),
            max_message_size=parse_size(gw["maxMessageSize"]),
            allowed_origins=tuple(gw["allowedOrigins"]),
        )

    def with_bind(self, host: str | None = None, port: int | None = None) -> GatewaySettings:
        return replace(
            self, host=host if host is not None else self.host, port=port if port is not None else self.port
        )
