"""``clawcore sessions list|show`` on real transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def test_show_escapes_terminal_control_sequences(clawcore_home: Path) -> None:
    """Transcripts hold untrusted tool results: nothing in them may recolour, retitle or clear the terminal."""
    _, transcript = SessionStore(clawcore_home).create("s1")
    hostile = "\x1b]0;owned\x07\x1b[31mred\x1b[2J\r\u202eevil\x9b1m"
    transcript.append(message_to_entry(Message("tool", f"line one\n\t{hostile}", tool_call_id="c1"), 1))
    transcript.append(message_to_entry(
        Message("assistant", "", tool_calls=(ToolCall("bash", {"command": hostile}, "c2"),)), 2))
    for args in ([], ["--json"]):
        code, out, _ = run(clawcore_home, "sessions", "show", "s1", *args)
        assert code == 0
        assert not any(c in out for c in "\x1b\x07\r\u202e\x9b")
        carriage_return = "\\r" if args else "\\u000d"  # JSON spells it \r; both are inert
        assert f"\\u001b]0;owned\\u0007\\u001b[31mred\\u001b[2J{carriage_return}\\u202eevil\\u009b1m" in out
    code, out, _ = run(clawcore_home, "sessions", "show", "s1")
    assert "[tool] line one\n\t\\u001b]0;owned" in out  # newline and tab are kept
    code, out, _ = run(clawcore_home, "sessions", "show", "s1", "--json")
    assert json.loads(out.splitlines()[1])["content"] == f"line one\n\t{hostile}"  # the same JSON


def test_a_line_nested_too_deeply_is_skipped(clawcore_home: Path) -> None:
    store = SessionStore(clawcore_home)
    store.create("good")
    _, bad = store.create("bad")
    with bad.path.open("a") as handle:
        handle.write("[" * 200_000 + "\n")
    bad.append(message_to_entry(Message("user", "after the damage"), 1))
    code, out, _ = run(clawcore_home, "sessions", "list", "--json")
    assert code == 0 and {info["id"]: info["skipped_lines"] for info in json.loads(out)} == {"good": 0, "bad": 1}
    code, out, err = run(clawcore_home, "sessions", "show", "bad")
    assert code == 0 and "[user] after the damage" in out and "bad.jsonl: line 2 is damaged; skipped" in err


@pytest.mark.parametrize("strictness", ["strict", "surrogateescape"])
def test_chat_input_that_is_not_utf8_is_kept_with_replacement_characters(
    clawcore_home: Path, openai_server: Any, strictness: str
) -> None:
    import os
    import subprocess
    import sys

    import yaml
    from clawcore.testing.openai_server import text_reply

    pytest.importorskip("clawcore_models_openai")
    (clawcore_home / "clawcore.yaml").write_text(yaml.safe_dump({"models": {"openai": {
        "model": "scripted", "baseUrl": openai_server.base_url, "apiKey": "sk-chat-test", "retries": 0}}}))
    openai_server.script(text_reply("Bonjour."))
    env = {**os.environ, "CLAWCORE_HOME": str(clawcore_home), "PYTHONIOENCODING": f"utf-8:{strictness}"}
    done = subprocess.run([sys.executable, "-c", "import sys; from clawcore.cli import main; sys.exit(main())",
                           "chat"], input=b"caf\xe9 cr\xe8me\n", capture_output=True, env=env, timeout=60,
                          check=False)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert done.stdout.decode().strip() == "Bonjour."
    [info] = SessionStore(clawcore_home).list()
    entries = SessionStore(clawcore_home).read(info.id).entries
    assert [e["content"] for e in entries if e["type"] == "message"] == ["caf\ufffd cr\ufffdme", "Bonjour."]
    sent = openai_server.requests_to("chat/completions")[0].body["messages"][-1]["content"]
    assert sent == "caf\ufffd cr\ufffdme"  # the model got what the transcript holds
