"""The loopback OpenAI-compatible server answers the official SDK as the real API would."""

from __future__ import annotations

import json
import math

import openai
import pytest
from clawcore.testing.openai_server import OpenAIServer, deterministic_vector, text_reply, tool_reply


def client(server: OpenAIServer, **kwargs: object) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, **kwargs)  # type: ignore[arg-type]


def test_scripted_chat_replies_in_order_with_tool_calls(openai_server: OpenAIServer) -> None:
    openai_server.script(tool_reply("read_file", {"path": "notes.md"}), text_reply("done"))
    sdk = client(openai_server)
    first = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "notes.md"}
    assert first.choices[0].finish_reason == "tool_calls"
    second = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert second.choices[0].message.content == "done"
    assert second.usage is not None and second.usage.prompt_tokens > 0
    assert [r.body["model"] for r in openai_server.requests_to("chat/completions")] == ["m", "m"]


def test_callable_handler_sees_the_request(openai_server: OpenAIServer) -> None:
    openai_server.on_chat(lambda body: text_reply(f"you said {body['messages'][-1]['content']}"))
    reply = client(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "you said x"


def test_exhausted_script_is_a_500_and_an_error(openai_server: OpenAIServer) -> None:
    with pytest.raises(openai.InternalServerError):
        client(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert openai_server.errors == ["chat script exhausted"]


def test_faults_429_retry_after_then_success(openai_server: OpenAIServer) -> None:
    openai_server.fail(429, retry_after="0", endpoint="embeddings")
    with pytest.raises(openai.RateLimitError) as caught:
        client(openai_server).embeddings.create(model="e", input=["a"])
    assert caught.value.response.headers["retry-after"] == "0"
    ok = client(openai_server).embeddings.create(model="e", input=["a"])
    assert len(ok.data[0].embedding) == 64
    assert [r.status for r in openai_server.requests] == [429, 200]


def test_malformed_body_slow_and_wrong_dims(openai_server: OpenAIServer) -> None:
    openai_server.fail(body=b"{not json", endpoint="embeddings")
    with pytest.raises((openai.APIResponseValidationError, ValueError)):
        client(openai_server).embeddings.create(model="e", input=["a"])
    openai_server.fail(delay=1.0)
    with pytest.raises(openai.APITimeoutError):
        client(openai_server, timeout=0.2).embeddings.create(model="e", input=["a"])
    openai_server.fail(wrong_dims=3)
    assert len(client(openai_server).embeddings.create(model="e", input=["a"]).data[0].embedding) == 3


def test_auth_and_unknown_model() -> None:
    with OpenAIServer(api_key="sk-right", models={"known"}) as server:
        with pytest.raises(openai.AuthenticationError):
            client(server).embeddings.create(model="known", input=["a"])
        good = openai.OpenAI(api_key="sk-right", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.NotFoundError):
            good.embeddings.create(model="other", input=["a"])
        assert good.embeddings.create(model="known", input=["a"]).data


def test_deterministic_vectors() -> None:
    a, b, c = (deterministic_vector(t, 64) for t in ("the database migration", "migrate the database", "bananas"))
    assert a == deterministic_vector("the database migration", 64)
    assert math.isclose(sum(x * x for x in a), 1.0)
    dot = lambda u, v: sum(x * y for x, y in zip(u, v))
    assert dot(a, b) > dot(a, c)


def test_requested_dimensions_are_honoured(openai_server: OpenAIServer) -> None:
    reply = client(openai_server).embeddings.create(model="e", input=["a", "b"], dimensions=16)
    assert [len(d.embedding) for d in reply.data] == [16, 16]
