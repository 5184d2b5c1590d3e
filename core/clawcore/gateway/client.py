"""A small synchronous client for the gateway.

::

    with GatewayClient("ws://127.0.0.1:18789", token=os.environ["CLAWCORE_GATEWAY_TOKEN"]) as gw:
        hits = gw.call("memory.search", {"query": "database decision"})
"""

from __future__ import annotations

import base64
import hmac
import inspect
import itertools
import json
import math
import secrets
import time
from collections.abc import Mapping
from typing import Any, Self

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.sync.client import ClientConnection, connect

from clawcore.gateway.auth import client_mac, derive_password_key, scrypt_cost_problem, server_proof
from clawcore.gateway.errors import (
    AuthenticationFailed,
    GatewayCallError,
    GatewayUnavailable,
    LockedOut,
)
from clawcore.text import printable

__all__ = ["DEFAULT_URL", "GatewayClient"]

DEFAULT_URL = "ws://127.0.0.1:18789"
# websockets 17 wants `legacy=True` to hand back a plain connection; older versions have no such flag.
_CONNECT_FLAGS: dict[str, Any] = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}


def _said(value: Any, default: str) -> str:
    """Text a server sent, fit for one line of a terminal: the server may be anyone's."""
    text = value if isinstance(value, str) and value else default
    text = printable(text).replace("\n", " ")
    return text if len(text) <= 300 else text[:300] + "…"


