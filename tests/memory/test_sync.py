from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from clawcore.testing.providers import HashEmbeddingPlugin, HashEmbeddingProvider


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() + str(p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_incremental_sync_rechunks_only_changed_files(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    first = memory.sync()
    assert first.indexed == 3 and first.embedded == first.chunks and first.cached == 0
    assert memory.sync().indexed == 0
    day = workspace / "memory" / "2024-05-02.md"
    day.write_text(day.read_text() + "\n- Alice: Also bring the paddles.\n")
    second = memory.sync()
    assert second.indexed == 1 and second.removed == 0
    assert 1 <= second.embedded <= 2
    assert memory.search("paddles").results[0].path == "memory/2024-05-02.md"


def test_touching_a_file_without_changing_it_embeds_nothing(workspace: Path, hash_pm, tmp_path, register_plugin) -> None:
    from clawcore.memory import open_memory

    provider = HashEmbeddingProvider(name="counted")
    register_plugin(HashEmbeddingPlugin(name="counted", provider=provider))
    with open_memory(workspace, {"memory": {"embeddings": {"provider": "counted"}}}, plugin_manager=hash_pm,
                     index_path=tmp_path / "i.sqlite") as memory:
        memory.sync()
        calls = len(provider.calls)
        os.utime(workspace / "MEMORY.md", ns=(1, 1))
        report = memory.sync()
        assert report.indexed == 0 and report.embedded == 0
        assert len(provider.calls) == calls


def test_deleted_files_are_pruned(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    memory.sync()
    (workspace / "memory" / "2024-05-02.md").unlink()
    report = memory.sync()
    assert report.removed == 1 and report.files == 2
    assert all(r.path != "memory/2024-05-02.md" for r in memory.search("kayak").results)


def test_search_syncs_first_when_files_changed(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    memory.sync()
    (workspace / "memory" / "2024-06-01.md").write_text("- Bob: The new espresso machine arrived.\n")
    assert memory.search("espresso machine").results[0].path == "memory/2024-06-01.md"


def test_embedding_cache_survives_a_rebuild(workspace: Path, open_mem, tmp_path) -> None:
    memory = open_mem(workspace)
    first = memory.sync()
    memory.close()
    again = open_mem(workspace, {"extraPaths": []})
    rebuilt = again.sync(force=True)
    assert rebuilt.rebuilt and rebuilt.embedded == 0 and rebuilt.cached == first.chunks


def test_indexing_never_modifies_memory_files(workspace: Path, open_mem) -> None:
    before = _digests(workspace)
    memory = open_mem(workspace)
    memory.sync()
    memory.search("kayak")
    memory.sync(force=True)
    assert _digests(workspace) == before


def test_sources_symlinks_dedupe_and_extra_paths(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory" / "projects").mkdir(parents=True)
    (ws / "memory" / "projects" / "alpha.md").write_text("alpha launch checklist\n")
    (ws / "memory" / "notes.txt").write_text("not markdown: zebra\n")
    (ws / "turns.jsonl").write_text('{"zebra": 1}\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret zebra\n")
    (ws / "memory" / "leak.md").symlink_to(outside / "secret.md")
    (ws / "memory" / "again.md").symlink_to(ws / "memory" / "projects" / "alpha.md")
    extra = tmp_path / "handbook"
    extra.mkdir()
    (extra / "onboarding.md").write_text("onboarding guide for giraffe keepers\n")
    memory = open_mem(ws, {"extraPaths": [str(extra)]}, provider="none")
    report = memory.sync()
    assert report.files == 2
    status = memory.status()
    assert status["files"] == 2
    assert memory.search("zebra").results == ()  # not .md, not memory, or a symlink out
    assert memory.search("giraffe").results[0].source == "extra"
    # one file under three names (itself, a symlink that sorts first, a hard link): indexed once, by its
    # plain name, and readable under any of them
    os.link(ws / "memory" / "projects" / "alpha.md", ws / "memory" / "projects" / "beta.md")
    memory.sync()
    assert [r.path for r in memory.search("alpha launch").results] == ["memory/projects/alpha.md"]
    for name in ("memory/again.md", "memory/projects/beta.md", "memory/projects/alpha.md"):
        assert memory.get(name) == "alpha launch checklist"


def test_a_link_inside_the_workspace_counts_only_where_it_leads_to_memory(tmp_path: Path, open_mem) -> None:
    from clawcore.errors import MemoryAccessError

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / ".env.local").write_text("DB_PASSWORD=zebra-horse-battery\n")
    (ws / "clawcore.yaml").write_text("models: {openai: {apiKey: zebra}}\n")
    (ws / "notes.md").write_text("zebra notes outside memory\n")
    (ws / "memory" / "2026-11-30.md").write_text("kept zebra daily note\n")
    (ws / "memory" / ".env").write_text("API_TOKEN=zebra-in-memory\n")
    for name, target in [("keys.md", "../.env.local"), ("cfg.md", "../clawcore.yaml"), ("n.md", "../notes.md"),
                         ("env.md", ".env"), ("latest.md", "2026-11-30.md")]:
        (ws / "memory" / name).symlink_to(target)
    (ws / "MEMORY.md").symlink_to(".env.local")
    memory = open_mem(ws, provider="none")
    memory.sync()
    assert [r.path for r in memory.search("zebra").results] == ["memory/2026-11-30.md"]
    assert memory.get("memory/latest.md") == "kept zebra daily note"
    for name in ("memory/keys.md", "memory/cfg.md", "memory/n.md", "memory/env.md", "MEMORY.md"):
        with pytest.raises(MemoryAccessError, match="leads out of the workspace's memory"):
            memory.get(name)


def test_get_reads_line_ranges(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    assert memory.get("MEMORY.md", 3, 1) == "The user prefers green tea over coffee."
    assert memory.get("memory/2024-05-02.md", from_line=3).startswith("- Alice: The kayak")
    assert memory.get("./MEMORY.md").startswith("# Preferences")
    with pytest.raises(Exception, match="past the end"):
        memory.get("MEMORY.md", 500)
    with pytest.raises(Exception, match="lines must be"):
        memory.get("MEMORY.md", 1, 0)


@pytest.mark.parametrize(
    "hostile",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "memory/../../etc/passwd",
        "memory/../../../../../../etc/shadow",
        "~/.ssh/id_rsa",
        "C:\\Windows\\system32",
        "MEMORY.md\x00.png",
        "notes.txt",
        "memory/link-out.md",
        "",
    ],
)
def test_get_refuses_anything_but_memory_files(workspace: Path, open_mem, tmp_path: Path, hostile: str) -> None:
    from clawcore.errors import MemoryAccessError

    (workspace / "notes.txt").write_text("private\n")
    secret = tmp_path / "secret.md"
    secret.write_text("top secret\n")
    (workspace / "memory" / "link-out.md").symlink_to(secret)
    memory = open_mem(workspace)
    with pytest.raises(MemoryAccessError) as info:
        memory.get(hostile)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    assert "top secret" not in message and "root:" not in message


def test_a_byte_order_mark_is_not_text_and_a_missing_extra_path_is_said(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_bytes("\ufeff# BOM note\n\nplum jam recipe\n".encode())
    memory = open_mem(ws, {"extraPaths": [str(tmp_path / "nowhere")]}, provider="none")
    report = memory.sync()
    assert any("nowhere does not exist" in w for w in report.warnings)
    [result] = memory.search("plum jam").results
    assert result.snippet.startswith("# BOM note") and memory.get("MEMORY.md", 1, 1) == "# BOM note"


def test_a_memory_file_that_does_not_exist_is_said_as_such(workspace: Path, open_mem) -> None:
    from clawcore.errors import MemoryAccessError

    memory = open_mem(workspace)
    with pytest.raises(MemoryAccessError, match="there is no memory file 'memory/nope.md'"):
        memory.get("memory/nope.md")
    with pytest.raises(MemoryAccessError, match="'notes.txt' is not a memory file"):
        memory.get("notes.txt")


def test_only_regular_files_with_utf8_names_are_memory(tmp_path: Path, open_mem) -> None:
    from clawcore.errors import MemoryAccessError

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("hello alpha\n")
    os.mkfifo(ws / "memory" / "pipe.md")  # reading it would wait for a writer forever
    (ws / "memory" / "link-to-pipe.md").symlink_to("pipe.md")
    (ws / os.fsdecode(b"memory/caf\xe9.md")).write_text("beta\n")
    memory = open_mem(ws, provider="none")
    with pytest.warns(RuntimeWarning, match=r"memory file memory/caf\\xe9.md is skipped: its name is not UTF-8"):
        report = memory.sync()
    assert report.files == 1 and memory.search("alpha").results[0].path == "MEMORY.md"
    for name in ("memory/pipe.md", "memory/link-to-pipe.md"):
        with pytest.raises(MemoryAccessError):
            memory.get(name)


def test_lines_are_counted_as_an_editor_counts_them(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "ls.md").write_text("line one\nline two has a\u2028separator and a \x0c formfeed\nline three\n"
                                         "line four target kiwi\n")
    memory = open_mem(ws, provider="none")
    [result] = memory.search("kiwi").results
    assert (result.start_line, result.end_line) == (1, 4)
    assert memory.get("memory/ls.md", 4, 1) == "line four target kiwi"


def test_another_folder_gets_an_index_of_its_own(tmp_path: Path, monkeypatch) -> None:
    from clawcore.config import load_config
    from clawcore.memory import default_index, open_memory
    from clawcore.plugins import get_plugin_manager

    home = tmp_path / "home"
    (home / "workspace" / "memory").mkdir(parents=True)
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    (other / "MEMORY.md").write_text("otter facts\n")
    monkeypatch.setenv("CLAWCORE_HOME", str(home))
    config = load_config(home, data={"memory": {"embeddings": {"provider": "none"}}},
                         pm=get_plugin_manager(load_entrypoints=False))
    assert default_index(home / "workspace", config) == home / "index" / "memory.sqlite"
    with open_memory(other, config) as memory:
        assert memory.search("otter").results
    assert not (home / "index" / "memory.sqlite").exists()
    assert default_index(other, config).exists() and default_index(other, config).parent == home / "index"
