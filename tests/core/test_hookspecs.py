"""Meta-tests: every hook is typed, documented, and called here at least once."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from clawcore import hookspecs
from clawcore.types import AuditEvent, HookContext, Message, ToolCall, ToolResult

SPECS = sorted(
    name for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, "clawcore_spec")
)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def test_the_hook_table_of_the_design_is_complete() -> None:
    runtime_hooks = {
        "message_received", "before_prompt_build", "before_tool_call", "after_tool_call",
        "tool_result_persist", "before_message_write", "message_sending", "subagent_spawning",
        "session_end", "gateway_start",
    }
    capability_hooks = {
        "register_embedding_providers", "register_retrievers", "decide_tool_call", "record_audit_event",
        "register_sandbox_backends", "register_tools", "register_models", "config_schema",
    }
    assert runtime_hooks | capability_hooks <= set(SPECS)


@pytest.mark.parametrize("name", SPECS)
def test_hook_is_typed_and_documented(name: str) -> None:
    fn = getattr(hookspecs, name)
    doc = inspect.getdoc(fn) or ""
    assert doc.startswith("Called "), f"{name}: the first sentence must say when it is called"
    params = inspect.signature(fn).parameters
    for param in params:
        assert f":param {param}:" in doc, f"{name}: parameter {param!r} is undocumented"
    assert all(p.annotation is not inspect.Parameter.empty for p in params.values())
    assert inspect.signature(fn).return_annotation is not inspect.Signature.empty
    assert f"`{name}`" in DOCS.read_text(encoding="utf-8"), f"{name} is missing from docs/plugins.md"


def _arguments(name: str, tmp_path: Path) -> dict:
    context = HookContext("s", tmp_path, tmp_path, {})
    values = {
        "context": context,
        "call": ToolCall("read_file", {"path": "x"}),
        "result": ToolResult("r"),
        "text": "t",
        "message": Message("user", "m"),
        "messages": [Message("user", "m")],
        "task": "task",
        "summary": "sum",
        "compaction_count": 1,
        "register": lambda *a, **k: None,
        "event": AuditEvent("test.event", {"n": 1}),
        "config": {},
        "home": tmp_path,
        "cli": None,
    }
    params = inspect.signature(getattr(hookspecs, name)).parameters
    return {p: values[p] for p in params}


@pytest.mark.parametrize("name", SPECS)
def test_every_hook_reaches_an_implementation(name: str, plugin_manager, register_plugin, tmp_path) -> None:
    seen: list[dict] = []
    params = list(inspect.signature(getattr(hookspecs, name)).parameters)

    namespace: dict = {}
    exec(  # build an implementation with exactly the spec's argument names
        f"def impl(self, {', '.join(params)}):\n    seen.append(dict({', '.join(f'{p}={p}' for p in params)}))\n",
        {"seen": seen},
        namespace,
    )
    recorder = type("Recorder", (), {name: hookspecs.hookimpl(namespace["impl"])})()
    register_plugin(recorder, "recorder")
    kwargs = _arguments(name, tmp_path)
    getattr(plugin_manager.hook, name)(**kwargs)
    assert seen == [kwargs]
