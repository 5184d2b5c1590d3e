"""The test provider keeps the promises every embedding provider makes."""

from __future__ import annotations

import pytest
from clawcore.hooks import Hooks
from clawcore.testing.contracts import EmbeddingProviderContract
from clawcore.testing.providers import HashEmbeddingPlugin, HashEmbeddingProvider


class TestHashProvider(EmbeddingProviderContract):
    @pytest.fixture
    def provider(self) -> HashEmbeddingProvider:
        return HashEmbeddingProvider(dims=128)


def test_plugin_offers_it_under_its_name(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(HashEmbeddingPlugin(dims=16, model="m2", name="hashy"))
    provider = Hooks(plugin_manager).embedding_providers()["hashy"]({}, tmp_path)
    assert (provider.name, provider.model, provider.dims) == ("hashy", "m2", 16)
    assert provider.embed(["x"]) == HashEmbeddingProvider(dims=16, model="m2").embed(["x"])
    assert provider.embed(["x"]) != HashEmbeddingProvider(dims=16, model="m3").embed(["x"])