class GatewayClient:
    """Connects, authenticates (token, password or none) and calls methods.

    :param url: ``ws://host:port``.
    :param token: the shared token; or
    :param password: the password (the key is derived with the scrypt salt the server sends).
    :param timeout: seconds for connecting, the handshake and each call. A call that times
        out closes the connection (its answer could otherwise be taken for the next call's);
        the next call connects again, as a new gateway session.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._token = token
        self._password = password
        self.timeout = timeout
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        self.session: str = ""
        self.methods: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"GatewayClient({self.url!r}, connected={self._ws is not None})"

    def connect(self) -> GatewayClient:
        """Open the connection and authenticate.

        :raises GatewayUnavailable: nothing answers, or the connection broke.
        :raises AuthenticationFailed: the credentials were refused, or the server
            could not prove it knows them.
        """
        try:
            self._ws = connect(
                self.url,
                open_timeout=self.timeout,
                close_timeout=2,
                proxy=None,
                compression=None,
                max_size=16 * 1024 * 1024,
                **_CONNECT_FLAGS,
            )
        except InvalidStatus as exc:
            raise GatewayUnavailable(
                f"{self.url} refused the WebSocket upgrade: HTTP {exc.response.status_code}"
            ) from None
        except InvalidURI as exc:
            raise GatewayUnavailable(f"{self.url} is not a ws:// URL: {exc}") from None
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise GatewayUnavailable(
                f"cannot connect to {self.url}: {exc}; is `clawcore gateway run` running?"
            ) from None
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise
        return self

    def _recv_json(self, timeout: float | None = None) -> dict[str, Any]:
        assert self._ws is not None
        try:
            raw = self._ws.recv(timeout=self.timeout if timeout is None else timeout)
        except TimeoutError:
            raise GatewayUnavailable(f"{self.url} did not answer within {self.timeout}s") from None
        except ConnectionClosed as exc:
            raise GatewayUnavailable(f"{self.url} closed the connection ({exc})") from None
        try:
            msg = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            raise GatewayUnavailable(f"{self.url} sent something that is not JSON") from None
        if not isinstance(msg, dict):
            raise GatewayUnavailable(f"{self.url} sent an unexpected message")
        return msg

    def _handshake(self) -> None:
        assert self._ws is not None
        challenge = self._recv_json()
        if challenge.get("type") == "error":
            self._raise_auth_error(challenge)
        if challenge.get("type") != "challenge" or not isinstance(challenge.get("nonce"), str):
            raise GatewayUnavailable(f"{self.url} did not send a challenge; is it a clawcore gateway?")
        nonce = challenge["nonce"]
        schemes = challenge.get("schemes") or []
        if not (isinstance(schemes, list) and all(isinstance(s, str) for s in schemes)):
            raise AuthenticationFailed(f"{self.url} sent a malformed challenge (schemes is not a list of names)")
        key, scheme = self._key_for(challenge, schemes)
        cnonce = base64.urlsafe_b64encode(secrets.token_bytes(24)).decode()
        answer: dict[str, Any] = {"type": "auth", "scheme": scheme, "nonce": nonce}
        if key is not None:
            answer.update(cnonce=cnonce, mac=client_mac(key, nonce, cnonce))
        try:
            self._ws.send(json.dumps(answer))
        except ConnectionClosed as exc:
            raise GatewayUnavailable(f"{self.url} closed the connection ({exc})") from None
        try:
            reply = self._recv_json()
        except GatewayUnavailable:
            raise AuthenticationFailed(f"{self.url} closed the connection during authentication") from None
        if reply.get("type") != "welcome":
            self._raise_auth_error(reply)
        if key is not None:
            proof = reply.get("proof")
            if not isinstance(proof, str) or not hmac.compare_digest(
                proof.encode(), server_proof(key, nonce, cnonce).encode()
            ):
                raise AuthenticationFailed(
                    f"{self.url} could not prove it knows the secret; not talking to it"
                )
        self.session = str(reply.get("session", ""))
        methods = reply.get("methods")
        self.methods = tuple(m for m in methods if isinstance(m, str)) if isinstance(methods, list) else ()

    def _key_for(self, challenge: Mapping[str, Any], schemes: list[Any]) -> tuple[bytes | None, str]:
        if schemes == ["none"]:
            if self._token or self._password:
                # A client given a secret expects a server that knows it; one that asks for nothing could
                # be anyone on that port, and it would get our requests and answer them as it likes.
                raise AuthenticationFailed(
                    f"{self.url} asks for no authentication, but a secret was given: it cannot prove it "
                    "knows it; not talking to it")
            return None, "none"  # a server without auth on loopback; nothing secret is sent
        if self._token and "token" in schemes:
            return self._token.encode(), "token"
        if self._password and "password" in schemes:
            params = challenge.get("scrypt")
            n, r, p = (params.get(k) for k in "nrp") if isinstance(params, dict) else (None, None, None)
            if problem := scrypt_cost_problem(n, r, p):
                raise AuthenticationFailed(
                    f"{self.url} asked for scrypt parameters n={_said(str(n), '?')} r={_said(str(r), '?')} "
                    f"p={_said(str(p), '?')}; refused: {problem}")
            try:
                salt = base64.b64decode(str(challenge.get("salt", "")), validate=True)
            except ValueError:
                salt = b""
            if len(salt) < 8:
                raise AuthenticationFailed(f"{self.url} sent a malformed salt (not base64 of 8 bytes or more)")
            assert isinstance(n, int) and isinstance(r, int) and isinstance(p, int)
            try:
                return derive_password_key(self._password, salt, n, r, p), "password"
            except (ValueError, MemoryError) as exc:  # what scrypt itself refuses, whatever the bounds above
                raise AuthenticationFailed(f"{self.url} asked for scrypt settings that fail here: {exc}") from None
        offered = ", ".join(_said(s, "?") for s in schemes) or "nothing"
        raise AuthenticationFailed(
            f"{self.url} wants {offered}; pass --token or --password (or set CLAWCORE_GATEWAY_TOKEN)"
        )

    def _raise_auth_error(self, msg: Mapping[str, Any]) -> None:
        error = msg.get("error") if isinstance(msg.get("error"), dict) else {}
        assert isinstance(error, dict)
        if error.get("code") == "locked_out":
            retry = error.get("retryAfter")
            valid = isinstance(retry, (int, float)) and not isinstance(retry, bool) and math.isfinite(retry)
            raise LockedOut(f"{self.url}: {_said(error.get('message'), 'locked out')}",
                            max(0.0, float(retry)) if valid else 0.0)
        raise AuthenticationFailed(f"{self.url}: {_said(error.get('message'), 'authentication failed')}")

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Call a method and return its result.

        :raises GatewayCallError: the method answered with an error (``.code``).
        """
        if self._ws is None:
            self.connect()
        assert self._ws is not None
        request_id = next(self._ids)
        try:
            try:
                self._ws.send(json.dumps({"id": request_id, "method": method, "params": dict(params or {})}))
            except ConnectionClosed as exc:
                raise GatewayUnavailable(f"{self.url} closed the connection ({exc})") from None
            reply = self._reply_to(request_id)
        except GatewayUnavailable:
            # A late answer must never be read as the next call's: that call starts on a new connection.
            self.close()
            raise
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            # A tool's error may span lines; only what could drive a terminal is escaped.
            raise GatewayCallError(_said(error.get("code"), "error"), printable(str(error.get("message", ""))))
        return reply.get("result")

    def _reply_to(self, request_id: int) -> dict[str, Any]:
        """The answer carrying ``request_id``; answers to anything else are skipped."""
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._recv_json(timeout=max(0.0, deadline - time.monotonic()))
            answered = reply.get("id")
            if answered == request_id and not isinstance(answered, bool):
                return reply
            if answered is None and "error" in reply:  # the server could not read the request's id
                return reply

    def close(self) -> None:
        if self._ws is not None:
            ws, self._ws = self._ws, None
            ws.close()

    def __enter__(self) -> Self:
        if self._ws is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
