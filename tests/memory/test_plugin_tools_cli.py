"""The builtin plugin's config section, retriever, tools and CLI."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from clawcore.hooks import Hooks
from clawcore.memory import open_memory
from clawcore.memory.plugin import HybridRetriever
from clawcore.memory.watch import watch_memory
from clawcore.runtime import ToolContext
from clawcore.testing.contracts import RetrieverContract


class TestHybridRetriever(RetrieverContract):
    @pytest.fixture(params=["hash", "none"])
    def retriever(self, request, contract_workspace: Path, tmp_path: Path, hash_pm):
        factory = Hooks(hash_pm).retrievers()["hybrid"]
        memory = open_memory(contract_workspace, {"memory": {"embeddings": {"provider": request.param}}},
                             plugin_manager=hash_pm, index_path=tmp_path / "contract.sqlite")
        yield factory(memory)
        memory.close()


def test_memory_section_defaults_in_the_effective_config(runtime) -> None:
    memory = runtime.config.section("memory")
    assert memory["chunking"] == {"tokens": 600, "overlap": 120}
    assert memory["embeddings"]["provider"] == "auto" and memory["embeddings"]["fallback"] == []
    assert memory["search"]["maxResults"] == 5 and memory["search"]["perFile"] == 2
    assert memory["search"]["weights"] == {"text": 0.6, "vector": 0.4} and memory["search"]["fusion"] == "weighted"
    assert memory["search"]["sourceWeights"] == {"MEMORY.md": 1.5, "memory.md": 1.5}
    assert memory["search"]["mmr"]["enabled"] is False and memory["search"]["temporalDecay"]["enabled"] is False


def test_plugins_can_graft_provider_sections_into_embeddings(plugin_manager, register_plugin, tmp_path) -> None:
    from clawcore import hookimpl
    from clawcore.config import load_config

    class LocalSection:
        @hookimpl
        def config_schema(self):
            return {"memory.embeddings.local": {"type": "object", "additionalProperties": False,
                                                "properties": {"model": {"type": "string", "default": "m"}}}}

    register_plugin(LocalSection())
    config = load_config(tmp_path, data={"memory": {"embeddings": {"provider": "local", "local": {"model": "x"}}}},
                         pm=plugin_manager)
    assert config.get("memory.embeddings.local.model") == "x"
    assert config.get("memory.embeddings.batchSize") == 64


def test_retriever_and_tools_are_registered(plugin_manager) -> None:
    hooks = Hooks(plugin_manager)
    assert hooks.retrievers()["hybrid"] is HybridRetriever
    tools = hooks.tools()
    for name in ("memory_search", "memory_get"):
        assert tools[name].groups == ("memory",)
        assert tools[name].parameters["type"] == "object"
    assert tools["memory_search"].parameters["required"] == ["query"]
    assert set(tools["memory_get"].parameters["properties"]) == {"path", "from", "lines"}


def _write_notes(runtime) -> None:
    ws = runtime.workspace
    (ws / "MEMORY.md").write_text("# Prefs\n\nThe user prefers green tea.\n")
    (ws / "memory" / "2024-05-02.md").write_text("- Alice: The kayak trip is in June.\n")


def test_tools_search_and_get_through_the_runtime_memory(runtime) -> None:
    _write_notes(runtime)
    context = ToolContext(runtime, runtime.context("t"))
    tools = runtime.tools
    result = tools["memory_search"].handler({"query": "kayak trip", "maxResults": 3}, context)
    assert not result.is_error and result.untrusted
    payload = json.loads(result.content)
    assert payload["results"][0]["citation"] == "memory/2024-05-02.md#L1-L1"
    assert payload["mode"] in ("hybrid", "fts-only")
    text = tools["memory_get"].handler({"path": "MEMORY.md", "from": 3, "lines": 1}, context)
    assert text.content == "The user prefers green tea." and not text.is_error


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("memory_get", {"path": "../../etc/passwd"}, "contains '..'"),
        ("memory_get", {"path": "/etc/passwd"}, "absolute"),
        ("memory_get", {"path": "MEMORY.md", "from": "x"}, "must be a integer"),
        ("memory_get", {"path": "MEMORY.md", "lines": -2}, "lines must be"),
        ("memory_get", {}, "missing required argument 'path'"),
        ("memory_search", {"query": ""}, "non-empty query"),
        ("memory_search", {"query": "x", "maxResults": 1000}, "maxResults"),
        ("memory_search", {"query": "x", "rm": "-rf"}, "unknown argument"),
        ("memory_search", {"query": 5}, "must be a string"),
    ],
)
def test_tools_answer_bad_arguments_with_one_clear_error(runtime, name, arguments, expected) -> None:
    _write_notes(runtime)
    result = runtime.tools[name].handler(arguments, ToolContext(runtime, runtime.context("t")))
    assert result.is_error
    assert expected in result.content and "\n" not in result.content


def test_watch_syncs_after_a_change(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    reports = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_memory, args=(memory, reports.append),
                              kwargs={"interval_s": 0.05, "debounce_s": 0.1, "stop": stop})
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not reports and time.monotonic() < deadline:
            time.sleep(0.02)
        (workspace / "memory" / "2024-07-01.md").write_text("- Bob: the snorkel is in the garage.\n")
        while len(reports) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert len(reports) == 2 and reports[1].indexed == 1
    assert memory.search("snorkel", ).results[0].path == "memory/2024-07-01.md"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from clawcore.cli import main

    capsys.readouterr()
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_index_search_get_status(clawcore_home: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CLAWCORE_LOAD_PLUGINS", "")  # builtins only: keyword search, no model download
    ws = clawcore_home / "workspace"
    (ws / "MEMORY.md").write_text("# Prefs\n\nThe user prefers green tea.\n")
    (ws / "memory" / "2024-05-02.md").write_text("- Alice: The kayak trip is in June.\n")
    code, out, err = _cli(capsys, "index")
    assert code == 0, err
    assert "2 files, 2 chunks" in out
    code, out, _ = _cli(capsys, "search", "kayak", "-k", "3", "--json")
    assert json.loads(out)["results"][0]["citation"] == "memory/2024-05-02.md#L1-L1"
    assert _cli(capsys, "get", "MEMORY.md", "--from", "3")[1].strip() == "The user prefers green tea."
    code, out, err = _cli(capsys, "get", "../clawcore.yaml")
    assert code == 1 and err.strip().startswith("error: ") and len(err.splitlines()) == 1
    status = json.loads(_cli(capsys, "status", "--json")[1])
    assert status["files"] == 2 and status["mode"] == "fts-only"
    assert "(rebuilt)" in _cli(capsys, "index", "--force")[1]


def test_cli_search_shows_note_text_as_written_and_no_terminal_control(clawcore_home: Path, monkeypatch,
                                                                         capsys) -> None:
    monkeypatch.setenv("CLAWCORE_LOAD_PLUGINS", "")
    (clawcore_home / "workspace" / "memory" / "2024-01-04.md").write_text(
        "- [x] shipped papaya\n- see [docs] and arr[i] papaya [/] \x1b]0;pwned\x07\n")
    code, out, err = _cli(capsys, "search", "papaya")
    assert code == 0, err
    assert "[x] shipped papaya" in out and "[docs] and arr[i] papaya [/]" in out
    assert "\x1b" not in out and "\\u001b]0;pwned\\u0007" in out
    assert _cli(capsys, "search", "[/]")[0] == 0


def test_cli_search_says_it_rebuilds_an_index_built_with_other_settings(clawcore_home: Path, monkeypatch,
                                                                          capsys) -> None:
    monkeypatch.setenv("CLAWCORE_LOAD_PLUGINS", "")
    (clawcore_home / "workspace" / "memory" / "2024-05-02.md").write_text("- Alice: The kayak trip is in June.\n")
    assert _cli(capsys, "index")[0] == 0
    (clawcore_home / "clawcore.yaml").write_text("memory:\n  chunking: {tokens: 300, overlap: 60}\n")
    code, out, err = _cli(capsys, "search", "kayak", "--json")
    assert code == 0 and json.loads(out)["results"][0]["path"] == "memory/2024-05-02.md"
    assert ("the index was built with other embedding or chunking settings (chunkTokens: 600 → 300; "
            "chunkOverlap: 120 → 60); rebuilding it first") in err
    assert "rebuilding" not in _cli(capsys, "search", "kayak")[2]


@pytest.mark.parametrize("args", [["--interval", "0"], ["--interval", "-5"], ["--interval", "inf"],
                                  ["--debounce", "-1"]])
def test_watch_refuses_intervals_that_would_spin_or_overflow(clawcore_home: Path, capsys, args: list[str]) -> None:
    code, _, err = _cli(capsys, "watch", *args)
    assert code == 2 and "Invalid value" in err


def test_cli_says_why_search_is_keyword_only(clawcore_home: Path, monkeypatch, capsys) -> None:
    pytest.importorskip("clawcore_embeddings_local")
    monkeypatch.delenv("CLAWCORE_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    token = "ghp_" + "Zq8Lw2Xv9Kp4Rt7Ny3Md6Bf1Hs5Jc0Ge2Ua8"
    missing = clawcore_home / "models" / token  # a credential pasted where a path belongs
    (clawcore_home / "clawcore.yaml").write_text(
        f"memory:\n  embeddings:\n    provider: auto\n    local:\n      modelPath: {missing}\n")
    (clawcore_home / "workspace" / "MEMORY.md").write_text("# Prefs\n\nThe user prefers green tea.\n")
    code, out, err = _cli(capsys, "index")
    assert code == 0 and "keyword search only" in out
    [note] = [line for line in err.splitlines() if line.startswith("note: ")]
    assert "local: modelPath" in note and "holds no ONNX model" in note
    code, out, _ = _cli(capsys, "status")
    skipped = [line.strip() for line in out.splitlines() if line.strip().startswith("skipped: ")]
    assert any(line.startswith("skipped: local: modelPath") for line in skipped)
    assert token not in out + err + note
