"""``clawcore chat`` end to end: the installed plugins, a config file, the loopback model server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from clawcore.cli import _add_commands, cli
from clawcore.cli.state import build_plugin_manager
from clawcore.sessions import SessionStore
from clawcore.testing.openai_server import OpenAIServer, text_reply
from click.testing import CliRunner


def chat(home: Path, text: str, *args: str) -> tuple[int, str, str]:
    pm = build_plugin_manager(home)
    _add_commands(cli, pm)
    result = CliRunner().invoke(cli, ["--home", str(home), "chat", *args], obj=pm, input=text,
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def write_config(home: Path, server: OpenAIServer) -> None:
    (home / "clawcore.yaml").write_text(yaml.safe_dump({
        "models": {"openai": {"model": "scripted", "baseUrl": server.base_url, "apiKey": "sk-chat-test",
                              "retries": 0}},
    }))


def test_chat_turns_and_resume(clawcore_home: Path, openai_server: OpenAIServer) -> None:
    write_config(clawcore_home, openai_server)
    openai_server.script(text_reply("Hello! How can I help?"), text_reply("Bye."))
    code, out, err = chat(clawcore_home, "hi there\n\n/exit\n")
    assert code == 0, err
    assert out.strip() == "Hello! How can I help?"
    [info] = SessionStore(clawcore_home).list()
    assert info.messages == 2
    code, out, err = chat(clawcore_home, "bye\n", "--session", info.id)
    assert "(resumed)" in err and out.strip() == "Bye."
    resumed = openai_server.requests_to("chat/completions")[1].body["messages"]
    assert [m["content"] for m in resumed[1:]] == ["hi there", "Hello! How can I help?", "bye"]


def test_model_errors_do_not_end_the_chat(clawcore_home: Path, openai_server: OpenAIServer) -> None:
    write_config(clawcore_home, openai_server)
    openai_server.fail(500, endpoint="chat")
    openai_server.script(text_reply("back again"))
    code, out, err = chat(clawcore_home, "first\nsecond\n")
    assert code == 0
    assert "error: chat model" in err or "HTTP 500" in err
    assert out.strip() == "back again"


def test_confirmations_are_asked_inline(clawcore_home: Path, openai_server: OpenAIServer) -> None:
    from clawcore.testing.openai_server import tool_reply

    write_config(clawcore_home, openai_server)
    note = clawcore_home / "workspace" / "todo.md"
    # The default profile asks before write_file: answer yes once, then no.
    openai_server.script(tool_reply("write_file", {"path": "todo.md", "content": "- buy milk\n"}), text_reply("Saved."),
                         tool_reply("write_file", {"path": "todo.md", "content": "- sell milk\n"}), text_reply("Not saved."))
    code, out, err = chat(clawcore_home, "save it\ny\nsave again\n\n")
    assert code == 0, err
    assert err.count("? write_file") == 2 and "allow? [y/N]" in err
    assert out.splitlines() == ["Saved.", "Not saved."]
    assert note.read_text() == "- buy milk\n"


def test_chat_without_a_key_says_what_to_set(clawcore_home: Path, monkeypatch: Any,
                                             capsys: Any) -> None:
    from clawcore.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["chat"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: chat model 'openai': no API key") and "OPENAI_API_KEY" in line


def test_resuming_an_unknown_session_is_an_error_and_creates_nothing(clawcore_home: Path, capsys: Any,
                                                                      openai_server: OpenAIServer) -> None:
    from clawcore.cli import main

    write_config(clawcore_home, openai_server)
    assert main(["--home", str(clawcore_home), "chat", "--session", "does-not-exist"]) == 1
    assert "no session 'does-not-exist'" in capsys.readouterr().err
    assert SessionStore(clawcore_home).list() == []
    assert openai_server.requests_to("chat/completions") == []
