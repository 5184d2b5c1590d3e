"""Methods, malformed frames and load, against the real server on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from clawcore import Decision, ToolCall, hookimpl
from clawcore.gateway import GatewayCallError, GatewayClient
from clawcore.gateway.auth import client_mac
from clawcore.security.audit import read_records
from clawcore.security.audit_plugin import close_writers
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

TOKEN = "t0k3n-for-tests-9f2c41d7e8a6b5"  # the same as in conftest.py


def _authenticated(url: str) -> Any:
    ws = connect(url, proxy=None, open_timeout=5, legacy=True)
    challenge = json.loads(ws.recv(timeout=5))
    cnonce = "m" * 32
    ws.send(
        json.dumps(
            {
                "type": "auth",
                "scheme": "token",
                "nonce": challenge["nonce"],
                "cnonce": cnonce,
                "mac": client_mac(TOKEN.encode(), challenge["nonce"], cnonce),
            }
        )
    )
    assert json.loads(ws.recv(timeout=5))["type"] == "welcome"
    return ws


MALFORMED = [
    ("not json at all", "parse_error"),
    ("[1, 2, 3]", "bad_request"),
    ('{"id": 1}', "bad_request"),
    ('{"id": 2, "method": "no.such"}', "unknown_method"),
    ('{"id": 3, "method": "ping", "params": [1]}', "bad_params"),
    ('{"id": {"x": 1}, "method": "ping"}', "bad_request"),
    ('{"id": true, "method": "ping"}', "bad_request"),
    ('{"id": 4, "method": "memory.search", "params": {"query": 5}}', "bad_params"),
    ('{"id": 5, "method": "memory.search", "params": {}}', "bad_params"),
    ('{"id": 6, "method": "audit.tail", "params": {"n": "ten"}}', "bad_params"),
    ('{"id": 7, "method": "audit.tail", "params": {"rm": "-rf"}}', "bad_params"),
    ("\ud800".encode("utf-8", "surrogatepass").decode("latin-1"), "parse_error"),
    ("[" * 30_000 + "]" * 30_000, "parse_error"),  # nested deeper than the parser goes
]


def test_malformed_frames_get_errors_and_the_server_keeps_serving(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN, max_message_size=64 * 1024)
    with _authenticated(server.url) as ws:
        for frame, code in MALFORMED:
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=5))
            assert reply["error"]["code"] == code, frame
        ws.send(b"\x00\x01binary")
        assert json.loads(ws.recv(timeout=5))["error"]["code"] == "bad_request"
        ws.send('{"id": "\\ud800", "method": "ping"}')  # a lone surrogate escape, echoed back as an escape
        assert json.loads(ws.recv(timeout=5)) == {"id": "\ud800", "result": {"pong": True}}
        ws.send(json.dumps({"id": "after", "method": "ping"}))
        assert json.loads(ws.recv(timeout=5)) == {"id": "after", "result": {"pong": True}}
        ws.send("x" * (200 * 1024))  # over maxMessageSize: this connection is closed ...
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
    with _authenticated(server.url) as ws:  # ... and the server still serves others
        ws.send(json.dumps({"id": 1, "method": "ping"}))
        assert json.loads(ws.recv(timeout=5))["result"] == {"pong": True}


def test_garbage_instead_of_auth_is_an_auth_failure(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN)
    for garbage in ("{{{{", '{"type": "hello"}', '{"type": "auth", "scheme": "token"}',
                    '{"type": "auth", "scheme": "token", "nonce": "\\ud800"}', "[" * 100_000 + "]" * 100_000):
        with connect(server.url, proxy=None) as ws:
            ws.recv(timeout=5)
            ws.send(garbage)
            assert json.loads(ws.recv(timeout=5))["error"]["code"] == "auth_failed"


def test_a_hundred_concurrent_clients(start_gateway: Any) -> None:
    server = start_gateway(token=TOKEN)

    def one(n: int) -> Any:
        with GatewayClient(server.url, token=TOKEN, timeout=60) as client:
            pong = client.call("ping")
            tail = client.call("audit.tail", {"n": 1})
            return pong, len(tail)

    with ThreadPoolExecutor(max_workers=100) as pool:
        results = list(pool.map(one, range(100)))
    assert results == [({"pong": True}, 1)] * 100


def test_audit_tail(start_gateway: Any, runtime: Any) -> None:
    server = start_gateway(token=TOKEN)
    runtime.audit("ops.marker", {"n": 1})
    with GatewayClient(server.url, token=TOKEN) as client:
        records = client.call("audit.tail", {"n": 50, "kind": "ops.*"})
    assert [r["kind"] for r in records] == ["ops.marker"]
    assert set(records[0]) >= {"seq", "ts", "kind", "data", "prev", "hash"}


def test_audit_tail_by_kind_finds_records_far_back(start_gateway: Any, runtime: Any, clawcore_home: Path) -> None:
    from clawcore.security.audit import AuditLog

    server = start_gateway(token=TOKEN)
    runtime.audit("ops.rare", {"n": 1})
    runtime.audit("ops.rare", {"n": 2})
    with AuditLog(clawcore_home / "audit" / "audit.jsonl", checkpoint_every=0) as log:
        for i in range(3000):  # many records of other kinds after them
            log.append("tool.decision", {"i": i, "note": "ops.rare"})
    with GatewayClient(server.url, token=TOKEN) as client:
        assert [r["data"]["n"] for r in client.call("audit.tail", {"n": 5, "kind": "ops.rare"})] == [1, 2]
        assert [r["data"]["n"] for r in client.call("audit.tail", {"n": 1, "kind": "ops.*"})] == [2]
        assert client.call("audit.tail", {"n": 5, "kind": "no.such"}) == []
        assert client.call("audit.tail", {"n": 5, "kind": "\ud800"}) == []
        assert len(client.call("audit.tail", {"n": 1000})) == 1000


def test_sessions_list(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN)
    with GatewayClient(server.url, token=TOKEN) as client:
        assert client.call("sessions.list") == []


def test_memory_methods_go_through_the_tool_policy(
    start_gateway: Any, runtime: Any, register_plugin: Any, clawcore_home: Path
) -> None:
    if "memory_get" not in runtime.tools:
        pytest.skip("the memory tools are not registered in this build")

    class DenyMemoryGet:
        @hookimpl
        def decide_tool_call(self, call: ToolCall, context: Any) -> Decision | None:
            if call.name == "memory_get":
                return Decision.deny("memory_get is off for this test", rules=("test-deny",))
            return None

    register_plugin(DenyMemoryGet(), name="deny-memory-get")
    (clawcore_home / "workspace" / "MEMORY.md").write_text("# Memory\nWe chose PostgreSQL for billing.\n")
    server = start_gateway(token=TOKEN)
    with GatewayClient(server.url, token=TOKEN) as client:
        found = client.call("memory.search", {"query": "PostgreSQL billing"})
        assert "PostgreSQL" in found["content"]
        with pytest.raises(GatewayCallError) as info:
            client.call("memory.get", {"path": "MEMORY.md"})
        assert info.value.code == "denied"
    close_writers()
    decisions = [
        r for r in read_records(clawcore_home / "audit" / "audit.jsonl") if r.kind == "tool.decision"
    ]
    assert [d.data["final"] for d in decisions[-2:]] == ["allow", "deny"]
    assert all(d.session.startswith("gateway-") for d in decisions[-2:])


CLI = [sys.executable, "-c", "import sys; from clawcore.cli import main; sys.exit(main())"]


def test_a_password_in_the_url_is_masked_when_the_call_fails(clawcore_home: Path, capsys: Any) -> None:
    from clawcore.cli import main

    code = main(["--home", str(clawcore_home), "gateway", "call", "ping", "--url", "ws://bob:hunter2secret@127.0.0.1:1"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and line.startswith("error: cannot connect to ws://bob:") and "hunter2secret" not in line


def test_cli_call_exit_status(start_gateway: Any, clawcore_home: Path) -> None:
    server = start_gateway(token=TOKEN)
    env = {**os.environ, "CLAWCORE_HOME": str(clawcore_home), "CLAWCORE_LOAD_PLUGINS": ""}
    env.pop("CLAWCORE_GATEWAY_TOKEN", None)
    ok = subprocess.run(
        [*CLI, "gateway", "call", "ping", "--url", server.url, "--token", TOKEN],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"pong": True}
    bad = subprocess.run(
        [*CLI, "gateway", "call", "ping", "--url", server.url, "--token", "nope" * 5],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 4 and "authentication failed" in bad.stderr
    from_env = subprocess.run(
        [*CLI, "gateway", "call", "audit.tail", "--params", '{"n": 2}', "--url", server.url],
        check=False,
        capture_output=True,
        text=True,
        env={**env, "CLAWCORE_GATEWAY_TOKEN": TOKEN},
        timeout=60,
    )
    assert from_env.returncode == 0, from_env.stderr
    assert len(json.loads(from_env.stdout)) == 2


def test_cli_run_refuses_a_public_bind_without_a_secret(clawcore_home: Path) -> None:
    env = {**os.environ, "CLAWCORE_HOME": str(clawcore_home), "CLAWCORE_LOAD_PLUGINS": ""}
    env.pop("CLAWCORE_GATEWAY_TOKEN", None)
    env.pop("CLAWCORE_GATEWAY_PASSWORD", None)
    proc = subprocess.run(
        [*CLI, "gateway", "run", "--host", "0.0.0.0", "--port", "0"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "refusing to bind '0.0.0.0'" in proc.stderr


@pytest.mark.parametrize("option, value, message", [
    ("--url", "ws://127.0.0.1:99999", "Port out of range"),
    ("--url", "ws://[::1", "Invalid IPv6 URL"),
    ("--url", "http://127.0.0.1:1", "is not a ws:// or wss:// URL"),
    ("--timeout", "nan", "is not a number of seconds above 0"),
    ("--timeout", "0", "is not a number of seconds above 0"),
])
def test_cli_call_bad_options_are_usage_errors(clawcore_home: Path, capsys: Any, option: str, value: str,
                                               message: str) -> None:
    from clawcore.cli import main

    assert main(["--home", str(clawcore_home), "gateway", "call", "ping", option, value]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(("setting", "value", "ok"), [
    ("handshakeTimeout", 0, False), ("handshakeTimeout", "0s", False), ("handshakeTimeout", "50ms", False),
    ("handshakeTimeout", 0.5, True), ("maxMessageSize", 0, False), ("maxMessageSize", "512", False),
    ("maxMessageSize", "64k", True),
])
def test_settings_that_would_fail_every_client_are_refused(
    clawcore_home: Path, capsys: Any, setting: str, value: Any, ok: bool
) -> None:
    import yaml
    from clawcore.cli import main

    (clawcore_home / "clawcore.yaml").write_text(yaml.safe_dump({"gateway": {setting: value}}))
    assert main(["--home", str(clawcore_home), "config", "check"]) == (0 if ok else 2)
    err = capsys.readouterr().err
    assert ok or f"gateway.{setting}: {value!r} is below the least allowed" in err
