"""The client against a slow real gateway and against a hostile server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clawcore import hookimpl
from clawcore.cli import main
from clawcore.gateway import AuthenticationFailed, GatewayClient, GatewayUnavailable, LockedOut
from clawcore.types import ToolCall
from websockets.sync.server import ServerConnection, serve

TOKEN = "t0k3n-for-tests-9f2c41d7e8a6b5"  # the same as in conftest.py
PASSWORD = "correct horse battery staple"


def test_a_call_that_times_out_never_hands_its_answer_to_the_next(
    start_gateway: Any, register_plugin: Any
) -> None:
    class Slow:
        @hookimpl
        def before_tool_call(self, call: ToolCall, context: Any) -> None:
            if call.arguments.get("query") == "slow":
                time.sleep(1.5)

    register_plugin(Slow(), name="slow")
    server = start_gateway(token=TOKEN)
    client = GatewayClient(server.url, token=TOKEN, timeout=0.5).connect()
    try:
        first_session = client.session
        with pytest.raises(GatewayUnavailable, match="did not answer within 0.5s"):
            client.call("memory.search", {"query": "slow"})
        time.sleep(1.5)  # the late answer has arrived by now, on the old connection
        client.timeout = 5
        assert client.call("ping") == {"pong": True}  # not the search's late answer
        assert isinstance(client.call("sessions.list"), list)  # nor ping's
        assert client.session != first_session  # the call after a timeout runs on a new connection
    finally:
        client.close()


@pytest.fixture
def hostile() -> Iterator[Any]:
    """``hostile(frame)``: a URL where a server sends ``frame`` to every client instead of a gateway's challenge."""
    frames: list[str] = []

    def handler(ws: ServerConnection) -> None:
        ws.send(frames[-1])
        try:
            ws.recv(timeout=5)
        except Exception:  # noqa: BLE001 - the client gave up; so does the server
            return

    with serve(handler, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def send(frame: dict[str, Any] | str) -> str:
            frames.append(frame if isinstance(frame, str) else json.dumps(frame))
            return f"ws://127.0.0.1:{server.socket.getsockname()[1]}"

        yield send
        server.shutdown()
        thread.join(10)


def _challenge(**fields: Any) -> dict[str, Any]:
    return {"type": "challenge", "version": 1, "nonce": "n" * 43, "schemes": ["password"],
            "salt": "c2FsdHNhbHRzYWx0", "scrypt": {"n": 2**14, "r": 8, "p": 1}, **fields}


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (_challenge(scrypt={"n": "abc", "r": 8, "p": 1}), "n=abc r=8 p=1; refused: they are not integers"),
        (_challenge(scrypt=[2**14, 8, 1]), "refused: they are not integers"),
        (_challenge(scrypt={"n": True, "r": 8, "p": 1}), "refused: they are not integers"),
        (_challenge(scrypt={"n": 2**20, "r": 8, "p": 1}), "refused: they need more than 256 MiB of memory"),
        (_challenge(scrypt={"n": 2**15, "r": 8, "p": 16}), "refused: they cost more than 16 times the work"),
        (_challenge(scrypt={"n": 2**14 + 1, "r": 8, "p": 1}), "refused: n is not a power of 2"),
        (_challenge(scrypt={"n": 2**10, "r": 8, "p": 1}), "refused: they are weaker than n=16384"),
        (_challenge(salt=""), "malformed salt"),
        (_challenge(salt=["x"]), "malformed salt"),
        (_challenge(schemes="password"), "malformed challenge"),
        (_challenge(schemes={"password": 1}), "malformed challenge"),
        ({"type": "error", "error": {"code": "auth_failed", "message": "\x1b]0;pwned\x07go\naway"}},
         ": \\u001b]0;pwned\\u0007go away"),
    ],
)
def test_a_hostile_challenge_is_an_authentication_failure(hostile: Any, frame: Any, message: str) -> None:
    url = hostile(frame)
    with pytest.raises(AuthenticationFailed) as info:
        GatewayClient(url, password=PASSWORD, timeout=5).connect()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_nonce_no_utf8_can_hold_fails_the_handshake_not_the_client(hostile: Any) -> None:
    url = hostile(_challenge(nonce="\ud800"))
    with pytest.raises((AuthenticationFailed, GatewayUnavailable)) as info:
        GatewayClient(url, password=PASSWORD, timeout=5).connect()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("retry", ["soon", None, [1], True, float("nan"), -5])
def test_a_lockout_with_a_strange_retry_after(hostile: Any, retry: Any) -> None:
    url = hostile(json.dumps({"type": "error", "error": {"code": "locked_out", "message": "wait",
                                                          "retryAfter": retry}}))
    with pytest.raises(LockedOut) as info:
        GatewayClient(url, token=TOKEN, timeout=5).connect()
    assert info.value.retry_after == 0.0


def test_a_challenge_nested_too_deeply_is_no_gateway(hostile: Any) -> None:
    with pytest.raises(GatewayUnavailable, match="not JSON"):
        GatewayClient(hostile("[" * 200_000), token=TOKEN, timeout=5).connect()


def test_cli_call_against_a_hostile_server_exits_4_with_one_line(
    hostile: Any, clawcore_home: Path, capsys: Any
) -> None:
    url = hostile(_challenge(scrypt={"n": 2**20, "r": 8, "p": 1}))
    code = main(["--home", str(clawcore_home), "gateway", "call", "ping", "--url", url, "--password", PASSWORD])
    err = capsys.readouterr().err
    assert code == 4 and len(err.splitlines()) == 1 and "256 MiB" in err
