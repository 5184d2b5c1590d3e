"""The WebSocket gateway: authenticated JSON method calls into one runtime.

Wire protocol (text frames, one JSON object each):

1. server → ``{"type": "challenge", "version": 1, "nonce": …, "schemes": [...], "salt"?, "scrypt"?}``
2. client → ``{"type": "auth", "scheme": "token"|"password"|"none", "nonce": …,
   "cnonce": …, "mac": …}``
3. server → ``{"type": "welcome", "proof": …, "methods": [...]}`` or ``{"type": "error", "error": {...}}``
   and the connection closes.
4. client → ``{"id": 1, "method": "memory.search", "params": {...}}``;
   server → ``{"id": 1, "result": …}`` or ``{"id": 1, "error": {"code": …, "message": …}}``.

Every runtime call (tools, audit, sessions) runs on one worker thread, so the
runtime and its SQLite connections are used from one thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import json
import logging
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from clawcore.gateway.auth import (
    FailureLimiter,
    NonceBook,
    Secrets,
    client_mac,
    is_loopback,
    server_proof,
    weak_secret_reason,
)
from clawcore.gateway.errors import GatewayCallError, GatewayConfigError
from clawcore.gateway.methods import METHODS, check_params
from clawcore.gateway.settings import GatewaySettings

if TYPE_CHECKING:
    from clawcore.runtime import Runtime

__all__ = ["PROTOCOL_VERSION", "GatewayServer", "check_bind"]

PROTOCOL_VERSION = 1
_log = logging.getLogger("clawcore.gateway")


def check_bind(settings: GatewaySettings) -> None:
    """Refuse to listen beyond loopback without a secret, or with a weak one.

    :raises GatewayConfigError: with what to change.
    """
    if is_loopback(settings.host):
        return
    if not (settings.token or settings.password):
        raise GatewayConfigError(
            f"refusing to bind {settings.host!r}: beyond loopback the gateway needs auth.token or "
            "auth.password (or CLAWCORE_GATEWAY_TOKEN); set one, or bind 127.0.0.1"
        )
    for kind, secret in (("token", settings.token), ("password", settings.password)):
        reason = weak_secret_reason(secret, kind) if secret else None
        if reason:
            raise GatewayConfigError(f"refusing to bind {settings.host!r}: {reason}")


def _dumps(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a client sent "\ud800"): escaped, it is still valid JSON
        return json.dumps(obj, ensure_ascii=True, default=str)
    return text


def _error(code: str, message: str, request_id: Any = None, **extra: Any) -> dict[str, Any]:
    return {"id": request_id, "error": {"code": code, "message": message, **extra}}


class GatewayServer:
    """Serves one :class:`~clawcore.runtime.Runtime` over WebSocket.

    :param runtime: the runtime every call goes through (not closed by the server).
    :param settings: bind address, secrets, limits.
    :raises GatewayConfigError: an unsafe bind (see :func:`check_bind`).
    """

    def __init__(self, runtime: Runtime, settings: GatewaySettings) -> None:
        try:
            check_bind(settings)
        except GatewayConfigError as exc:
            runtime.audit(
                "gateway.bind_refused", {"host": settings.host, "port": settings.port, "reason": str(exc)}
            )
            raise
        self.runtime = runtime
        self.settings = settings
        self.secrets = Secrets.build(settings.token, settings.password)
        self.nonces = NonceBook(settings.handshake_timeout)
        self.limiter = FailureLimiter(settings.max_failures, settings.failure_window, settings.lockout)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clawcore-gateway-runtime")
        self._server: Server | None = None
        self._ids = itertools.count(1)
        self.address: tuple[str, int] | None = None

    # -- lifecycle ---------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.address is None:
            raise RuntimeError("the gateway is not started")
        host, port = self.address
        return f"ws://[{host}]:{port}" if ":" in host else f"ws://{host}:{port}"

    async def start(self) -> tuple[str, int]:
        """Fire ``gateway_start``, bind and listen; returns the bound ``(host, port)``."""
        await self._in_runtime(self.runtime.start)
        self._server = await serve(
            self._handle,
            self.settings.host,
            self.settings.port,
            process_request=self._check_origin,
            max_size=self.settings.max_message_size,
            server_header=None,
            compression=None,
        )
        sockname = self._server.sockets[0].getsockname()
        self.address = (sockname[0], sockname[1])
        await self._audit(
            "gateway.started",
            {
                "host": self.address[0],
                "port": self.address[1],
                "schemes": sorted(self.secrets.keys) or ["none"],
            },
        )
        return self.address

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
            await self._audit("gateway.stopped", {})
        self._executor.shutdown(wait=True)

    async def serve_forever(self) -> None:
        """Start and serve until cancelled."""
        await self.start()
        assert self._server is not None
        try:
            await self._server.serve_forever()
        finally:
            await self.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[GatewayServer]:
        """Serve on a background thread for the duration of the block (embedding, tests)."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []

        def main() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                failed.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.close())
            loop.close()

        thread = threading.Thread(target=main, name="clawcore-gateway", daemon=True)
        thread.start()
        ready.wait(60)
        if failed:
            raise failed[0]
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(60)

    # -- runtime access ------------------------------------------------------------

    async def _in_runtime(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def _audit(self, kind: str, data: Mapping[str, Any], session_id: str = "") -> None:
        def write() -> None:
            self.runtime.audit(kind, data, session_id=session_id)

        try:
            await self._in_runtime(write)
        # Auditing must not take the connection down; sinks report their own failures.
        except Exception:  # noqa: BLE001
            _log.exception("audit of %s failed", kind)

    # -- HTTP upgrade ------------------------------------------------------------

    def _check_origin(self, connection: ServerConnection, request: Request) -> Response | None:
        origins = request.headers.get_all("Origin")
        if not origins or (len(origins) == 1 and origins[0] in self.settings.allowed_origins):
            return None
        origin = ", ".join(origins)  # several Origin headers: no browser sends that; refused like a stranger
        client = connection.remote_address[0] if connection.remote_address else "unknown"
        self._executor.submit(
            self.runtime.audit, "gateway.origin_refused", {"client": client, "origin": origin}
        )
        return connection.respond(HTTPStatus.FORBIDDEN, "origin not allowed (gateway.allowedOrigins)\n")

    # -- one connection -------------------------------------------------------------

    async def _send(self, ws: ServerConnection, obj: Mapping[str, Any]) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.send(_dumps(obj))

    async def _handle(self, ws: ServerConnection) -> None:
        client = str(ws.remote_address[0]) if ws.remote_address else "unknown"
        left = self.limiter.locked_for(client)
        if left:
            await self._audit(
                "gateway.auth", {"outcome": "locked_out", "client": client, "retryAfter": math.ceil(left)}
            )
            await self._send(
                ws,
                {
                    "type": "error",
                    **_error(
                        "locked_out",
                        f"too many failed attempts; retry in {math.ceil(left)}s",
                        retryAfter=math.ceil(left),
                    ),
                },
            )
            await ws.close(1008, "locked out")
            return
        nonce = self.nonces.issue()
        await self._send(
            ws,
            {
                "type": "challenge",
                "version": PROTOCOL_VERSION,
                "nonce": nonce,
                **self.secrets.challenge_fields(),
            },
        )
        try:
            raw = await asyncio.wait_for(ws.recv(), timeout=self.settings.handshake_timeout)
        except TimeoutError:
            self.nonces.consume(nonce)
            await self._auth_failed(ws, client, "", "no answer within the handshake timeout")
            return
        except ConnectionClosed as closed:
            self.nonces.consume(nonce)
            if closed.sent is not None and closed.sent.code == 1009:  # the answer was over maxMessageSize
                await self._count_failure(client, "", "auth message larger than maxMessageSize")
            return
        scheme, reason, proof = self._check_auth(raw, nonce)
        if not reason and self.limiter.locked_for(client):
            # Checked again at the answer: handshakes opened before the lock must not outlast it, or
            # many parallel connections would make many guesses (and one right answer would get in).
            reason = "the address was locked out while this handshake was open"
        if reason:
            await self._auth_failed(ws, client, scheme, reason)
            return
        self.limiter.succeeded(client)
        session_id = f"gateway-{next(self._ids)}"
        await self._audit(
            "gateway.auth", {"outcome": "success", "client": client, "scheme": scheme}, session_id=session_id
        )
        await self._send(
            ws, {"type": "welcome", "proof": proof, "session": session_id, "methods": sorted(METHODS)}
        )
        context = self.runtime.context(session_id, channel="gateway")
        try:
            async for message in ws:
                reply = await self._dispatch(message, client, context)
                await ws.send(_dumps(reply))
        except ConnectionClosed:
            pass

    def _check_auth(self, raw: str | bytes, nonce: str) -> tuple[str, str, str]:
        """``(scheme, failure reason or "", server proof)``; the nonce is spent either way."""
        fresh = self.nonces.consume(nonce)
        if not isinstance(raw, str):
            return "", "binary frame instead of an auth message", ""
        try:
            msg = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            return "", "auth message is not JSON", ""
        if not isinstance(msg, dict) or msg.get("type") != "auth":
            return "", "first message is not an auth message", ""
        scheme = msg.get("scheme")
        scheme = scheme if isinstance(scheme, str) else ""
        answered = msg.get("nonce")
        if not isinstance(answered, str) or not answered.isascii() or not hmac.compare_digest(answered, nonce):
            return scheme, "answer is for another nonce (a replay)", ""
        if not fresh:
            return scheme, "nonce expired or already used", ""
        if not self.secrets.required:
            return ("none", "", "") if scheme == "none" else (scheme, f"unknown scheme {scheme!r}", "")
        key = self.secrets.keys.get(scheme)
        if key is None:
            return scheme, f"scheme {scheme!r} is not enabled", ""
        cnonce, mac = msg.get("cnonce"), msg.get("mac")
        if not (isinstance(cnonce, str) and 16 <= len(cnonce) <= 256 and cnonce.isascii()
                and isinstance(mac, str) and mac.isascii()):
            return scheme, "cnonce or mac missing or malformed", ""
        if not hmac.compare_digest(client_mac(key, nonce, cnonce), mac):
            return scheme, f"wrong {scheme}", ""
        return scheme, "", server_proof(key, nonce, cnonce)

    async def _count_failure(self, client: str, scheme: str, reason: str) -> None:
        locked = self.limiter.failed(client)
        await self._audit(
            "gateway.auth",
            {"outcome": "failure", "client": client, "scheme": scheme, "reason": reason, "lockedOut": locked},
        )

    async def _auth_failed(self, ws: ServerConnection, client: str, scheme: str, reason: str) -> None:
        await self._count_failure(client, scheme, reason)
        # The client learns only that it failed, not which check it failed.
        await self._send(ws, {"type": "error", **_error("auth_failed", "authentication failed")})
        with contextlib.suppress(ConnectionClosed):
            await ws.close(1008, "authentication failed")

    async def _dispatch(self, message: str | bytes, client: str, context: Any) -> dict[str, Any]:
        if not isinstance(message, str):
            return _error("bad_request", "binary frames are not supported; send JSON text")
        try:
            request = json.loads(message)
        except ValueError as exc:
            return _error("parse_error", f"not JSON: {exc}")
        except RecursionError:
            return _error("parse_error", "not JSON this server reads: nested too deeply")
        if not isinstance(request, dict):
            return _error("bad_request", "a request is a JSON object with id, method and params")
        request_id = request.get("id")
        if not (
            request_id is None or isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
        ):
            return _error("bad_request", "id must be a string, an integer or null")
        if isinstance(request_id, str) and len(request_id) > 200:
            return _error("bad_request", "id is longer than 200 characters")
        name = request.get("method")
        if not isinstance(name, str):
            return _error("bad_request", "method must be a string", request_id)
        method = METHODS.get(name)
        if method is None:
            return _error(
                "unknown_method",
                f"no method {name[:100]!r}; available: {', '.join(sorted(METHODS))}",
                request_id,
            )
        params = request.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error("bad_params", "params must be a JSON object", request_id)

        def call() -> Any:
            check_params(method, params)
            return method.handler(self.runtime, params, context)

        try:
            result = await self._in_runtime(call)
        except GatewayCallError as exc:
            await self._audit(
                "gateway.call",
                {"client": client, "method": name, "ok": False, "code": exc.code},
                session_id=context.session_id,
            )
            return _error(exc.code, exc.message, request_id)
        except Exception as exc:  # noqa: BLE001 - a bug in a handler must not take the connection down
            _log.exception("gateway method %s failed", name)
            await self._audit(
                "gateway.call",
                {
                    "client": client,
                    "method": name,
                    "ok": False,
                    "code": "internal_error",
                    "error": f"{type(exc).__name__}: {exc}",
                },
                session_id=context.session_id,
            )
            return _error("internal_error", f"{name} failed: {type(exc).__name__}", request_id)
        await self._audit(
            "gateway.call", {"client": client, "method": name, "ok": True}, session_id=context.session_id
        )
        return {"id": request_id, "result": result}
