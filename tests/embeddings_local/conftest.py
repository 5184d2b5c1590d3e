from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clawcore_embeddings_local import LocalEmbeddingProvider


@pytest.fixture(scope="session")
def local_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEmbeddingProvider]:
    """The default provider (the pip-installed bundle), loaded once per test session."""
    home = tmp_path_factory.mktemp("embeddings-local-home")
    yield LocalEmbeddingProvider.from_settings({}, home)


@pytest.fixture(scope="session")
def bundle_files(local_provider: LocalEmbeddingProvider) -> tuple[Path, Path]:
    """The verified default model's ONNX and tokenizer files."""
    return local_provider.files.onnx, local_provider.files.tokenizer
