"""Through the core's memory engine: the local provider is the first link, and a broken model falls back."""

from __future__ import annotations

import shutil
from pathlib import Path

import clawcore_embeddings_local
import pluggy
import pytest
from clawcore.memory import open_memory
from tiny_onnx import write_encoder

NOTES = (
    "# Decisions\n\n"
    "We decided to migrate the user database to PostgreSQL next quarter.\n\n"
    "# Garden\n\n"
    "The tomatoes need watering twice a week in summer.\n"
)


@pytest.fixture
def workspace(clawcore_home: Path) -> Path:
    ws = clawcore_home / "workspace"
    (ws / "MEMORY.md").write_text(NOTES, encoding="utf-8")
    return ws


@pytest.fixture
def with_plugin(plugin_manager: pluggy.PluginManager, register_plugin) -> pluggy.PluginManager:
    register_plugin(clawcore_embeddings_local, name="embeddings_local")
    return plugin_manager


def test_auto_chooses_local_and_searches_hybrid(workspace: Path, with_plugin: pluggy.PluginManager) -> None:
    with open_memory(workspace, {}, plugin_manager=with_plugin, index_path=workspace.parent / "i.sqlite") as memory:
        assert memory.provider is not None and memory.provider.name == "local"
        memory.sync()
        response = memory.search("which database will we move to")
        assert response.mode == "hybrid"
        assert response.provider == "local"
        assert "PostgreSQL" in response.results[0].snippet


def test_corrupt_model_falls_back_to_keyword_search(
    workspace: Path, with_plugin: pluggy.PluginManager, bundle_files: tuple[Path, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "broken-model"
    folder.mkdir()
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    (folder / "model.onnx").write_bytes(bundle_files[0].read_bytes()[: 1 << 20])  # a cut-off download
    config = {"memory": {"embeddings": {"provider": "local", "local": {"modelPath": str(folder)}}}}
    with open_memory(workspace, config, plugin_manager=with_plugin, index_path=tmp_path / "i.sqlite") as memory:
        assert memory.provider is None
        memory.sync()
        response = memory.search("PostgreSQL")
        assert response.mode == "fts-only"
        assert "ONNX Runtime cannot load" in response.reason and str(folder) in response.reason
        assert "PostgreSQL" in response.results[0].snippet  # nothing lost: keyword search still answers


def test_another_model_file_is_another_vector_space(
    workspace: Path, with_plugin: pluggy.PluginManager, bundle_files: tuple[Path, Path], tmp_path: Path
) -> None:
    index = tmp_path / "i.sqlite"
    with open_memory(workspace, {}, plugin_manager=with_plugin, index_path=index) as memory:
        memory.sync()
        assert memory.status()["model"] == "all-MiniLM-L6-v2@sha256:8199be6f699a"
    folder = tmp_path / "other-export"
    folder.mkdir()
    shutil.copyfile(bundle_files[0], folder / "model.onnx")
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    config = {"memory": {"embeddings": {"local": {"modelPath": str(folder)}}}}
    with open_memory(workspace, config, plugin_manager=with_plugin, index_path=index) as memory:
        memory.sync()
        assert memory.status()["model"].startswith("path:other-export@sha256:")
        assert memory.status()["model"] != "path:other-export@sha256:8199be6f699a"  # not the file's hash alone
        assert memory.search("which database will we move to").mode == "hybrid"


@pytest.mark.parametrize(("dims", "nan", "why"), [
    (0, False, "gives vectors of shape (0,), not of 1 or more dims"),
    (4, True, "gives vectors that are not finite"),
])
def test_a_model_without_usable_vectors_falls_back_at_start(
    workspace: Path, with_plugin: pluggy.PluginManager, bundle_files: tuple[Path, Path], tmp_path: Path,
    dims: int, nan: bool, why: str,
) -> None:
    folder = tmp_path / "odd-model"
    write_encoder(folder / "model.onnx", dims, nan=nan)
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    config = {"memory": {"embeddings": {"provider": "local", "local": {"modelPath": str(folder)}}}}
    with open_memory(workspace, config, plugin_manager=with_plugin, index_path=tmp_path / "i.sqlite") as memory:
        assert memory.provider is None
        assert memory.status()["mode"] == "fts-only"
        memory.sync()
        response = memory.search("PostgreSQL")
        assert response.mode == "fts-only" and why in response.reason
        assert "PostgreSQL" in response.results[0].snippet


def test_a_tiny_encoder_is_a_working_model(
    workspace: Path, with_plugin: pluggy.PluginManager, bundle_files: tuple[Path, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "tiny-model"
    write_encoder(folder / "model.onnx", 8)
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    config = {"memory": {"embeddings": {"provider": "local", "local": {"modelPath": str(folder)}}}}
    with open_memory(workspace, config, plugin_manager=with_plugin, index_path=tmp_path / "i.sqlite") as memory:
        assert memory.provider is not None and memory.provider.dims == 8
        memory.sync()
        assert memory.search("PostgreSQL").mode == "hybrid"


def test_a_new_window_or_tokenizer_is_another_vector_space(
    workspace: Path, with_plugin: pluggy.PluginManager, bundle_files: tuple[Path, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "all-MiniLM-L6-v2"  # named like the catalogued model, but not it
    folder.mkdir()
    shutil.copyfile(bundle_files[0], folder / "model.onnx")
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    config = {"memory": {"embeddings": {"local": {"modelPath": str(folder)}}}}
    index = tmp_path / "i.sqlite"
    models = []
    for change in ("", '{"max_seq_length": 64}', "tokenizer"):
        if change == "tokenizer":
            (folder / "tokenizer.json").write_text((folder / "tokenizer.json").read_text() + "\n")
        elif change:
            (folder / "sentence_bert_config.json").write_text(change)
        with open_memory(workspace, config, plugin_manager=with_plugin, index_path=index) as memory:
            report = memory.sync()
            models.append(memory.status()["model"])
            assert report.embedded == report.chunks > 0 and report.cached == 0  # no vector of another space
    assert len(set(models)) == 3
    assert all(m.startswith("path:all-MiniLM-L6-v2@sha256:") for m in models)
    assert "all-MiniLM-L6-v2@sha256:8199be6f699a" not in models
