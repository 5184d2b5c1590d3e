"""``chat.send`` over the gateway: one agent turn against the loopback model server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clawcore.gateway import GatewayCallError, GatewayClient, GatewayServer, GatewaySettings
from clawcore.runtime import Runtime

TOKEN = "t0k3n-for-tests-9f2c41d7e8a6b5"


@pytest.fixture
def chat_runtime(clawcore_home: Path, plugin_manager: Any, openai_server: Any) -> Iterator[Runtime]:
    models = pytest.importorskip("clawcore_models_openai")
    plugin_manager.register(models, name="models_openai")
    config = {
        "models": {
            "openai": {
                "model": "scripted",
                "baseUrl": openai_server.base_url,
                "apiKey": "sk-gateway-test",
                "retries": 0,
                "timeout": "10s",
            }
        },
        "timezone": "UTC",
    }
    runtime = Runtime(clawcore_home, config=config, plugin_manager=plugin_manager)
    yield runtime
    runtime.close()


def test_chat_send_runs_a_turn_and_continues_the_session(chat_runtime: Runtime, openai_server: Any) -> None:
    from clawcore.testing.openai_server import text_reply

    openai_server.script(text_reply("We chose PostgreSQL."), text_reply("Because of billing."))
    server = GatewayServer(chat_runtime, GatewaySettings(host="127.0.0.1", port=0, token=TOKEN))
    with server.running(), GatewayClient(server.url, token=TOKEN) as client:
        first = client.call("chat.send", {"message": "What did we decide?"})
        assert first["text"] == "We chose PostgreSQL." and not first["withheld"]
        second = client.call("chat.send", {"message": "Why?", "session": first["session"]})
        assert second["session"] == first["session"] and second["text"] == "Because of billing."
        [listed] = client.call("sessions.list")
        assert listed["id"] == first["session"] and listed["channel"] == "gateway"
        assert listed["messages"] == 4
        for params in ({"message": "hi", "session": "../../etc/passwd"}, {"message": "hi", "session": "nosuch-1"},
                       {"message": "   "}):
            with pytest.raises(GatewayCallError) as info:
                client.call("chat.send", params)
            assert info.value.code == "bad_params", params
        assert not (chat_runtime.home / "sessions" / "nosuch-1.jsonl").exists()  # a mistyped id starts nothing
        # the session open elsewhere (another process, or here) is not written by two at once
        with chat_runtime.session(first["session"]):
            with pytest.raises(GatewayCallError) as info:
                client.call("chat.send", {"message": "Why?", "session": first["session"]})
            assert info.value.code == "unavailable" and "open elsewhere" in info.value.message


def test_chat_send_without_a_model_is_unavailable(runtime: Runtime) -> None:
    server = GatewayServer(runtime, GatewaySettings(host="127.0.0.1", port=0, token=TOKEN))
    with server.running(), GatewayClient(server.url, token=TOKEN) as client:
        with pytest.raises(GatewayCallError) as info:
            client.call("chat.send", {"message": "hello"})
        assert info.value.code == "unavailable"
        assert client.call("ping") == {"pong": True}


def test_text_with_a_lone_surrogate_is_a_turn_not_an_internal_error(
    chat_runtime: Runtime, openai_server: Any, capsys: Any
) -> None:
    from clawcore.cli import main
    from clawcore.sessions import SessionStore
    from clawcore.testing.openai_server import text_reply

    openai_server.script(text_reply("Hi."), text_reply("odd \ud800 \x1b[2J reply"))
    server = GatewayServer(chat_runtime, GatewaySettings(host="127.0.0.1", port=0, token=TOKEN))
    with server.running():
        with GatewayClient(server.url, token=TOKEN) as client:
            reply = client.call("chat.send", {"message": "hello \ud800"})
        assert reply["text"] == "Hi."
        assert openai_server.requests_to("chat/completions")[0].body["messages"][-1]["content"] == "hello \ufffd"
        entries = SessionStore(chat_runtime.home).read(reply["session"]).entries
        assert [e["content"] for e in entries if e["type"] == "message"] == ["hello \ufffd", "Hi."]
        code = main(["--home", str(chat_runtime.home), "gateway", "call", "chat.send", "--url", server.url,
                     "--token", TOKEN, "--params", json.dumps({"message": "again"})])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["text"] == "odd \ufffd \x1b[2J reply"  # printed as \u001b: inert
    assert "\x1b" not in out
