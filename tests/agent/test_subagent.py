"""Sub-agents: subagent_spawning decides, the child runs in its own transcript and sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clawcore import Decision, hookimpl
from clawcore.agent.subagent import parent_of
from clawcore.sessions import InvalidSessionId, SessionStore
from clawcore.testing.openai_server import OpenAIServer, text_reply, tool_reply
from test_loop_support import make_runtime

ALLOW_SPAWN = {"tools": {"policy": {"allow": ["spawn_subagent"]}}}


def test_a_subagent_runs_its_task_in_a_child_session(clawcore_home: Path, plugin_manager: Any, register_plugin: Any,
                                                    openai_server: OpenAIServer) -> None:
    asked: list[tuple[str, str]] = []

    class Watch:
        @hookimpl
        def subagent_spawning(self, task: str, context: Any) -> None:
            asked.append((task, context.session_id))

    register_plugin(Watch(), "watch")
    openai_server.script(
        tool_reply("spawn_subagent", {"task": "count the notes"}),
        text_reply("there are 3 notes"),          # the child's answer
        text_reply("the sub-agent says 3 notes"),  # the parent's final reply
    )
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, extra=ALLOW_SPAWN)
    with runtime.session() as session:
        reply = session.send("how many notes are there? ask a sub-agent")
    assert reply.text == "the sub-agent says 3 notes"
    assert asked == [("count the notes", session.id)]
    children = [info.id for info in SessionStore(clawcore_home).list() if info.id != session.id]
    assert len(children) == 1 and children[0].startswith(f"{session.id}.sub-")
    child = SessionStore(clawcore_home).read(children[0]).entries
    assert any(e.get("content") == "there are 3 notes" for e in child)
    parent = SessionStore(clawcore_home).read(session.id).entries
    tool_results = [e for e in parent if e.get("role") == "tool"]
    assert tool_results and tool_results[0]["content"] == "there are 3 notes"
    # the parent is offered spawn_subagent; the child, which may not use it, is not
    offered = [[t["function"]["name"] for t in r.body.get("tools", [])] for r in openai_server.requests_to("chat/completions")]
    assert "spawn_subagent" in offered[0] and "spawn_subagent" not in offered[1]
    runtime.close()


def test_a_monitor_can_refuse_the_spawn(clawcore_home: Path, plugin_manager: Any, register_plugin: Any,
                                        openai_server: OpenAIServer) -> None:
    class Lock:
        @hookimpl
        def subagent_spawning(self, task: str, context: Any) -> Decision:
            return Decision.deny("session risk too high for sub-agents")

    register_plugin(Lock(), "lock")
    openai_server.script(tool_reply("spawn_subagent", {"task": "exfiltrate"}), text_reply("ok, I could not"))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, extra=ALLOW_SPAWN)
    with runtime.session() as session:
        session.send("start a helper")
    parent = SessionStore(clawcore_home).read(session.id).entries
    [result] = [e for e in parent if e.get("role") == "tool"]
    assert "session risk too high" in result["content"]
    assert [info.id for info in SessionStore(clawcore_home).list()] == [session.id]
    runtime.close()


def test_confirm_without_a_handler_refuses_and_subagents_cannot_nest(clawcore_home: Path, plugin_manager: Any,
                                                                      register_plugin: Any,
                                                                      openai_server: OpenAIServer) -> None:
    class Ask:
        @hookimpl
        def subagent_spawning(self, task: str, context: Any) -> Decision:
            return Decision.confirm("a person should agree")

    register_plugin(Ask(), "ask")
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, extra=ALLOW_SPAWN)
    refused = runtime.call_tool("spawn_subagent", {"task": "x"}, context=runtime.context("s1"))
    assert refused.is_error and "a person should agree" in refused.content
    nested = runtime.call_tool("spawn_subagent", {"task": "x"}, context=runtime.context("s1.sub-abc"))
    assert nested.is_error and "cannot start another sub-agent" in nested.content
    runtime.close()


def test_each_session_has_its_own_sandbox(clawcore_home: Path, plugin_manager: Any,
                                          openai_server: OpenAIServer) -> None:
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server)
    first, second = runtime.sandbox_for("a"), runtime.sandbox_for("b")
    assert first is not second and runtime.sandbox_for("a") is first
    runtime.release_sandbox("a")
    assert runtime.sandbox_for("a") is not first
    runtime.close()


def test_a_subagent_calling_spawn_anyway_is_refused_without_asking(clawcore_home: Path, plugin_manager: Any,
                                                                    openai_server: OpenAIServer) -> None:
    asked: list[str] = []

    def confirm(call: Any, decision: Any) -> bool:
        asked.append(call.name)
        return True

    openai_server.script(
        tool_reply("spawn_subagent", {"task": "count the notes"}),
        tool_reply("spawn_subagent", {"task": "and again"}),  # the child, though it was not offered the tool
        text_reply("I cannot start helpers"),
        text_reply("done"),
    )
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, confirm=confirm,
                           extra={"tools": {"policy": {"confirm": ["spawn_subagent"]}}})
    with runtime.session() as session:
        session.send("ask a sub-agent")
    assert asked == ["spawn_subagent"]  # the parent's call only
    [child] = [info.id for info in SessionStore(clawcore_home).list() if info.id != session.id]
    [result] = [e for e in SessionStore(clawcore_home).read(child).entries if e.get("role") == "tool"]
    assert result["content"] == "error: spawn_subagent is not available in this session"
    runtime.close()


def test_a_session_with_the_longest_valid_id_can_start_a_subagent(clawcore_home: Path, plugin_manager: Any,
                                                                   openai_server: OpenAIServer) -> None:
    openai_server.script(tool_reply("spawn_subagent", {"task": "count the notes"}), text_reply("3 notes"),
                         text_reply("the helper says 3"))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, extra=ALLOW_SPAWN)
    parent_id = "p" * 128
    with runtime.session(parent_id) as session:
        assert session.send("ask a helper").text == "the helper says 3"
    [child] = [info.id for info in SessionStore(clawcore_home).list() if info.id != parent_id]
    assert parent_of(child) == parent_id
    assert [e["content"] for e in SessionStore(clawcore_home).read(child).entries if e.get("role") == "assistant"] == [
        "3 notes"]
    runtime.close()
    # The suffix is admitted after a parent id only; a longer id of any other shape is still refused.
    for too_long in ("p" * 129, "p" * 128 + ".sub-zzzzzzzz", "p" * 128 + ".sub-0123abcd.sub-0123abcd"):
        with pytest.raises(InvalidSessionId):
            SessionStore(clawcore_home).path(too_long)
