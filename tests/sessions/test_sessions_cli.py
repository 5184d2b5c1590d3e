"""``clawcore sessions list|show`` on real transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clawcore.cli import _add_commands, cli, main
from clawcore.cli.state import build_plugin_manager
from clawcore.sessions import SessionStore, message_to_entry
from clawcore.types import Message, ToolCall
from click.testing import CliRunner


def run(home: Path, *args: str) -> tuple[int, str, str]:
    pm = build_plugin_manager(home)
    _add_commands(cli, pm)
    result = CliRunner().invoke(cli, ["--home", str(home), *args], obj=pm, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home_with_session(clawcore_home: Path) -> Path:
    _, transcript = SessionStore(clawcore_home).create("20260314-093000-abcdef")
    transcript.append(message_to_entry(Message("user", "what is in notes.md?"), 1))
    transcript.append(message_to_entry(
        Message("assistant", "", tool_calls=(ToolCall("read_file", {"path": "notes.md"}, "c1"),)), 2,
        usage={"input": 120, "output": 8}))
    transcript.append(message_to_entry(Message("tool", "shopping list", tool_call_id="c1"), 3))
    transcript.append(message_to_entry(Message("assistant", "A shopping list."), 4,
                                       usage={"input": 140, "output": 5}))
    transcript.append({"type": "flush", "compactionCount": 0, "path": "memory/2026-03-14.md", "writes": 1,
                       "reason": "threshold"})
    transcript.append({"type": "compaction", "compactionCount": 1, "summary": "user asked about notes",
                       "summarisedMessages": 3, "firstKeptSeq": 4})
    with transcript.path.open("ab") as handle:
        handle.write(b'{"type":"mess')  # a crash mid-write
    return clawcore_home


def test_list(home_with_session: Path) -> None:
    code, out, _ = run(home_with_session, "sessions", "list")
    assert code == 0
    assert "20260314-093000-abcdef" in out and "273" in out  # tokens = 120+8+140+5
    code, out, _ = run(home_with_session, "sessions", "list", "--json")
    [info] = json.loads(out)
    assert (info["messages"], info["tokens"], info["compactions"], info["skipped_lines"]) == (2, 273, 1, 1)


def test_a_narrow_terminal_squeezes_no_column(home_with_session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    monkeypatch.setenv("COLUMNS", "40")
    code, out, _ = run(home_with_session, "sessions", "list")
    assert code == 0 and "…" not in out
    assert "20260314-093000-abcdef" in out and re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", out)
    assert "273" in out and "compactions" in out


def test_show(home_with_session: Path) -> None:
    code, out, err = run(home_with_session, "sessions", "show", "20260314-093000-abcdef")
    assert code == 0
    assert "[user] what is in notes.md?" in out
    assert '-> read_file({"path": "notes.md"})' in out
    assert "memory flush (threshold) to memory/2026-03-14.md: 1 write(s)" in out
    assert "compaction #1" in out and "user asked about notes" in out
    assert "torn last line" in err
    code, out, _ = run(home_with_session, "sessions", "show", "20260314-093000-abcdef", "--json")
    assert [json.loads(line)["type"] for line in out.splitlines()][-2:] == ["flush", "compaction"]


def test_errors_are_one_line(clawcore_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "show", "missing"]) == 1
    assert main(["sessions", "show", "../../etc/passwd"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: no session 'missing'") and "clawcore sessions list" in err[0]
    assert err[1].startswith("error: invalid session id")
    code, out, _ = run(clawcore_home, "sessions", "list")
    assert code == 0 and "no sessions" in out
