"""Killed syncs, corrupt and deleted index files, concurrent syncs, rebuilds, missing sqlite-vec."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from clawcore import hookimpl
from clawcore.memory import open_memory
from clawcore.memory.store import connect
from clawcore.testing.providers import HashEmbeddingPlugin, HashEmbeddingProvider

# A worker process: opens the memory with the hash provider (optionally slowed down) and syncs.
WORKER = textwrap.dedent(
    """
    import json, sys, time
    from clawcore.plugins import get_plugin_manager
    from clawcore.testing.providers import HashEmbeddingPlugin, HashEmbeddingProvider
    from clawcore.memory import open_memory

    workspace, index, delay, action = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]

    class Slow(HashEmbeddingProvider):
        def embed(self, texts):
            time.sleep(delay)
            return super().embed(texts)

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(HashEmbeddingPlugin(provider=Slow()))
    config = {"memory": {"embeddings": {"provider": "hash", "batchSize": 4}}}
    with open_memory(workspace, config, plugin_manager=pm, index_path=index) as memory:
        if action == "sync":
            report = memory.sync()
            print(json.dumps(report.to_dict()))
        else:
            response = memory.search(action)
            print(json.dumps({**response.to_dict(), "status": memory.status()}))
    """
)


def _run_worker(workspace: Path, index: Path, delay: float, action: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(workspace), str(index), str(delay), action],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _many_files(ws: Path, count: int) -> None:
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "\n".join(f"- Note {i}.{j}: topic{i} detail{j} with word{i * 7 + j}" for j in range(12))
        (ws / "memory" / f"2024-01-{i + 1:02d}.md").write_text(f"# Day {i}\n\n{body}\n")


def _scribble_over_pages(index: Path) -> None:
    """Overwrite 200 bytes inside every page but the header page: the file stays the same size."""
    size = index.stat().st_size
    with index.open("r+b") as handle:
        for page in range(1, size // 4096):
            handle.seek(page * 4096 + 8)
            handle.write(b"\xff" * 200)


def _consistent(index: Path) -> tuple[int, int]:
    """Counts of files and chunks, after checking every table agrees."""
    store = connect(index)
    try:
        c = store.conn
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert c.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == chunks
        assert c.execute("SELECT count(*) FROM chunks_vec").fetchone()[0] == chunks
        files = c.execute("SELECT count(*) FROM files").fetchone()[0]
        orphan = c.execute("SELECT count(*) FROM chunks WHERE path NOT IN (SELECT path FROM files)").fetchone()[0]
        assert orphan == 0
        dupes = c.execute("SELECT count(*) FROM (SELECT path, start_line, end_line, count(*) n FROM chunks GROUP BY 1, 2, 3 HAVING n > 1)").fetchone()[0]
        assert dupes == 0
        return files, chunks
    finally:
        store.close()


def test_a_sync_killed_midway_is_completed_by_the_next(tmp_path: Path, hash_pm) -> None:
    ws = tmp_path / "ws"
    _many_files(ws, 24)
    index = tmp_path / "index.sqlite"
    worker = _run_worker(ws, index, 0.15, "sync")
    deadline = time.monotonic() + 30
    indexed = 0
    while time.monotonic() < deadline and indexed == 0:
        time.sleep(0.1)
        if index.exists():
            try:
                store = connect(index)
                indexed = store.conn.execute("SELECT count(*) FROM files").fetchone()[0]
                store.close()
            except Exception:  # noqa: BLE001 - the worker may be mid-write; try again
                indexed = 0
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    assert 0 < indexed < 24, "the worker should have been killed in the middle of its sync"
    with open_memory(ws, {"memory": {"embeddings": {"provider": "hash"}}}, plugin_manager=hash_pm, index_path=index) as memory:
        report = memory.sync()
        assert report.files == 24 and report.indexed == 24 - indexed
        assert memory.search("topic23 detail5").results[0].path == "memory/2024-01-24.md"
    assert _consistent(index)[0] == 24


def test_two_processes_syncing_at_once(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _many_files(ws, 12)
    index = tmp_path / "index.sqlite"
    workers = [_run_worker(ws, index, 0.02, "sync") for _ in range(2)]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=90)
        assert worker.returncode == 0, err
        reports.append(json.loads(out))
    assert sorted(r["indexed"] for r in reports) == [0, 12]
    assert all(r["files"] == 12 for r in reports)
    assert _consistent(index) == (12, reports[0]["chunks"])


def test_corrupt_index_is_moved_aside_and_rebuilt_with_a_warning(workspace: Path, open_mem, tmp_path: Path, caplog) -> None:
    index = tmp_path / "idx" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    memory.close()
    data = bytearray(index.read_bytes())
    data[0:100] = os.urandom(100)  # the header: "file is not a database"
    index.write_bytes(bytes(data))
    with caplog.at_level("WARNING", logger="clawcore.memory"):
        again = open_mem(workspace, index=index)
    warnings = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
    assert len(warnings) == 1 and "rebuilding it from the Markdown files" in warnings[0]
    assert again.search("kayak").results[0].path == "memory/2024-05-02.md"
    assert list(index.parent.glob("memory.sqlite.corrupt-*"))  # kept, not deleted
    assert _consistent(index)[0] == 3


def test_garbage_in_the_middle_of_the_index_is_detected(workspace: Path, open_mem, tmp_path: Path, caplog) -> None:
    index = tmp_path / "idx" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    memory.close()
    _scribble_over_pages(index)
    with caplog.at_level("WARNING", logger="clawcore.memory"):
        again = open_mem(workspace, index=index)
        assert again.search("pizza").results[0].path == "memory/2024-05-01.md"
    assert any("could not be read" in r.getMessage() for r in caplog.records)


def test_deleted_index_file_is_rebuilt_with_a_warning(workspace: Path, open_mem, tmp_path: Path) -> None:
    index = tmp_path / "idx" / "memory.sqlite"
    memory = open_mem(workspace, index=index)
    memory.sync()
    for suffix in ("", "-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    report = memory.sync()
    assert report.files == 3 and report.indexed == 3
    assert any("was deleted" in w for w in report.warnings)
    assert memory.search("kayak").results


class _GatedProvider(HashEmbeddingProvider):
    """Blocks in ``embed`` until the test opens the gate (a slow model, made deterministic)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.entered.set()
        assert self.gate.wait(30)
        return super().embed(texts)


