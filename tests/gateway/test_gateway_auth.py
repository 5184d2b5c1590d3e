"""The real server on loopback: challenge–response, replays, lockout, binds, audit."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from clawcore import hookimpl
from clawcore.gateway import (
    AuthenticationFailed,
    GatewayClient,
    GatewayConfigError,
    GatewayServer,
    GatewaySettings,
    LockedOut,
)
from clawcore.gateway.auth import client_mac
from clawcore.security.audit import read_records
from clawcore.security.audit_plugin import close_writers
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

TOKEN = "t0k3n-for-tests-9f2c41d7e8a6b5"  # the same as in conftest.py


def _audit(home: Path, kind: str = "gateway.auth") -> list[dict[str, Any]]:
    close_writers()
    return [dict(r.data) for r in read_records(home / "audit" / "audit.jsonl") if r.kind == kind]


def _raw(url: str) -> Any:
    return connect(url, proxy=None, open_timeout=5)


def test_good_token(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN)
    with GatewayClient(server.url, token=TOKEN) as client:
        assert client.call("ping") == {"pong": True}
        assert client.session.startswith("gateway-")
        assert "memory.search" in client.methods
    events = _audit(clawcore_home)
    assert events[-1]["outcome"] == "success" and events[-1]["scheme"] == "token"
    assert events[-1]["client"] == "127.0.0.1"


def test_wrong_token_is_refused_and_audited_without_the_secret(
    start_gateway: Any, clawcore_home: Path
) -> None:
    server = start_gateway(token=TOKEN)
    with pytest.raises(AuthenticationFailed, match="authentication failed"):
        GatewayClient(server.url, token="wrong-token-0123456789abcdef").connect()
    with pytest.raises(AuthenticationFailed):
        GatewayClient(server.url).connect()  # no credentials: refused by the client before sending anything
    failure = _audit(clawcore_home)[-1]
    assert failure["outcome"] == "failure" and failure["reason"] == "wrong token"
    log_text = (clawcore_home / "audit" / "audit.jsonl").read_text()
    assert TOKEN not in log_text and "wrong-token-0123456789abcdef" not in log_text


def test_the_secret_never_crosses_the_wire(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN)
    with _raw(server.url) as ws:
        challenge = json.loads(ws.recv(timeout=5))
        assert challenge["type"] == "challenge" and challenge["schemes"] == ["token"]
        cnonce = "c" * 32
        answer = {
            "type": "auth",
            "scheme": "token",
            "nonce": challenge["nonce"],
            "cnonce": cnonce,
            "mac": client_mac(TOKEN.encode(), challenge["nonce"], cnonce),
        }
        assert TOKEN not in json.dumps(answer)
        ws.send(json.dumps(answer))
        welcome = json.loads(ws.recv(timeout=5))
        assert welcome["type"] == "welcome" and TOKEN not in json.dumps(welcome)


def test_password(start_gateway: Any) -> None:
    server = start_gateway(password="correct horse battery staple")
    with GatewayClient(server.url, password="correct horse battery staple") as client:
        assert client.call("ping") == {"pong": True}
    with pytest.raises(AuthenticationFailed):
        GatewayClient(server.url, password="correct horse battery stapler").connect()


def test_replayed_response_fails(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN)
    with _raw(server.url) as ws:
        challenge = json.loads(ws.recv(timeout=5))
        cnonce = "r" * 32
        captured = json.dumps(
            {
                "type": "auth",
                "scheme": "token",
                "nonce": challenge["nonce"],
                "cnonce": cnonce,
                "mac": client_mac(TOKEN.encode(), challenge["nonce"], cnonce),
            }
        )
        ws.send(captured)
        assert json.loads(ws.recv(timeout=5))["type"] == "welcome"
    # The eavesdropper replays the captured answer on a new connection.
    with _raw(server.url) as ws:
        fresh = json.loads(ws.recv(timeout=5))
        assert fresh["nonce"] != challenge["nonce"]
        ws.send(captured)
        reply = json.loads(ws.recv(timeout=5))
        assert reply["type"] == "error" and reply["error"]["code"] == "auth_failed"
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
    assert _audit(clawcore_home)[-1]["reason"] == "answer is for another nonce (a replay)"


def test_brute_force_triggers_lockout(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN, max_failures=3, lockout=60.0)
    for attempt in range(3):
        with pytest.raises(AuthenticationFailed) as info:
            GatewayClient(server.url, token=f"guess-{attempt:02d}-aaaaaaaaaaaaaaa").connect()
        assert not isinstance(info.value, LockedOut)
    with pytest.raises(LockedOut) as locked:
        GatewayClient(server.url, token=TOKEN).connect()  # even the right token, while locked out
    assert 50 < locked.value.retry_after <= 60
    events = _audit(clawcore_home)
    assert [e["outcome"] for e in events[-4:]] == ["failure", "failure", "failure", "locked_out"]
    assert events[-2]["lockedOut"] is True


def _answer(ws: Any, nonce: str, token: str) -> dict[str, Any]:
    cnonce = "c" * 32
    ws.send(json.dumps({"type": "auth", "scheme": "token", "nonce": nonce, "cnonce": cnonce,
                        "mac": client_mac(token.encode(), nonce, cnonce)}))
    return json.loads(ws.recv(timeout=5))


def test_handshakes_opened_before_a_lockout_do_not_outlast_it(start_gateway: Any, clawcore_home: Path) -> None:
    """Parallel connections cannot multiply the guesses: the lock is checked again when an answer arrives."""
    server = start_gateway(token=TOKEN, max_failures=3, lockout=60.0)
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(_raw(server.url)) for _ in range(5)]
        nonces = [json.loads(ws.recv(timeout=5))["nonce"] for ws in sockets]
        for ws, nonce in zip(sockets[:4], nonces[:4], strict=True):
            assert _answer(ws, nonce, "a-wrong-guess-aaaaaaaaaaaaaa")["error"]["code"] == "auth_failed"
        right = _answer(sockets[4], nonces[4], TOKEN)  # the right secret, answered after the lock
        assert right["type"] == "error" and right["error"]["code"] == "auth_failed"
    last = _audit(clawcore_home)[-1]
    assert last["outcome"] == "failure" and "locked out while this handshake was open" in last["reason"]


def test_a_client_with_a_secret_refuses_a_server_that_asks_for_none(start_gateway: Any) -> None:
    server = start_gateway()  # no secret: anyone on the port could be answering
    with pytest.raises(AuthenticationFailed, match="asks for no authentication, but a secret was given"):
        GatewayClient(server.url, token=TOKEN).connect()


def test_lockout_expires(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN, max_failures=2, lockout=0.5)
    for _ in range(2):
        with pytest.raises(AuthenticationFailed):
            GatewayClient(server.url, token="x" * 20).connect()
    with pytest.raises(LockedOut):
        GatewayClient(server.url, token=TOKEN).connect()
    time.sleep(0.6)
    with GatewayClient(server.url, token=TOKEN) as client:
        assert client.call("ping") == {"pong": True}


def test_handshake_timeout(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN, handshake_timeout=0.3)
    with _raw(server.url) as ws:
        challenge = json.loads(ws.recv(timeout=5))
        time.sleep(0.6)
        reply = json.loads(ws.recv(timeout=5))
        assert reply["error"]["code"] == "auth_failed"
        late = {
            "type": "auth",
            "scheme": "token",
            "nonce": challenge["nonce"],
            "cnonce": "z" * 32,
            "mac": client_mac(TOKEN.encode(), challenge["nonce"], "z" * 32),
        }
        with pytest.raises(ConnectionClosed):
            ws.send(json.dumps(late))
            ws.recv(timeout=5)
    assert _audit(clawcore_home)[-1]["reason"] == "no answer within the handshake timeout"


def test_an_auth_answer_over_the_size_limit_is_an_audited_failure(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN, max_message_size=64 * 1024)
    with _raw(server.url) as ws:
        ws.recv(timeout=5)
        with pytest.raises(ConnectionClosed):
            ws.send("x" * (200 * 1024))
            ws.recv(timeout=5)
    deadline = time.monotonic() + 5
    while not (records := _audit(clawcore_home)):  # written as the server sees the connection close
        assert time.monotonic() < deadline, "no gateway.auth record"
        time.sleep(0.05)
    assert records[-1]["outcome"] == "failure"
    assert records[-1]["reason"] == "auth message larger than maxMessageSize"


def test_server_proves_it_knows_the_secret(start_gateway: Any) -> None:
    # A gateway with another token: the client refuses to go on even before the server's verdict.
    server = start_gateway(token="another-token-aaaaaaaaaaaaaaa")
    with pytest.raises(AuthenticationFailed):
        GatewayClient(server.url, token=TOKEN).connect()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.org"])
def test_non_loopback_bind_refused_without_a_secret(runtime: Any, host: str, clawcore_home: Path) -> None:
    with pytest.raises(GatewayConfigError, match="beyond loopback"):
        GatewayServer(runtime, GatewaySettings(host=host, port=0))
    assert _audit(clawcore_home, "gateway.bind_refused")[-1]["host"] == host


def test_non_loopback_bind_refused_with_a_weak_secret(runtime: Any) -> None:
    with pytest.raises(GatewayConfigError, match="at least 16"):
        GatewayServer(runtime, GatewaySettings(host="0.0.0.0", port=0, token="short"))
    with pytest.raises(GatewayConfigError, match="well-known default"):
        GatewayServer(runtime, GatewaySettings(host="0.0.0.0", port=0, password="changeme"))
    GatewayServer(runtime, GatewaySettings(host="0.0.0.0", port=0, token=TOKEN))  # accepted


def test_no_secret_on_loopback_needs_no_credentials(start_gateway: Any) -> None:
    server = start_gateway()
    with GatewayClient(server.url) as client:
        assert client.call("ping") == {"pong": True}


def test_browser_origins_are_refused(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN)
    with pytest.raises(InvalidStatus) as info:
        connect(server.url, proxy=None, origin="http://evil.example")  # type: ignore[arg-type]
    assert info.value.response.status_code == 403
    allowed = start_gateway(token=TOKEN, allowed_origins=("http://localhost:3000",))
    with connect(allowed.url, proxy=None, origin="http://localhost:3000") as ws:  # type: ignore[arg-type]
        assert json.loads(ws.recv(timeout=5))["type"] == "challenge"
    with pytest.raises(InvalidStatus) as twice:  # an allowed Origin and another one: refused, not a 500
        connect(allowed.url, proxy=None, origin="http://localhost:3000",  # type: ignore[arg-type]
                additional_headers=[("Origin", "http://evil.example")])
    assert twice.value.response.status_code == 403


def test_gateway_start_fires(start_gateway: Any, register_plugin: Any) -> None:
    seen: list[Any] = []

    class Monitor:
        @hookimpl
        def gateway_start(self, config: Any, home: Any) -> None:
            seen.append(home)

    register_plugin(Monitor(), name="monitor")
    start_gateway(token=TOKEN)
    assert len(seen) == 1


def test_failures_with_a_lone_surrogate_are_audited(start_gateway: Any, clawcore_home: Path) -> None:
    """A scheme no UTF-8 file can hold ("\\ud800") must not erase the failure, or the lockout, from the log."""
    server = start_gateway(token=TOKEN, max_failures=2, lockout=60.0)
    for _ in range(2):
        with _raw(server.url) as ws:
            challenge = json.loads(ws.recv(timeout=5))
            ws.send(json.dumps({"type": "auth", "scheme": "\ud800", "nonce": challenge["nonce"]}))
            assert json.loads(ws.recv(timeout=5))["error"]["code"] == "auth_failed"
    with pytest.raises(LockedOut):
        GatewayClient(server.url, token=TOKEN).connect()
    events = _audit(clawcore_home)
    assert [e["outcome"] for e in events[-3:]] == ["failure", "failure", "locked_out"]
    assert events[-3]["scheme"] == "\ufffd" and events[-2]["lockedOut"] is True
