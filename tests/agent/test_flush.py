"""Memory flush before compaction: the decision function and scripted runs across several cycles."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from clawcore import hookimpl
from clawcore.agent.compaction import SUMMARY_SYSTEM
from clawcore.memory.flush import flush_threshold, should_run_memory_flush
from clawcore.sessions import SessionStore
from clawcore.testing.openai_server import OpenAIServer, text_reply, tool_reply
from test_loop_support import FIXED_NOW, make_runtime

# -- should_run_memory_flush ---------------------------------------------------

WINDOW = 100_000  # threshold = 100000 - 20000 - 4000 = 76000


def flush(total: int, count: int = 0, flushed_at: int | None = None, **kw: int) -> bool:
    return should_run_memory_flush(total_tokens=total, context_window_tokens=WINDOW, compaction_count=count,
                                   memory_flush_compaction_count=flushed_at, **kw)


def test_threshold_is_window_minus_reserve_minus_soft() -> None:
    assert flush_threshold(WINDOW) == 76_000
    assert not flush(75_999)
    assert flush(76_000)
    assert flush(75_999, reserve_tokens_floor=20_001)
    assert not flush(70_000, soft_threshold_tokens=0)


def test_the_first_cycle_flushes_and_zero_means_flushed_in_cycle_zero() -> None:
    assert flush(80_000, count=0, flushed_at=None)
    assert not flush(80_000, count=0, flushed_at=0)


def test_once_per_cycle_and_no_cycle_is_skipped() -> None:
    flushed_at: int | None = None
    flushes_per_cycle = []
    for cycle in range(6):
        flushes = 0
        for _turn in range(3):  # several checks above the threshold within one cycle
            if flush(90_000, count=cycle, flushed_at=flushed_at):
                flushes += 1
                flushed_at = cycle  # recorded before the compaction increments the count
        flushes_per_cycle.append(flushes)
    assert flushes_per_cycle == [1, 1, 1, 1, 1, 1]


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="context_window_tokens"):
        should_run_memory_flush(total_tokens=1, context_window_tokens=0)
    with pytest.raises(ValueError, match="total_tokens"):
        should_run_memory_flush(total_tokens=-1, context_window_tokens=10)
    assert not should_run_memory_flush(total_tokens=0, context_window_tokens=10)
    # A window smaller than the reserves: the threshold is 0, any context flushes once per cycle.
    assert should_run_memory_flush(total_tokens=1, context_window_tokens=1000)


# -- scripted runs through the whole loop ---------------------------------------

NOTE = re.compile(r"memory/\d{4}-\d{2}-\d{2}\.md")
SMALL = {"compaction": {"reserveTokensFloor": 1500, "keepRecentTokens": 300,
                        "memoryFlush": {"softThresholdTokens": 500}}}


class Brain:
    """A scripted model: chats with long answers, stores one fact per flush, summarises on request."""

    def __init__(self, memory_path: str | None = None) -> None:
        self.flush_requests: list[Mapping[str, Any]] = []
        self.summaries = 0
        self.memory_path = memory_path

    def __call__(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        messages = body["messages"]
        system = messages[0]["content"]
        if system == SUMMARY_SYSTEM:
            self.summaries += 1
            return text_reply(f"summary {self.summaries} of the talk so far")
        if "Pre-compaction memory flush" in system:
            if messages[-1]["role"] == "user":
                self.flush_requests.append(body)
                path = self.memory_path or NOTE.search(system).group(0)  # type: ignore[union-attr]
                return tool_reply("write_file", {"path": path,
                                                 "content": f"- fact {len(self.flush_requests)}: project uses sqlite"})
            return text_reply("NO_REPLY")
        return text_reply("answer " + "lorem ipsum dolor sit amet " * 16)


def snapshot(workspace: Path) -> dict[str, bytes]:
    return {str(p.relative_to(workspace)): p.read_bytes() for p in sorted(workspace.rglob("*")) if p.is_file()}


def test_several_cycles_flush_once_each_before_compaction(clawcore_home: Path, plugin_manager: Any,
                                                          openai_server: OpenAIServer) -> None:
    workspace = clawcore_home / "workspace"
    (workspace / "MEMORY.md").write_bytes(b"# Memory\n\n- The user prefers short answers.\r\n")
    (workspace / "memory" / "2026-03-13.md").write_text("- yesterday's note\n")
    before = snapshot(workspace)
    brain = Brain()
    openai_server.on_chat(brain)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        for turn in range(45):
            session.send(f"turn {turn}: tell me more about the project " + "details " * 20)
    runtime.close()

    entries = SessionStore(clawcore_home).read(session.id).entries
    events = [(e["type"], e["compactionCount"]) for e in entries if e["type"] in ("flush", "compaction")]
    compactions = sum(1 for kind, _ in events if kind == "compaction")
    assert compactions >= 3, events
    # flush(0), compaction(->1), flush(1), compaction(->2), ...: one flush per cycle, always first.
    expected = []
    for cycle in range(compactions):
        expected += [("flush", cycle), ("compaction", cycle + 1)]
    assert events[: 2 * compactions] == expected
    assert len(events) - 2 * compactions in (0, 1)  # a flush may already have run in the open cycle
    assert session.compaction_count == compactions

    after = snapshot(workspace)
    assert after["MEMORY.md"] == before["MEMORY.md"]
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed == {"memory/2026-03-14.md"}
    note = after["memory/2026-03-14.md"].decode()
    flushes = sum(1 for kind, _ in events if kind == "flush")
    assert note.splitlines() == [f"- fact {i}: project uses sqlite" for i in range(1, flushes + 1)]
    # Flush turns are silent: marked in the transcript, never part of the model's context.
    silent = [e for e in entries if e.get("type") == "message" and e.get("silent")]
    assert silent and all(e["metadata"]["phase"] == "flush" for e in silent)
    visible_requests = [r for r in openai_server.requests_to("chat/completions")
                        if "Pre-compaction" not in r.body["messages"][0]["content"]]
    assert not any("Memory flush:" in str(r.body["messages"][1:]) for r in visible_requests)


def test_a_jump_past_both_thresholds_flushes_the_full_context_first(clawcore_home: Path, plugin_manager: Any,
                                                                    register_plugin: Any,
                                                                    openai_server: OpenAIServer) -> None:
    note = clawcore_home / "workspace" / "memory" / "2026-03-14.md"
    seen: list[tuple[str, Any]] = []

    class Watcher:
        @hookimpl
        def before_compaction(self, messages: Any, context: Any) -> None:
            seen.append(("before_compaction", note.exists()))

        @hookimpl
        def after_compaction(self, summary: str, compaction_count: int, context: Any) -> None:
            seen.append(("after_compaction", (summary, compaction_count)))

    register_plugin(Watcher(), "watcher")
    brain = Brain()
    openai_server.on_chat(brain)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("the first message mentions the ORCHID deadline")
        session.send("a very long paste " + "word " * 2400)  # past both thresholds, inside the window
    runtime.close()
    [flush_request] = brain.flush_requests
    assert "ORCHID" in str(flush_request["messages"])  # nothing was truncated before the flush
    entries = SessionStore(clawcore_home).read(session.id).entries
    assert [e["type"] for e in entries if e["type"] in ("flush", "compaction")] == ["flush", "compaction"]
    # The daily note was written before compaction began; the summary replaced the first turn.
    assert seen == [("before_compaction", True), ("after_compaction", ("summary 1 of the talk so far", 1))]
    assert session.summary == "summary 1 of the talk so far"
    assert [m.content[:18] for m in session.messages][:1] == ["a very long paste "]


def test_flush_cannot_write_memory_md_or_other_files(clawcore_home: Path, plugin_manager: Any,
                                                     openai_server: OpenAIServer) -> None:
    workspace = clawcore_home / "workspace"
    (workspace / "MEMORY.md").write_text("# Memory\n- keep me\n")
    before = snapshot(workspace)
    brain = Brain(memory_path="MEMORY.md")
    openai_server.on_chat(brain)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("x " * 9000)
    runtime.close()
    assert snapshot(workspace) == before
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert (flush_entry["writes"], flush_entry["refused"]) == (0, 1)
    refusal = [e for e in SessionStore(clawcore_home).read(session.id).entries
               if e.get("role") == "tool" and e.get("silent")]
    assert "only memory/2026-03-14.md may be written" in refusal[0]["content"]


def test_a_daily_note_linked_out_of_the_workspace_is_not_written_through(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("original\n")
    (clawcore_home / "workspace" / "memory" / "2026-03-14.md").symlink_to(outside)
    openai_server.on_chat(Brain())
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("x " * 9000)
    runtime.close()
    assert outside.read_text() == "original\n"
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert (flush_entry["writes"], flush_entry["refused"]) == (0, 1)
    refusal = [e for e in SessionStore(clawcore_home).read(session.id).entries
               if e.get("role") == "tool" and e.get("silent")]
    assert "is a link that leads out of the workspace" in refusal[0]["content"]


def test_a_note_that_cannot_be_written_is_a_failed_flush_not_nothing_to_store(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer) -> None:
    (clawcore_home / "workspace" / "memory" / "2026-03-14.md").mkdir()  # the append cannot succeed
    openai_server.on_chat(Brain())
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        reply = session.send("x " * 4600)
    runtime.close()
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert flush_entry["nothingToStore"] is False and flush_entry["writes"] == 0
    assert flush_entry["error"].startswith("the append to memory/2026-03-14.md failed")
    assert reply.compactions == 0  # deferred while the context still fits: the notes are not saved yet


def test_the_flush_starts_its_note_on_a_new_line(clawcore_home: Path, plugin_manager: Any,
                                                 openai_server: OpenAIServer) -> None:
    note = clawcore_home / "workspace" / "memory" / "2026-03-14.md"
    note.write_text("- written by hand this morning")
    openai_server.on_chat(Brain())
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("x " * 9000)
    runtime.close()
    assert note.read_text() == "- written by hand this morning\n- fact 1: project uses sqlite\n"


def test_nothing_to_store_is_a_valid_flush(clawcore_home: Path, plugin_manager: Any,
                                           openai_server: OpenAIServer) -> None:
    def quiet(body: Mapping[str, Any]) -> Mapping[str, Any]:
        system = body["messages"][0]["content"]
        if system == SUMMARY_SYSTEM:
            return text_reply("summary")
        return text_reply("NO_REPLY" if "Pre-compaction" in system else "ok")

    openai_server.on_chat(quiet)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("hello")
        reply = session.send("y " * 9000)
    runtime.close()
    assert reply.text == "ok" and (reply.flushes, reply.compactions) == (1, 1)
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert flush_entry["nothingToStore"] is True
    assert not (clawcore_home / "workspace" / "memory" / "2026-03-14.md").exists()


def test_daily_note_is_dated_in_the_configured_timezone(clawcore_home: Path, plugin_manager: Any,
                                                        openai_server: OpenAIServer) -> None:
    openai_server.on_chat(Brain())
    late = dt.datetime(2026, 3, 14, 23, 30, tzinfo=dt.UTC)  # already the 15th in Tokyo
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000,
                           extra={"timezone": "Asia/Tokyo"})
    with runtime.session(clock=lambda: late) as session:
        session.send("z " * 9000)
    runtime.close()
    assert (clawcore_home / "workspace" / "memory" / "2026-03-15.md").read_text().startswith("- fact 1")


def test_transcript_size_limit_triggers_flush_and_compaction(clawcore_home: Path, plugin_manager: Any,
                                                             openai_server: OpenAIServer) -> None:
    openai_server.on_chat(Brain())
    agent = {"compaction": {"keepRecentTokens": 50, "memoryFlush": {"maxTranscriptSize": "3k"}}}
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=agent)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        for turn in range(8):
            session.send(f"message {turn} " + "pad " * 100)
    runtime.close()
    entries = SessionStore(clawcore_home).read(session.id).entries
    kinds = [e["type"] for e in entries if e["type"] in ("flush", "compaction")]
    assert kinds[:2] == ["flush", "compaction"]
    assert all(e["reason"] == "size" for e in entries if e["type"] == "flush")


def test_a_second_session_finds_what_the_first_stored(clawcore_home: Path, plugin_manager: Any,
                                                      openai_server: OpenAIServer) -> None:
    def first(body: Mapping[str, Any]) -> Mapping[str, Any]:
        messages = body["messages"]
        system = messages[0]["content"]
        if system == SUMMARY_SYSTEM:
            return text_reply("summary")
        if "Pre-compaction memory flush" in system:
            if messages[-1]["role"] == "user":
                return tool_reply("write_file", {"path": NOTE.search(system).group(0),  # type: ignore[union-attr]
                                                 "content": "- The deploy codename is BLUEFALCON."})
            return text_reply("NO_REPLY")
        return text_reply("noted")

    openai_server.on_chat(first)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("Remember: the deploy codename is BLUEFALCON. " + "filler " * 3000)
    runtime.close()

    openai_server.reset()
    openai_server.script(tool_reply("memory_search", {"query": "deploy codename"}), text_reply("It is BLUEFALCON."))
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server)
    with runtime.session(clock=lambda: FIXED_NOW) as second:
        reply = second.send("What was the deploy codename?")
    runtime.close()
    assert second.id != session.id and reply.text == "It is BLUEFALCON."
    result = openai_server.requests_to("chat/completions")[1].body["messages"][-1]
    assert result["role"] == "tool" and "BLUEFALCON" in result["content"]
    assert "memory/2026-03-14.md" in result["content"]


def test_the_flush_write_passes_the_policy_and_a_user_confirm_rule_still_asks(
        clawcore_home: Path, plugin_manager: Any, openai_server: OpenAIServer) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []
    openai_server.on_chat(Brain())
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000,
                           extra={"tools": {"policy": {"confirm": ["write_file"]}}},
                           confirm=lambda call, decision: asked.append((call.name, decision.rules)) or False)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("hello")
        session.send("w " * 9000)
    runtime.close()
    assert [name for name, _ in asked] == ["write_file"]
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert flush_entry["writes"] == 0
    assert not (clawcore_home / "workspace" / "memory" / "2026-03-14.md").exists()


def test_a_monitor_confirm_without_rule_ids_is_not_pre_approved(clawcore_home: Path, plugin_manager: Any,
                                                               register_plugin: Any,
                                                               openai_server: OpenAIServer) -> None:
    """The flush pre-approves only the profile's own confirm: a monitor's joins it and then the handler decides."""
    from clawcore import Decision

    class Guard:
        @hookimpl
        def before_tool_call(self, call: Any, context: Any) -> Decision | None:
            return Decision.confirm("a human approves every file write") if call.name == "write_file" else None

    register_plugin(Guard(), "guard")
    openai_server.on_chat(Brain())
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, agent=SMALL, context_window=4000)
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("hello")
        session.send("w " * 9000)
    runtime.close()
    [flush_entry] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert flush_entry["writes"] == 0
    assert not (clawcore_home / "workspace" / "memory" / "2026-03-14.md").exists()


def test_a_failed_flush_defers_compaction_and_is_tried_again(clawcore_home: Path, plugin_manager: Any,
                                                              openai_server: OpenAIServer) -> None:
    """A transient model error during the flush must not cost the cycle its notes."""
    def answer(body: Mapping[str, Any]) -> Any:
        if str(body["messages"][-1].get("content")).startswith("Memory flush"):
            return text_reply("NO_REPLY")
        return text_reply("SUMMARY" if body["messages"][0]["content"] == SUMMARY_SYSTEM else "reply")

    openai_server.on_chat(answer)
    openai_server.fail(503, times=1, endpoint="chat")  # the first request of the session: turn 1's flush
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=2000,
                           agent={"compaction": {"reserveTokensFloor": 500,
                                                 "memoryFlush": {"softThresholdTokens": 500}}})
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        first = session.send("we decided the launch code word is PELICAN " + "x " * 2400)
        assert first.compactions == 0  # deferred: the flush failed
        second = session.send("more " * 1000)
        assert second.compactions == 1
    runtime.close()
    entries = SessionStore(clawcore_home).read(session.id).entries
    flushes = [e for e in entries if e["type"] == "flush"]
    assert ["error" in e for e in flushes] == [True, False]
    kinds = [e["type"] for e in entries if e["type"] in ("flush", "compaction")]
    assert kinds == ["flush", "flush", "compaction"]


def test_a_context_already_past_the_window_flushes_its_newest_part(clawcore_home: Path, plugin_manager: Any,
                                                                   openai_server: OpenAIServer) -> None:
    brain = Brain()
    openai_server.on_chat(brain)
    runtime = make_runtime(clawcore_home, plugin_manager, openai_server, context_window=3000,
                           agent={"compaction": {"reserveTokensFloor": 500,
                                                 "memoryFlush": {"softThresholdTokens": 500}}})
    with runtime.session(clock=lambda: FIXED_NOW) as session:
        session.send("the ORCHID deadline " + "x " * 2000)
        assert not brain.flush_requests
        session.send("the PELICAN review " + "y " * 4400)  # the context jumps past the 3000-token window
    runtime.close()
    [request] = brain.flush_requests
    sent = sum(len(str(m.get("content") or "")) for m in request["messages"])
    assert sent / 4 < 3000  # what the model is asked to read fits its window
    assert "PELICAN" in str(request["messages"]) and "ORCHID" not in str(request["messages"])
    [flushed] = [e for e in SessionStore(clawcore_home).read(session.id).entries if e["type"] == "flush"]
    assert flushed["writes"] == 1 and "error" not in flushed
