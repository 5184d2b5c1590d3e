"""Errors of the gateway, its client and its wire protocol."""

from __future__ import annotations

__all__ = [
    "AuthenticationFailed",
    "GatewayCallError",
    "GatewayConfigError",
    "GatewayError",
    "GatewayUnavailable",
    "LockedOut",
]

from clawcore.errors import ClawcoreError


class GatewayError(ClawcoreError):
    """Base of the gateway's errors."""


class GatewayConfigError(GatewayError):
    """The gateway refuses to start with these settings (an unsafe bind, a weak secret)."""

    exit_code = 2


class GatewayUnavailable(GatewayError):
    """No gateway answers at the address, or the connection broke."""

    exit_code = 5


class AuthenticationFailed(GatewayError):
    """The gateway did not accept the credentials (or could not prove it knows them)."""

    exit_code = 4


class LockedOut(AuthenticationFailed):
    """Too many failed attempts from this address; retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class GatewayCallError(GatewayError):
    """A method call returned an error: ``code`` says which kind."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
