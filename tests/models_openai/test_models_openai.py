"""clawcore-models-openai against the loopback OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import json
import logging
import time

import clawcore_models_openai
import importlib_metadata
import pytest
from clawcore import Message, ProviderUnavailable, Tool, ToolCall, ToolResult
from clawcore.config import load_config
from clawcore.errors import ConfigError
from clawcore.hooks import Hooks
from clawcore.testing.openai_server import OpenAIServer, text_reply, tool_reply

SECRET = "sk-test-0123456789abcdefSECRET"


def test_entry_point_is_found() -> None:
    names = {ep.name: ep.value for ep in importlib_metadata.entry_points(group="clawcore")}
    assert names.get("models_openai") == "clawcore_models_openai"


def _factory(plugin_manager, register_plugin):  # type: ignore[no-untyped-def]
    register_plugin(clawcore_models_openai, "models_openai")
    return Hooks(plugin_manager).models()["openai"]


def test_registered_as_openai_and_config_defaults(plugin_manager, register_plugin, tmp_path) -> None:
    factory = _factory(plugin_manager, register_plugin)
    config = load_config(tmp_path, data={"models": {"openai": {"model": "m"}}}, pm=plugin_manager)
    section = config.section("models.openai")
    assert section["contextWindow"] == 128000 and section["apiKeyEnv"] == "OPENAI_API_KEY"
    model = factory({**section, "baseUrl": "http://127.0.0.1:9/v1"})
    assert model.context_window == 128000 and model.name == "openai:m"


def test_bad_config_is_one_line_per_problem(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(clawcore_models_openai, "models_openai")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, data={"models": {"openai": {"modle": "x", "timeout": "soon"}}}, pm=plugin_manager)
    problems = caught.value.problems
    assert any("modle: unknown key (did you mean 'model'?)" in p for p in problems)
    assert any("timeout" in p and "duration" in p for p in problems)


def model_for(server: OpenAIServer, **settings: object) -> clawcore_models_openai.OpenAIChatModel:
    return clawcore_models_openai.OpenAIChatModel(
        {"model": "scripted", "baseUrl": server.base_url, "apiKey": SECRET, "retries": 0, **settings}
    )


ECHO = Tool("echo", "Echo text back.", {"type": "object", "properties": {"text": {"type": "string"}}},
            lambda args, ctx: ToolResult(str(args.get("text"))))


def test_text_reply_and_usage(openai_server: OpenAIServer) -> None:
    openai_server.script(text_reply("hello there"))
    reply = model_for(openai_server).complete([Message("system", "be brief"), Message("user", "hi")])
    assert reply.content == "hello there" and reply.tool_calls == ()
    assert reply.input_tokens > 0 and reply.output_tokens > 0
    [request] = openai_server.requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert "tools" not in request.body


def test_tool_calls_round_trip(openai_server: OpenAIServer) -> None:
    openai_server.script(tool_reply(calls=[("echo", {"text": "a"}), ("echo", {"text": "b"})]), text_reply("ok"))
    model = model_for(openai_server)
    first = model.complete([Message("user", "echo twice")], [ECHO])
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == [("echo", {"text": "a"}), ("echo", {"text": "b"})]
    assert all(c.id for c in first.tool_calls)
    history = [
        Message("user", "echo twice"),
        Message("assistant", "", tool_calls=first.tool_calls),
        *(Message("tool", c.arguments["text"], tool_call_id=c.id) for c in first.tool_calls),
    ]
    assert model.complete(history, [ECHO]).content == "ok"
    sent = openai_server.requests[1].body
    assert sent["tools"][0]["function"]["name"] == "echo"
    assistant = sent["messages"][1]
    assert assistant["role"] == "assistant"
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [{"text": "a"}, {"text": "b"}]
    assert [m["tool_call_id"] for m in sent["messages"][2:]] == [c.id for c in first.tool_calls]


def test_malformed_tool_arguments_keep_their_text_under_the_marker(openai_server: OpenAIServer) -> None:
    from clawcore.types import UNREADABLE_ARGUMENTS

    openai_server.script(tool_reply("echo", "{not json"), tool_reply("echo", "[1, 2]"))
    [call] = model_for(openai_server).complete([Message("user", "x")], [ECHO]).tool_calls
    assert call == ToolCall("echo", {UNREADABLE_ARGUMENTS: "{not json"}, call.id)
    [listed] = model_for(openai_server).complete([Message("user", "x")], [ECHO]).tool_calls
    assert listed.arguments == {UNREADABLE_ARGUMENTS: "[1, 2]"}


def test_retries_honour_retry_after(openai_server: OpenAIServer) -> None:
    openai_server.fail(429, retry_after="0.1", endpoint="chat")
    openai_server.script(text_reply("after the wait"))
    assert model_for(openai_server, retries=1).complete([Message("user", "x")]).content == "after the wait"
    first, second = openai_server.requests
    assert (first.status, second.status) == (429, 200)
    assert second.received - first.received >= 0.09


def test_failures_are_provider_unavailable_without_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with OpenAIServer(api_key="sk-other") as server, pytest.raises(ProviderUnavailable) as caught:
        model_for(server).complete([Message("user", "x")])
    message = str(caught.value)
    assert "HTTP 401" in message and "apiKey" in message and "\n" not in message
    assert SECRET not in message
    assert SECRET not in caplog.text


def test_unreachable_and_slow_servers(openai_server: OpenAIServer) -> None:
    openai_server.fail(delay=1.0, endpoint="chat")
    with pytest.raises(ProviderUnavailable, match="did not answer in time"):
        model_for(openai_server, timeout="200ms").complete([Message("user", "x")])
    with pytest.raises(ProviderUnavailable, match="cannot connect"):
        clawcore_models_openai.OpenAIChatModel(
            {"baseUrl": "http://127.0.0.1:9/v1", "retries": 0, "timeout": "2s"}).complete([Message("user", "x")])


def test_missing_key_without_base_url_is_actionable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderUnavailable, match="set OPENAI_API_KEY"):
        clawcore_models_openai.OpenAIChatModel({})
    monkeypatch.setenv("MY_KEY", SECRET)
    model = clawcore_models_openai.OpenAIChatModel({"apiKeyEnv": "MY_KEY"})
    assert SECRET not in repr(model)


def _completion(message: object = None, **fields: object) -> bytes:
    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}, **fields}
    return json.dumps(body).encode()


@pytest.mark.parametrize(("body", "content_type", "expected"), [
    (b"<html>ok</html>", "text/html", "not a chat completion"),
    (b'data: {"choices": []}\n\ndata: [DONE]\n\n', "text/event-stream", "not a chat completion"),
    (b"[]", "application/json", "not a chat completion"),
    (_completion(choices=[{"index": 0}]), "application/json", "first choice has no message"),
    (_completion(choices=[None]), "application/json", "first choice has no message"),
    (_completion({"role": "assistant", "content": {"a": 1}}), "application/json", "neither text nor text parts"),
    (_completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": None, "arguments": "{}"}}]}),
     "application/json", "a tool call has no function name"),
])
def test_unexpected_answers_are_one_line_provider_unavailable(
        openai_server: OpenAIServer, body: bytes, content_type: str, expected: str) -> None:
    openai_server.fail(body=body, content_type=content_type, endpoint="chat")
    with pytest.raises(ProviderUnavailable) as caught:
        model_for(openai_server).complete([Message("user", "x")])
    message = str(caught.value)
    assert expected in message and openai_server.base_url in message and "\n" not in message


def test_null_usage_counts_zero_and_text_parts_are_joined(openai_server: OpenAIServer) -> None:
    openai_server.fail(body=_completion({"role": "assistant", "content": ["a", {"type": "text", "text": "b"}]},
                                        usage={"prompt_tokens": None}), endpoint="chat")
    reply = model_for(openai_server).complete([Message("user", "x")])
    assert (reply.content, reply.input_tokens, reply.output_tokens) == ("ab", 0, 0)


def test_a_refusal_is_the_reply(openai_server: OpenAIServer) -> None:
    openai_server.fail(body=_completion({"role": "assistant", "content": None,
                                         "refusal": "I cannot help with that."}), endpoint="chat")
    assert model_for(openai_server).complete([Message("user", "x")]).content == "I cannot help with that."


def test_arguments_nested_too_deep_are_unreadable(openai_server: OpenAIServer) -> None:
    from clawcore.types import UNREADABLE_ARGUMENTS

    deep = "[" * 100_000 + "]" * 100_000
    openai_server.script(tool_reply("echo", deep))
    [call] = model_for(openai_server).complete([Message("user", "x")], [ECHO]).tool_calls
    assert call.arguments == {UNREADABLE_ARGUMENTS: deep}


def test_the_timeout_bounds_a_dripping_answer(openai_server: OpenAIServer) -> None:
    openai_server.fail(drip=0.2, endpoint="chat")  # 20 pieces: about 4 s, each read quick
    openai_server.script(text_reply("too late"))
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match="did not answer in time"):
        model_for(openai_server, timeout="1s").complete([Message("user", "x")])
    assert time.monotonic() - started < 2


def test_a_body_too_large_is_refused_once_not_fetched_again(openai_server: OpenAIServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clawcore_models_openai.chat, "_MAX_BODY_BYTES", 4096)
    openai_server.fail(body=json.dumps({"padding": "x" * 8192}).encode(), endpoint="chat")
    with pytest.raises(ProviderUnavailable, match="the response is larger than 4096 bytes"):
        model_for(openai_server, retries=2).complete([Message("user", "x")])
    assert len(openai_server.requests_to("chat/completions")) == 1


@pytest.mark.parametrize(("settings", "expected"), [
    ({"baseUrl": "not a url"}, "baseUrl: 'not a url' is not an http:// or https:// URL"),
    ({"baseUrl": "ftp://127.0.0.1/v1"}, "is not an http:// or https:// URL"),
    ({"baseUrl": "127.0.0.1:18080/v1"}, "is not an http:// or https:// URL"),
    ({"baseUrl": "http://10.0.0.5:11434/v1"}, "plain http:// to a host other than loopback"),
    ({"timeout": "0s"}, "timeout: '0s' is not a duration above 0"),
    ({"apiKeyEnv": SECRET}, "apiKeyEnv: the value (not shown: it may be a secret) is not an environment variable"),
])
def test_bad_endpoint_settings_fail_config_check(plugin_manager, register_plugin, tmp_path,  # type: ignore[no-untyped-def]
                                                 settings: dict[str, object], expected: str) -> None:
    register_plugin(clawcore_models_openai, "models_openai")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, data={"models": {"openai": settings}}, pm=plugin_manager)
    [problem] = caught.value.problems
    assert expected in problem and SECRET not in problem


def test_good_endpoint_settings_pass(plugin_manager, register_plugin, tmp_path) -> None:  # type: ignore[no-untyped-def]
    register_plugin(clawcore_models_openai, "models_openai")
    for settings in ({"baseUrl": "http://127.0.0.1:11434/v1"}, {"baseUrl": "http://localhost:8000"},
                     {"baseUrl": "http://[::1]:8000/v1"}, {"baseUrl": "https://llm.example.com/v1"},
                     {"baseUrl": "http://10.0.0.5:11434/v1", "allowInsecureHttp": True}):
        load_config(tmp_path, data={"models": {"openai": settings}}, pm=plugin_manager)


def test_settings_that_skip_the_config_are_checked_too() -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        clawcore_models_openai.OpenAIChatModel({"apiKeyEnv": SECRET, "baseUrl": "http://127.0.0.1:9/v1"})
    assert "apiKeyEnv is not an environment variable name" in str(caught.value) and SECRET not in str(caught.value)
    with pytest.raises(ProviderUnavailable, match="plain http://"):
        clawcore_models_openai.OpenAIChatModel({"baseUrl": "http://192.168.1.4/v1"})
    model = clawcore_models_openai.OpenAIChatModel({"baseUrl": "http://192.168.1.4/v1", "allowInsecureHttp": True})
    assert model.base_url == "http://192.168.1.4/v1"