class _Offer:
    def __init__(self, name: str, provider) -> None:
        self.name, self.provider = name, provider

    @hookimpl
    def register_embedding_providers(self, register):
        register(self.name, lambda settings, home: self.provider)


def test_model_change_rebuilds_atomically_while_search_answers_from_the_old_index(
    workspace: Path, tmp_path: Path, plugin_manager, register_plugin
) -> None:
    index = tmp_path / "idx" / "memory.sqlite"
    register_plugin(HashEmbeddingPlugin(name="hash", model="hash-v1"))
    gated = _GatedProvider(name="hash2", model="hash-v2", dims=32)
    register_plugin(_Offer("hash2", gated))
    old = open_memory(workspace, {"memory": {"embeddings": {"provider": "hash"}, "sync": {"onSearch": False}}},
                      plugin_manager=plugin_manager, index_path=index)
    old.sync()
    new = open_memory(workspace, {"memory": {"embeddings": {"provider": "hash2"}}},
                      plugin_manager=plugin_manager, index_path=index)
    assert new.status()["pendingRebuild"]
    outcome: dict[str, object] = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("report", new.sync()))
    worker.start()
    try:
        assert gated.entered.wait(30)
        # The rebuild is running (its provider is blocked): the old index still answers, vectors included.
        during = old.search("kayak lake")
        assert during.mode == "hybrid" and during.results[0].path == "memory/2024-05-02.md"
        assert (tmp_path / "idx" / "memory.sqlite.rebuild").exists()
    finally:
        gated.gate.set()
        worker.join(30)
    report = outcome["report"]
    assert report.rebuilt and report.embedded == report.chunks
    assert not (tmp_path / "idx" / "memory.sqlite.rebuild").exists()
    after = new.search("kayak lake")
    assert after.mode == "hybrid" and after.provider == "hash2"
    status = new.status()
    assert status["model"] == "hash-v2" and status["dims"] == 32 and not status["pendingRebuild"]
    # The old configuration sees that the index moved on and answers by keyword meanwhile.
    stale = old.search("kayak lake")
    assert stale.mode == "fts-only" and "built for another embedding provider" in stale.reason  # no sync on search
    old.close()
    new.close()
    assert _consistent(index)[0] == 3


