"""The core's embedding-provider contract, against the real default model."""

from __future__ import annotations

import pytest
from clawcore.testing.contracts import EmbeddingProviderContract
from clawcore_embeddings_local import LocalEmbeddingProvider


class TestLocalProviderContract(EmbeddingProviderContract):
    @pytest.fixture
    def provider(self, local_provider: LocalEmbeddingProvider) -> LocalEmbeddingProvider:
        return local_provider
