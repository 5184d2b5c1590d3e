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
import secrets
from collections.abc import Mapping
from typing import Any, Self

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.sync.client import ClientConnection, connect

from clawcore.gateway.auth import MIN_SCRYPT_N, client_mac, derive_password_key, server_proof
from clawcore.gateway.errors import (
    AuthenticationFailed,
    GatewayCallError,
    GatewayUnavailable,
    LockedOut,
)

__all__ = ["DEFAULT_URL", "GatewayClient"]

DEFAULT_URL = "ws://127.0.0.1:18789"
# websockets 17 wants `legacy=True` to hand back a plain connection; older versions have no such flag.
_CONNECT_FLAGS: dict[str, Any] = {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}


class GatewayClient:
    """Connects, authenticates (token, password or none) and calls methods.

    :param url: ``ws://host:port``.
    :param token: the shared token; or
    :param password: the password (the key is derived with the scrypt salt the server sends).
    :param timeout: seconds for connecting, the handshake and each call.
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

    def _recv_json(self) -> dict[str, Any]:
        assert self._ws is not None
        try:
            raw = self._ws.recv(timeout=self.timeout)
        except TimeoutError:
            raise GatewayUnavailable(f"{self.url} did not answer within {self.timeout}s") from None
        except ConnectionClosed as exc:
            raise GatewayUnavailable(f"{self.url} closed the connection ({exc})") from None
        try:
            msg = json.loads(raw)
        except ValueError:
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
        self.methods = tuple(reply.get("methods") or ())

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
            params = challenge.get("scrypt") or {}
            n, r, p = int(params.get("n", 0)), int(params.get("r", 0)), int(params.get("p", 0))
            if n < MIN_SCRYPT_N or r < 8 or p < 1 or n > 2**20 or r > 32 or p > 16:
                raise AuthenticationFailed(f"{self.url} asked for unsafe scrypt parameters n={n} r={r} p={p}")
            try:
                salt = base64.b64decode(str(challenge.get("salt", "")), validate=True)
            except ValueError:
                raise AuthenticationFailed(f"{self.url} sent a malformed salt") from None
            return derive_password_key(self._password, salt, n, r, p), "password"
        offered = ", ".join(str(s) for s in schemes) or "nothing"
        raise AuthenticationFailed(
            f"{self.url} wants {offered}; pass --token or --password (or set CLAWCORE_GATEWAY_TOKEN)"
        )

    def _raise_auth_error(self, msg: Mapping[str, Any]) -> None:
        error = msg.get("error") if isinstance(msg.get("error"), dict) else {}
        assert isinstance(error, dict)
        if error.get("code") == "locked_out":
            retry = float(error.get("retryAfter", 0) or 0)
            raise LockedOut(f"{self.url}: {error.get('message', 'locked out')}", retry)
        raise AuthenticationFailed(f"{self.url}: {error.get('message', 'authentication failed')}")

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Call a method and return its result.

        :raises GatewayCallError: the method answered with an error (``.code``).
        """
        if self._ws is None:
            self.connect()
        assert self._ws is not None
        request_id = next(self._ids)
        try:
            self._ws.send(json.dumps({"id": request_id, "method": method, "params": dict(params or {})}))
        except ConnectionClosed as exc:
            raise GatewayUnavailable(f"{self.url} closed the connection ({exc})") from None
        reply = self._recv_json()
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            raise GatewayCallError(str(error.get("code", "error")), str(error.get("message", "")))
        return reply.get("result")

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