def test_chunking_change_rebuilds(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    memory.sync()
    memory.close()
    smaller = open_mem(workspace, {"chunking": {"tokens": 20, "overlap": 0}})
    report = smaller.sync()
    assert report.rebuilt and report.chunks > 3


def test_without_sqlite_vec_search_uses_numpy_and_says_so_once(workspace: Path, tmp_path: Path, hash_pm) -> None:
    # A real environment where the sqlite-vec package cannot be imported.
    shadow = tmp_path / "shadow" / "sqlite_vec"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('sqlite-vec removed for this test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    index = tmp_path / "index.sqlite"
    worker = _run_worker(workspace, index, 0.0, "kayak lake", env=env)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    payload = json.loads(out)
    assert payload["mode"] == "hybrid"
    assert payload["results"][0]["path"] == "memory/2024-05-02.md"
    assert payload["status"]["vectorStore"] == "numpy" and payload["status"]["sqliteVec"] is False
    assert err.count("sqlite-vec is not available") == 1
    assert "pip install sqlite-vec" in err
    # The same index opened where sqlite-vec works gets its vector table filled in.
    with open_memory(workspace, {"memory": {"embeddings": {"provider": "hash"}}}, plugin_manager=hash_pm,
                     index_path=index) as memory:
        assert memory.search("kayak lake").mode == "hybrid"
        assert memory.status()["vectorStore"] == "sqlite-vec"
    assert _consistent(index)[0] == 3


@pytest.mark.parametrize("garbage", [b"", b"not a database at all" * 100])
def test_foreign_files_at_the_index_path(workspace: Path, open_mem, tmp_path: Path, garbage: bytes) -> None:
    index = tmp_path / "odd" / "memory.sqlite"
    index.parent.mkdir()
    index.write_bytes(garbage)
    memory = open_mem(workspace, index=index)
    assert memory.search("pizza").results[0].path == "memory/2024-05-01.md"


def test_a_database_of_other_tables_at_the_index_path_is_moved_aside(workspace: Path, open_mem,
                                                                     tmp_path: Path) -> None:
    index = tmp_path / "odd" / "memory.sqlite"
    index.parent.mkdir()
    conn = sqlite3.connect(index)
    conn.execute("CREATE TABLE chunks(x)")
    conn.commit()
    conn.close()
    memory = open_mem(workspace, index=index)
    assert memory.search("pizza").results[0].path == "memory/2024-05-01.md"
    [aside] = index.parent.glob("memory.sqlite.corrupt-*")
    assert sqlite3.connect(aside).execute("SELECT name FROM sqlite_master").fetchall() == [("chunks",)]


def test_unwritable_index_location_is_one_clear_error(workspace: Path, open_mem, tmp_path: Path) -> None:
    from clawcore.errors import MemoryAccessError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be")
    memory = open_mem(workspace, index=blocker / "index" / "memory.sqlite")
    assert memory.get("MEMORY.md").startswith("# Preferences")  # reading a file needs no index
    for needs_the_index in (lambda: memory.search("kayak"), memory.sync, memory.status):
        with pytest.raises(MemoryAccessError, match="cannot open the memory index"):
            needs_the_index()


def _drop_keyword_config(index: Path) -> None:
    """FTS5's own shadow table gone: every MATCH fails with "vtable constructor failed", as after some bad pages."""
    conn = sqlite3.connect(index)
    conn.execute("DROP TABLE chunks_fts_config")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("damage", [_scribble_over_pages, _drop_keyword_config])
def test_corruption_found_by_a_search_is_repaired_and_the_search_answered(
    workspace: Path, open_mem, tmp_path: Path, monkeypatch, damage: Callable[[Path], None]
) -> None:
    from clawcore.memory import engine

    # As for a large index: no integrity check on open, so the search meets the bad pages.
    monkeypatch.setattr(engine, "_CHECK_ON_OPEN_BYTES", 0)
    index = tmp_path / "idx" / "memory.sqlite"
    memory = open_mem(workspace, {"sync": {"onSearch": False}}, index=index)
    memory.sync()
    memory.close()
    damage(index)
    response = open_mem(workspace, {"sync": {"onSearch": False}}, index=index).search("kayak lake")
    assert response.results[0].path == "memory/2024-05-02.md"
    # A broken table is repaired, not reported as a failed query.
    assert not any("keyword search failed" in w for w in response.warnings)
    assert any("could not be read" in w for w in response.warnings)
    assert list(index.parent.glob("memory.sqlite.corrupt-*"))


def test_a_memory_folder_that_cannot_be_listed_keeps_its_files_indexed(tmp_path: Path) -> None:
    """Unreadable is not deleted: the daily notes stay indexed, and the sync says why it cannot see them."""
    as_other = []
    if os.geteuid() == 0:  # root reads any folder: drop the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv(1): no way to be refused a folder")
        as_other = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe plum tree is in the north corner.\n")
    (ws / "memory" / "2026-01-02.md").write_text("- planted a plum tree today\n")
    index = tmp_path / "index" / "memory.sqlite"
    index.parent.mkdir()
    first = subprocess.run([*as_other, sys.executable, "-c", WORKER, str(ws), str(index), "0", "sync"],
                           capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(first.stdout)["files"] == 2
    (ws / "memory").chmod(0)
    try:
        again = subprocess.run([*as_other, sys.executable, "-c", WORKER, str(ws), str(index), "0", "sync"],
                               capture_output=True, text=True, timeout=120, check=True)
    finally:
        (ws / "memory").chmod(0o755)
    report = json.loads(again.stdout)
    assert report["removed"] == 0, report
    assert any("could not list the memory folder memory" in w for w in report["warnings"]), report
    conn = sqlite3.connect(index)
    try:
        assert {row[0] for row in conn.execute("SELECT path FROM files")} == {"MEMORY.md", "memory/2026-01-02.md"}
    finally:
        conn.close()


def _as_another_user(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``clawcore memory ...`` as a user that file permissions apply to (root ignores them)."""
    command = [str(Path(sys.executable).with_name("clawcore")), *args]
    if os.geteuid() == 0:
        for path in [home, *home.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "CLAWCORE_HOME": str(home)})


@pytest.fixture
def shared_home() -> Iterator[Path]:
    """A home another user can reach (pytest's own temporary folders are private to root)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="clawcore-perm-", dir="/tmp"))
    os.chmod(home, 0o755)
    (home / "workspace").mkdir()
    (home / "workspace" / "MEMORY.md").write_text("apple\n")
    (home / "clawcore.yaml").write_text("memory:\n  embeddings: {provider: none}\n")
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root")
def test_a_read_only_index_is_one_line_naming_the_files_and_works_again_once_writable(shared_home: Path) -> None:
    assert _as_another_user(shared_home, "memory", "index").returncode == 0
    index = shared_home / "index"
    for path in index.iterdir():
        path.chmod(0o444)
    (shared_home / "workspace" / "MEMORY.md").write_text("apple\nbanana\n")
    done = _as_another_user(shared_home, "memory", "index")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "cannot update the memory index" in line and "memory.sqlite" in line and "cannot be written" in line
    searched = _as_another_user(shared_home, "memory", "search", "apple")  # answered from the old index
    assert searched.returncode == 0 and "MEMORY.md" in searched.stdout, searched.stderr
    for path in index.iterdir():
        path.chmod(0o644)
    assert _as_another_user(shared_home, "memory", "index").returncode == 0
    assert "MEMORY.md" in _as_another_user(shared_home, "memory", "search", "banana").stdout


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root")
def test_once_the_index_is_writable_again_its_side_files_follow(shared_home: Path) -> None:
    """SQLite gives -shm the index's mode: one made while the index was read-only must not block later writes."""
    assert _as_another_user(shared_home, "memory", "index").returncode == 0
    index = shared_home / "index" / "memory.sqlite"
    index.chmod(0o400)
    searched = _as_another_user(shared_home, "memory", "search", "apple")
    assert searched.returncode == 0 and "MEMORY.md" in searched.stdout, searched.stderr
    index.chmod(0o600)
    (shared_home / "workspace" / "MEMORY.md").write_text("apple\nbanana\n")
    done = _as_another_user(shared_home, "memory", "index")
    assert done.returncode == 0, done.stderr
    assert "MEMORY.md" in _as_another_user(shared_home, "memory", "search", "banana").stdout


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root")
def test_a_read_only_home_without_an_index_still_reads_memory_files(shared_home: Path) -> None:
    shared_home.chmod(0o555)
    try:
        read = _as_another_user(shared_home, "memory", "get", "MEMORY.md")
        assert read.returncode == 0 and read.stdout == "apple\n", read.stderr
        searched = _as_another_user(shared_home, "memory", "search", "apple")
    finally:
        shared_home.chmod(0o755)
    assert searched.returncode == 1 and "Traceback" not in searched.stderr
    [line] = searched.stderr.splitlines()
    assert "cannot open the memory index" in line and "check that its folder is writable" in line
    assert not (shared_home / "index").exists()


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root")
def test_a_workspace_that_cannot_be_entered_keeps_the_index(shared_home: Path) -> None:
    assert _as_another_user(shared_home, "memory", "index").returncode == 0
    (shared_home / "workspace").chmod(0)
    try:
        for args in (("memory", "index"), ("memory", "search", "apple")):
            done = _as_another_user(shared_home, *args)
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
            assert "could not list the workspace" in done.stderr
        assert "MEMORY.md" in done.stdout  # still found: unknown is not gone
    finally:
        (shared_home / "workspace").chmod(0o755)


def test_a_workspace_that_does_not_exist_is_said_not_searched_in_silence(tmp_path: Path, open_mem) -> None:
    memory = open_mem(tmp_path / "no-such-workspace")
    for warnings in (memory.search("kayak").warnings, memory.status()["warnings"]):
        said = (f"the workspace {tmp_path / 'no-such-workspace'} does not exist; there is no memory to index or "
                "search (create it, or check --home and the workspace setting)")
        assert [w for w in warnings if "workspace" in w] == [said], warnings
    assert memory.sync().indexed == 0
    assert not (tmp_path / "no-such-workspace").exists()  # nothing made where the user did not say


def test_a_binary_file_under_a_memory_name_is_not_indexed_or_printed(workspace: Path, open_mem) -> None:
    from clawcore.errors import MemoryAccessError

    (workspace / "memory" / "2024-05-03.md").write_bytes(bytes(range(256)) * 40)
    memory = open_mem(workspace)
    report = memory.sync()
    assert "memory file memory/2024-05-03.md is not text (it holds NUL bytes); nothing of it is indexed" in \
        report.warnings
    assert all(r.path != "memory/2024-05-03.md" for r in memory.search("kayak", max_results=10).results)
    with pytest.raises(MemoryAccessError, match="is not text"):
        memory.get("memory/2024-05-03.md")
    assert memory.get("memory/2024-05-02.md").startswith("# 2024-05-02")


def test_a_plugin_that_fails_to_offer_its_provider_is_said_and_search_still_answers(
    workspace: Path, tmp_path: Path, plugin_manager, register_plugin
) -> None:
    class Broken:
        @hookimpl
        def register_embedding_providers(self, register):
            raise RuntimeError("model file missing")

    register_plugin(Broken(), "broken-provider")
    with pytest.warns(RuntimeWarning, match=r"plugin 'broken-provider' failed in register_embedding_providers "
                                            r"\(RuntimeError: model file missing\)"):
        memory = open_memory(workspace, {"memory": {"embeddings": {"provider": "auto"}}},
                             plugin_manager=plugin_manager, index_path=tmp_path / "idx" / "memory.sqlite")
    assert memory.search("kayak").results
    memory.close()
    with pytest.warns(RuntimeWarning):
        named = open_memory(workspace, {"memory": {"embeddings": {"provider": "broken"}}},
                            plugin_manager=plugin_manager, index_path=tmp_path / "idx" / "memory.sqlite")
    reason = named.search("kayak").reason
    named.close()
    assert "plugin 'broken-provider' failed to register its providers (RuntimeError: model file missing)" in reason


class _KeyQuotingPlugin:
    """A provider whose start-up failure quotes a key, as one reading a key pasted into apiKeyEnv would."""

    KEY = "sk-proj-" + "Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9bN2mQ4wE6rT8y"

    @hookimpl
    def register_embedding_providers(self, register: Callable[..., None]) -> None:
        def start(settings: object, home: Path) -> HashEmbeddingProvider:
            from clawcore import ProviderUnavailable

            raise ProviderUnavailable(f"no API key: set {self.KEY} (or memory.embeddings.quoting.apiKey)")

        register("quoting", start)


def test_a_key_in_a_provider_message_is_never_shown(workspace: Path, tmp_path: Path, plugin_manager,
                                                    register_plugin, caplog: pytest.LogCaptureFixture) -> None:
    register_plugin(_KeyQuotingPlugin(), name="quoting")
    memory = open_memory(workspace, {"memory": {"embeddings": {"provider": "quoting"}}},
                         plugin_manager=plugin_manager, index_path=tmp_path / "index" / "memory.sqlite")
    with memory:
        shown = json.dumps([memory.status(), memory.search("database").to_dict(), memory.sync().warnings])
    assert "no API key: set sk-proj-" in shown and _KeyQuotingPlugin.KEY not in shown + caplog.text


def test_an_index_cut_by_another_chunker_is_rebuilt_with_its_citations_right(
    workspace: Path, tmp_path: Path, plugin_manager
) -> None:
    index = tmp_path / "idx" / "memory.sqlite"
    (workspace / "memory" / "2024-06-01.md").write_text("# June\n\npage one\fpage two\nthe canoe trip\n")
    memory = open_memory(workspace, {}, plugin_manager=plugin_manager, index_path=index)
    memory.sync()
    memory.close()
    # An index from an older chunker: no version in its meta, and the trip cited a line too far
    # (a form feed counted as a line break).
    with sqlite3.connect(index) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'chunker'")
        conn.execute("UPDATE chunks SET start_line = start_line + 1, end_line = end_line + 1 "
                     "WHERE path = 'memory/2024-06-01.md'")
    conn.close()
    memory = open_memory(workspace, {}, plugin_manager=plugin_manager, index_path=index)
    try:
        assert memory.status()["rebuildBecause"] == ["chunker: none → 2"]
        assert memory.sync().rebuilt
        hit = memory.search("canoe trip").results[0]
        assert hit.citation == "memory/2024-06-01.md#L1-L4"
        assert not memory.status()["pendingRebuild"]
    finally:
        memory.close()
