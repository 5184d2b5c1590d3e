"""The builtin redaction plugin on the transcript and outbound hooks, and audit payloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pluggy
import pytest
from clawcore import hookimpl
from clawcore.hooks import Hooks
from clawcore.runtime import Runtime
from clawcore.types import Action, AuditEvent, HookContext, Message, ToolCall, ToolResult

TOKEN = "sk-ant-api03-" + "Qa2DxDBL82QuAJbfbU5yC53ZoUuldNVcCf56lcJEKvL1Fe1toiBi0Guk4513lHWhuagYlGKXwpEvFgkKpSnMAGLXFAA"


def ctx(tmp_path: Path) -> HookContext:
    return HookContext("s1", tmp_path, tmp_path, {})


def test_redaction_is_a_builtin(plugin_manager: pluggy.PluginManager) -> None:
    assert plugin_manager.get_plugin("redaction") is not None


def test_tool_result_persist_redacts_after_every_other_plugin(plugin_manager: pluggy.PluginManager,
                                                              register_plugin: Any, tmp_path: Path) -> None:
    class AddsASecret:
        @hookimpl
        def tool_result_persist(self, call: ToolCall, result: ToolResult, text: str, context: HookContext) -> str:
            return text + f"\nleaked {TOKEN}"

    register_plugin(AddsASecret(), name="adds-a-secret")
    text = Hooks(plugin_manager).tool_result_persist(ToolCall("bash", {}), ToolResult("output"), ctx(tmp_path))
    assert text.startswith("output\nleaked sk-ant-api03-***redacted***")
    assert TOKEN not in text


def test_before_message_write_masks_content_and_tool_arguments(plugin_manager: pluggy.PluginManager,
                                                               tmp_path: Path) -> None:
    message = Message("assistant", f"use {TOKEN}",
                      tool_calls=(ToolCall("bash", {"command": f"export KEY={TOKEN}", "n": 1}, "c1"),))
    written = Hooks(plugin_manager).before_message_write(message, ctx(tmp_path))
    assert TOKEN not in written.content
    assert TOKEN not in json.dumps(dict(written.tool_calls[0].arguments))
    assert written.tool_calls[0].arguments["n"] == 1 and written.tool_calls[0].id == "c1"
    clean = Message("user", "hello")
    assert Hooks(plugin_manager).before_message_write(clean, ctx(tmp_path)) is clean


def test_message_sending_withholds_credentials(plugin_manager: pluggy.PluginManager, tmp_path: Path) -> None:
    hooks = Hooks(plugin_manager)
    decision = hooks.message_sending(Message("assistant", f"here: {TOKEN}"), ctx(tmp_path))
    assert decision.action is Action.DENY and "anthropic-key" in decision.reasons[0]
    assert TOKEN not in " ".join(decision.reasons)
    assert hooks.message_sending(Message("assistant", "all good"), ctx(tmp_path)).action is Action.ALLOW


def test_audit_payloads_are_redacted(clawcore_home: Path, plugin_manager: pluggy.PluginManager,
                                     register_plugin: Any) -> None:
    seen: list[AuditEvent] = []

    class Sink:
        @hookimpl
        def record_audit_event(self, event: AuditEvent, context: HookContext | None) -> None:
            seen.append(event)

    register_plugin(Sink(), name="sink")
    runtime = Runtime(clawcore_home, config={}, plugin_manager=plugin_manager)
    runtime.audit("test", {"arguments": {"command": f"curl -H 'x-api-key: {TOKEN}'", "password": "pw-123456"}})
    runtime.close()
    payload = json.dumps(dict(seen[-1].data))
    assert TOKEN not in payload and "pw-123456" not in payload


@pytest.mark.parametrize("command, secret", [
    ("make; curl -u admin:Sup3rS3cretPw https://example.com/x", "Sup3rS3cretPw"),
    ("curl --user admin:Xk9fPq2LmZ8wR4 https://example.com", "Xk9fPq2LmZ8wR4"),
    ("sshpass -p Xk9fPq2LmZ8wR4 ssh build@host 'rm -rf /'", "Xk9fPq2LmZ8wR4"),
])
def test_a_password_on_a_command_line_stays_out_of_the_audit_log_and_scan_output(
        clawcore_home: Path, capsys: pytest.CaptureFixture[str], command: str, secret: str) -> None:
    from clawcore.cli import main
    from clawcore.security.secrets import scan_text

    assert any(f.rule == "cli-user-password" for f in scan_text(command))
    (clawcore_home / "cases.jsonl").write_text(json.dumps({"id": "c1", "kind": "exec", "command": command}) + "\n")
    assert main(["scan", str(clawcore_home / "cases.jsonl")]) in (0, 1)
    out = capsys.readouterr().out
    assert json.loads(out)["reasons"] and secret not in out
    with Runtime(clawcore_home, config={}) as runtime:
        runtime.call_tool("bash", {"command": command}, context=runtime.context("s1"))
    log = (clawcore_home / "audit" / "audit.jsonl").read_text()
    assert command.split()[0] in log and secret not in log


@pytest.mark.parametrize("command", ["docker run -u 1000:1000 alpine id", "sort -u a:b", "curl -u \"$USER:$PASS\" x",
                                     "curl -u admin:${TOKEN} https://example.com", "curl -u admin https://example.com"])
def test_user_options_without_a_password_are_not_credentials(command: str) -> None:
    from clawcore.security.secrets import scan_text

    assert not scan_text(command)
