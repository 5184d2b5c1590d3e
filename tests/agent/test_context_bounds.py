"""The model's context stays inside its window: many or large tool results, compaction's own requests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clawcore import PromptSection, Tool, ToolResult, hookimpl
from clawcore.agent.compaction import SUMMARY_SYSTEM
from clawcore.sessions import SessionStore
from clawcore.testing.openai_server import OpenAIServer, count_tokens, text_reply, tool_reply
from test_loop_support import make_runtime

WINDOW = 8000
SMALL = {"compaction": {"reserveTokensFloor": 2000}}


def request_tokens(body: Mapping[str, Any]) -> int:
    """What the loopback server counts for a request's messages (the tool calls' text included)."""
    return sum(count_tokens(" ".join([message.get("content") or "", *(
        c["function"]["name"] + c["function"]["arguments"] for c in message.get("tool_calls") or [])]))
        for message in body["messages"])


def within_window(answer: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], Any]:
    """A chat handler that refuses, like a real server, any request larger than the window."""
    def handler(body: Mapping[str, Any]) -> Any:
        tokens = request_tokens(body)
        if tokens > WINDOW:
            raise RuntimeError(f"context_length_exceeded: {tokens} > {WINDOW}")
        messages = body["messages"]
        if messages[0]["content"].startswith(SUMMARY_SYSTEM[:40]):
            return text_reply("summary of the older messages")
        if "Memory flush" in (messages[-1].get("content") or ""):
            return text_reply("NO_REPLY")
        return answer(body)
    return handler


def big_tool(size: int, name: str = "dump") -> object:
    class Big:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(Tool(name, "A large result.", {"type": "object"},
                          lambda arguments, context: ToolResult("HEAD" + "x" * size + "TAIL")))
    return Big()


def test_many_large_results_of_one_reply_fit_the_window_together(
        clawcore_home: Path, plugin_manager: Any, register_plugin: Any, openai_server: OpenAIServer) -> None:
    register_plugin(big_tool(50_000), "dump")
    replies = [tool_reply(calls=[("dump", {"part": i}) for i in range(8)]), text_reply("read them"),
               text_reply("still here")]
    openai_server.on_chat(within_window(lambda body: replies.pop(0)))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW, agent=SMALL,
                           extra={"tools": {"policy": {"allow": ["dump"]}}})
    with runtime.session() as session:
        assert session.send("read the eight logs").text == "read them"
        assert session.send("and now?").text == "still here"
    second = openai_server.requests_to("chat/completions")[1].body["messages"]
    results = [m["content"] for m in second if m["role"] == "tool"]
    # together a quarter of (8000 - 2000) tokens, at four characters a token, each with its note
    assert len(results) == 8 and sum(len(r) for r in results) < 6000 + 8 * 150
    assert all(r.startswith("HEAD") and r.endswith("TAIL") and "left out" in r for r in results)


def test_a_turn_of_many_rounds_never_outgrows_the_window(
        clawcore_home: Path, plugin_manager: Any, register_plugin: Any, openai_server: OpenAIServer) -> None:
    register_plugin(big_tool(50_000), "dump")
    rounds = iter(range(10))
    openai_server.on_chat(within_window(
        lambda body: tool_reply("dump", {"round": r}) if (r := next(rounds)) < 9 else text_reply("finished")))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW, agent=SMALL,
                           extra={"tools": {"policy": {"allow": ["dump"]}}})
    with runtime.session() as session:
        assert session.send("read everything").text == "finished"
    last = openai_server.requests_to("chat/completions")[-1].body["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 9 and "this turn outgrew the model's context" in results[0]
    assert "outgrew" not in results[-1]  # the newest result is as the model first saw it


def test_an_oversized_context_is_summarised_in_requests_that_fit(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer) -> None:
    """A resumed session whose context is far past the window recovers on its next turn."""
    openai_server.on_chat(lambda body: text_reply("noted " + "r" * 3000))
    grown = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW,
                         agent={"compaction": {"enabled": False}})
    with grown.session() as session:
        for turn in range(12):
            session.send(f"turn {turn} " + "u" * 3000)
        session_id = session.id
    grown.close()
    openai_server.on_chat(within_window(lambda body: text_reply("back on track")))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW, agent=SMALL)
    with runtime.session(session_id) as resumed:
        reply = resumed.send("where were we?")
    assert reply.text == "back on track" and reply.compactions == 1
    summarising = [r for r in openai_server.requests_to("chat/completions")
                   if r.body["messages"][0]["content"].startswith(SUMMARY_SYSTEM[:40])]
    assert len(summarising) >= 2  # in chunks, each folding in the summary so far
    assert all(request_tokens(r.body) <= 6000 for r in summarising)
    assert "[earlier summary]\nsummary of the older messages" in summarising[1].body["messages"][1]["content"]


def test_a_summary_too_long_is_cut_and_compaction_does_not_repeat_every_turn(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer) -> None:
    def answer(body: Mapping[str, Any]) -> Any:
        if body["messages"][0]["content"].startswith(SUMMARY_SYSTEM[:40]):
            return text_reply("S" * 200_000)  # a summariser that ignores the length it was asked for
        if "Memory flush" in (body["messages"][-1].get("content") or ""):
            return text_reply("NO_REPLY")
        return text_reply("answer " + "a" * 3000)

    openai_server.on_chat(answer)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW,
                           agent={"compaction": {"reserveTokensFloor": 2000, "keepRecentTokens": 1000}})
    with runtime.session() as session:
        compactions = [session.send(f"q{turn} " + "u" * 3000).compactions for turn in range(8)]
        session_id = session.id
    assert compactions.count(1) == 2  # once a cycle of a few turns, not every turn
    requests = openai_server.requests_to("chat/completions")
    assert max(request_tokens(r.body) for r in requests) <= WINDOW
    summarising = [r.body["messages"][1]["content"] for r in requests
                   if r.body["messages"][0]["content"].startswith(SUMMARY_SYSTEM[:40])]
    assert all(s.startswith("(Write at most about 1000 words.)") for s in summarising)
    entries = runtime.home / "sessions" / f"{session_id}.jsonl"
    records = [json.loads(line) for line in entries.read_text().splitlines()]
    for record in (r for r in records if r["type"] == "compaction"):
        # a quarter of the threshold (6000 tokens), at four characters a token, and the note
        assert 6000 <= len(record["summary"]) < 6200 and "characters of this summary left out" in record["summary"]
        # counted like tokensBefore: the system prompt with the summary, then the messages kept
        assert 1500 < record["tokensAfter"] < record["tokensBefore"]


def test_the_summariser_s_tokens_count_in_the_session_s_usage(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer) -> None:
    answered: list[str] = []

    def answer(body: Mapping[str, Any]) -> Any:
        summarising = body["messages"][0]["content"].startswith(SUMMARY_SYSTEM[:40])
        flushing = "Memory flush" in (body["messages"][-1].get("content") or "")
        answered.append("SUMMARY " * 50 if summarising else "NO_REPLY" if flushing else "ok")
        return text_reply(answered[-1])

    openai_server.on_chat(answer)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW,
                           agent={"compaction": {"reserveTokensFloor": 2000, "keepRecentTokens": 500}})
    with runtime.session() as session:
        for _turn in range(8):
            session.send("u" * 4000)
    [info] = SessionStore(clawcore_home).list()
    requests = openai_server.requests_to("chat/completions")
    reported = sum(request_tokens(r.body) for r in requests) + sum(count_tokens(text) for text in answered)
    assert info.compactions >= 1 and info.tokens == reported


def test_the_summary_is_the_last_section_of_the_system_prompt(
        clawcore_home: Path, plugin_manager: Any, register_plugin: Any, openai_server: OpenAIServer) -> None:
    class Sections:
        @hookimpl
        def before_prompt_build(self, context: Any) -> list[PromptSection]:
            return [PromptSection("Plugin default", "at the default order"), PromptSection("Plugin late", "x", order=900)]

    register_plugin(Sections(), "sections")
    openai_server.on_chat(within_window(lambda body: text_reply("ok")))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=WINDOW,
                           agent={"compaction": {"reserveTokensFloor": 2000, "keepRecentTokens": 500}})
    with runtime.session() as session:
        while not session.send("u" * 4000).compactions:
            pass
        session.send("and now?")
    system = openai_server.requests_to("chat/completions")[-1].body["messages"][0]["content"]
    titles = [line for line in system.splitlines() if line.startswith("## ")]
    assert titles[-3:] == ["## Plugin default", "## Plugin late", "## Earlier in this conversation (summary)"]
