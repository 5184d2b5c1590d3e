"""JSONL transcripts: append-only, torn lines skipped, listing, replay after compaction, hostile ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clawcore import Message, ToolCall
from clawcore.sessions import (
    InvalidSessionId,
    SessionHistory,
    SessionNotFound,
    SessionStore,
    message_to_entry,
)


def test_torn_last_line_is_skipped_and_the_next_append_starts_fresh(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session_id, transcript = store.create("s1")
    transcript.append(message_to_entry(Message("user", "hello"), 1))
    transcript.append(message_to_entry(Message("assistant", "hi"), 2, usage={"input": 10, "output": 3}))
    with transcript.path.open("ab") as handle:
        handle.write(b'{"type":"message","seq":3,"role":"user","content":"cut in the mi')
    read = store.read(session_id)
    assert read.torn_tail and read.skipped == 1
    assert [e.get("content") for e in read.entries[1:]] == ["hello", "hi"]

    fresh = store.open(session_id)  # a new process appends after the crash
    fresh.append(message_to_entry(Message("user", "after the crash"), 3))
    read = store.read(session_id)
    assert not read.torn_tail and read.skipped == 1  # the torn fragment stays as a damaged middle line
    assert [e.get("content") for e in read.entries[1:]] == ["hello", "hi", "after the crash"]
    assert "line 4 is damaged" in read.problems[0]


@pytest.mark.parametrize("line", [
    b'{"type":"message","role":"user","content":"x","ts":NaN}',
    b'{"type":"message","role":"user","content":"x","ts":Infinity}',
    b'{"type":"message","role":"user","content":"x","ts":1e400}',
    b'{"type":"message","role":"user","content":"x","ts":"noon"}',
    b'{"type":"message","role":"assistant","content":"x","toolCalls":[{"id":"a","name":"bash","arguments":"rm"}]}',
    b'{"type":"message","role":"assistant","content":"x","toolCalls":"notalist"}',
    b'{"type":"message","role":"user","content":"x","metadata":[1]}',
])
def test_a_line_of_the_wrong_shape_is_damaged_not_fatal(tmp_path: Path, line: bytes) -> None:
    store = SessionStore(tmp_path)
    session_id, transcript = store.create("s1")
    with transcript.path.open("ab") as handle:
        handle.write(line + b"\n")
    transcript.append(message_to_entry(Message("user", "still here"), 2))
    read = store.read(session_id)
    assert read.skipped == 1 and read.entries[-1]["content"] == "still here"
    [info] = store.list()
    assert info.messages == 1
    assert SessionHistory.from_entries(read.entries).visible_messages == 1


def test_links_and_folders_are_not_transcripts(tmp_path: Path) -> None:
    from clawcore.errors import ClawcoreError
    from clawcore.sessions import Transcript

    store = SessionStore(tmp_path)
    store.create("real")
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    (store.root / "link.jsonl").symlink_to(outside)
    (store.root / "dir.jsonl").mkdir()
    assert [info.id for info in store.list()] == ["real"]
    with pytest.raises(ClawcoreError, match="symbolic link"):
        Transcript(store.root / "link.jsonl").append({"type": "message", "role": "user", "content": "x"})
    assert outside.read_text() == ""
    assert "a symbolic link" in Transcript(store.root / "link.jsonl").read().problems[0]
    assert "cannot be read" in Transcript(store.root / "dir.jsonl").read().problems[0]


def test_list_and_info(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert store.list() == []
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "old.jsonl").write_text(
        '{"type":"session","id":"old","ts":50.0}\n{"type":"message","seq":1,"role":"user","content":"a","ts":100.0}\n')
    _, new = store.create("new", channel="gateway")
    new.append({"type": "message", "seq": 1, "role": "user", "content": "b"})
    new.append({"type": "message", "seq": 2, "role": "assistant", "content": "c", "usage": {"input": 7, "output": 2}})
    new.append({"type": "flush", "compactionCount": 0})
    new.append({"type": "compaction", "compactionCount": 1, "summary": "s", "firstKeptSeq": 2})
    (tmp_path / "sessions" / "not a session.jsonl").write_text("x")
    infos = store.list()
    assert [i.id for i in infos] == ["new", "old"]
    info = infos[0]
    assert (infos[1].started, infos[1].last_activity) == (50.0, 100.0)
    assert (info.messages, info.tokens, info.compactions, info.flushes, info.channel) == (2, 9, 1, 1, "gateway")
    assert info.started <= info.last_activity


def test_replay_after_compaction_rebuilds_the_context() -> None:
    call = ToolCall("read_file", {"path": "a"}, "c1")
    entries = [
        {"type": "session", "id": "x"},
        message_to_entry(Message("user", "one"), 1),
        message_to_entry(Message("assistant", "", tool_calls=(call,)), 2),
        message_to_entry(Message("tool", "file a", tool_call_id="c1"), 3),
        message_to_entry(Message("user", "flush prompt"), 4, silent=True),
        {"type": "flush", "compactionCount": 0},
        message_to_entry(Message("assistant", "two"), 5),
        {"type": "compaction", "compactionCount": 1, "summary": "earlier: one", "firstKeptSeq": 5},
        message_to_entry(Message("user", "three"), 6),
    ]
    history = SessionHistory.from_entries(entries)
    assert [m.content for _, m in history.context] == ["two", "three"]
    assert (history.summary, history.compaction_count, history.memory_flush_compaction_count) == (
        "earlier: one", 1, 0)
    assert history.next_seq == 7
    full = SessionHistory.from_entries(entries[:4])
    assert full.context[1][1].tool_calls == (call,) and full.context[2][1].tool_call_id == "c1"
    assert full.memory_flush_compaction_count is None


@pytest.mark.parametrize("bad", ["../etc/passwd", "a/b", "", ".hidden", "x" * 200, "a\x00b", "..", "a..b"])
def test_hostile_ids_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        SessionStore(tmp_path).path(bad)


def test_missing_and_duplicate_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with pytest.raises(SessionNotFound, match="clawcore sessions list"):
        store.open("nope")
    store.create("dup")
    with pytest.raises(Exception, match="exists already"):
        store.create("dup")


def test_lines_are_json_objects_with_timestamps(tmp_path: Path) -> None:
    _, transcript = SessionStore(tmp_path).create("t")
    transcript.append(message_to_entry(Message("user", "ünïcode ✓"), 1))
    lines = transcript.path.read_text(encoding="utf-8").splitlines()
    assert all(isinstance(json.loads(line)["ts"], float) for line in lines)
    assert "ünïcode ✓" in lines[1]
    assert oct(transcript.path.stat().st_mode & 0o777) == "0o600"


def test_a_turn_cut_off_mid_tool_call_resumes_with_every_call_answered(tmp_path: Path) -> None:
    """Chat APIs refuse a tool call without a result: the replayed context closes it, the file is unchanged."""
    from clawcore.sessions.history import INTERRUPTED

    store = SessionStore(tmp_path)
    session_id, transcript = store.create("s1")
    transcript.append(message_to_entry(Message("user", "run it"), 1))
    transcript.append(message_to_entry(Message("assistant", "", tool_calls=(ToolCall("bash", {"command": "make"}, "c1"),
                                                                            ToolCall("bash", {"command": "ls"}, "c2"))), 2))
    transcript.append(message_to_entry(Message("tool", "listing", tool_call_id="c2"), 3))
    # Ctrl-C while c1 ran: its result never came; the next turn starts.
    transcript.append(message_to_entry(Message("user", "what happened?"), 4))
    transcript.append(message_to_entry(Message("tool", "late", tool_call_id="gone"), 5))  # its call is not there
    transcript.append(message_to_entry(Message("tool", "late c1", tool_call_id="c1"), 6))  # closed by the user message
    transcript.append(message_to_entry(Message("tool", "again", tool_call_id="c2"), 7))  # answered already
    transcript.append({"type": "message", "seq": 8, "role": "banana", "content": "?"})  # no chat API knows it
    transcript.append({"type": "message", "seq": 9, "role": "user", "content": {"x": 1}})  # not text
    context = [m for _, m in store.history(session_id).context]
    assert [(m.role, m.tool_call_id, m.content) for m in context] == [
        ("user", None, "run it"), ("assistant", None, ""), ("tool", "c2", "listing"), ("tool", "c1", INTERRUPTED),
        ("user", None, "what happened?")]
    read = store.read(session_id)
    assert len(read.entries) == 8 and read.skipped == 2  # header + seven intact lines as written; two damaged


@pytest.mark.parametrize("bad", ["abc\n", "abc\nx", "abc\r", " abc", "abc "])
def test_an_id_with_a_line_break_or_space_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        SessionStore(tmp_path).path(bad)


def test_a_line_nested_too_deeply_is_damaged_not_fatal(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session_id, transcript = store.create("s1")
    with transcript.path.open("a") as handle:
        handle.write("[" * 200_000 + "\n" + '{"type":"message","role":"user","content":' + "[" * 200_000 + "\n")
    transcript.append(message_to_entry(Message("user", "still here"), 1))
    read = store.read(session_id)
    assert read.skipped == 2 and read.entries[-1]["content"] == "still here"
    assert SessionHistory.from_entries(read.entries).visible_messages == 1
    [info] = store.list()
    assert info.skipped_lines == 2


def test_text_no_utf8_file_can_hold_is_stored_as_replacement_characters(tmp_path: Path) -> None:
    """A lone surrogate (a "\\ud800" escape, input that was not UTF-8) costs its character, not the entry."""
    store = SessionStore(tmp_path)
    session_id, transcript = store.create("s1")
    transcript.append(message_to_entry(Message("user", "hello \ud800 \udce9 \ud83d\ude00"), 1,
                                       metadata={"\udfff": ["x\ud800"]}))
    [_, entry] = store.read(session_id).entries
    assert entry["content"] == "hello \ufffd \ufffd \U0001f600" and entry["metadata"] == {"\ufffd": ["x\ufffd"]}
    assert store.read(session_id).skipped == 0
