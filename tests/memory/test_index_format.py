"""The index layout (FTS5 holds no second copy of the text) and the cheap freshness check before a search."""

from __future__ import annotations

import os
from pathlib import Path

from clawcore.memory.fts import FTS_SCHEME, TOKENIZER, fts_text
from clawcore.memory.store import connect

OLD_SCHEME = f"cjk-bigram-v1/{TOKENIZER}"


def _tables(index: Path) -> set[str]:
    store = connect(index)
    try:
        return {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    finally:
        store.close()


def _integrity(index: Path) -> None:
    store = connect(index)
    try:
        # Raises when the FTS index disagrees with what was inserted and deleted.
        store.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 0)")
    finally:
        store.close()


def test_fts_table_keeps_no_copy_of_the_text(workspace: Path, open_mem, tmp_path: Path) -> None:
    index = tmp_path / "index" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    assert memory.search("kayak lake").results[0].path == "memory/2024-05-02.md"
    memory.close()
    tables = _tables(index)
    assert "chunks_fts" in tables and "chunks_fts_content" not in tables
    _integrity(index)


def test_an_index_with_the_old_fts_layout_is_rebuilt_on_the_next_search(
    workspace: Path, open_mem, tmp_path: Path
) -> None:
    index = tmp_path / "index" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    memory.close()
    # Turn it into what earlier versions wrote: an FTS table with its own copy of the text.
    store = connect(index)
    c = store.conn
    c.execute("BEGIN IMMEDIATE")
    c.execute("DROP TABLE chunks_fts")
    c.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize='{TOKENIZER}')")
    c.executemany("INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)",
                  [(i, fts_text(t)) for i, t in c.execute("SELECT id, text FROM chunks").fetchall()])
    c.execute("UPDATE meta SET value = ? WHERE key = 'fts'", (OLD_SCHEME,))
    c.execute("COMMIT")
    store.close()
    assert "chunks_fts_content" in _tables(index)

    again = open_mem(workspace, index=index)
    response = again.search("kayak lake")
    assert response.results[0].path == "memory/2024-05-02.md" and response.mode == "hybrid"
    assert again.store.meta()["fts"] == FTS_SCHEME
    again.close()
    assert "chunks_fts_content" not in _tables(index)
    _integrity(index)


def test_edits_and_deletes_leave_no_stale_keywords(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    memory.sync()
    day = workspace / "memory" / "2024-05-02.md"
    day.write_text("# 2024-05-02\n\n- The canoe trip moved to July.\n", encoding="utf-8")
    assert [r.path for r in memory.search("kayak", vector=False).results] == []
    assert memory.search("canoe", vector=False).results[0].path == "memory/2024-05-02.md"
    day.unlink()
    assert memory.search("canoe", vector=False).results == ()
    memory.close()
    _integrity(memory.index_path)


def test_search_sees_every_kind_of_change_to_the_file_tree(workspace: Path, open_mem, tmp_path: Path) -> None:
    memory = open_mem(workspace)
    memory.sync()
    assert memory.search("zeppelin", vector=False).results == ()
    # A new file in a new sub-folder.
    (workspace / "memory" / "trips").mkdir()
    (workspace / "memory" / "trips" / "air.md").write_text("- A zeppelin ride over the lake.\n", encoding="utf-8")
    assert [r.path for r in memory.search("zeppelin", vector=False).results] == ["memory/trips/air.md"]
    # Renamed within the same folder.
    os.replace(workspace / "memory" / "trips" / "air.md", workspace / "memory" / "trips" / "sky.md")
    assert [r.path for r in memory.search("zeppelin", vector=False).results] == ["memory/trips/sky.md"]
    # A symlinked note whose target changes without any listing changing (an extra path's link may lead
    # anywhere: the user named it).
    outside = tmp_path / "target.md"
    outside.write_text("- A hovercraft crossing.\n", encoding="utf-8")
    (workspace / "memory" / "link.md").symlink_to(workspace / "memory" / "trips" / "sky.md")
    (workspace / "memory" / "trips" / "sky.md").unlink()
    (workspace / "memory" / "trips" / "sky.md").symlink_to(outside)
    memory = open_mem(workspace, {"extraPaths": ["memory/trips"]})
    assert "memory/trips/sky.md" in [r.path for r in memory.search("hovercraft", vector=False).results]
    outside.write_text("- A zeppelin again.\n", encoding="utf-8")
    assert memory.search("hovercraft", vector=False).results == ()
    # The root file appears.
    (workspace / "MEMORY.md").unlink()
    assert memory.search("Helix", vector=False).results == ()
    (workspace / "MEMORY.md").write_text("Favourite editor: Helix.\n", encoding="utf-8")
    assert memory.search("Helix", vector=False).results[0].path == "MEMORY.md"


def test_the_index_is_private_to_its_owner(workspace: Path, open_mem, tmp_path: Path) -> None:
    index = tmp_path / "fresh" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    assert oct(index.stat().st_mode & 0o777) == "0o600"  # it holds the text of every memory file
    assert oct(index.parent.stat().st_mode & 0o777) == "0o700"
    memory.close()
