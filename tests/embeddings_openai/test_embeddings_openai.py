"""clawcore-embeddings-openai against the loopback OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import clawcore_embeddings_openai
import importlib_metadata
import pytest
from clawcore import ProviderUnavailable
from clawcore.config import load_config
from clawcore.hooks import Hooks
from clawcore.memory import open_memory
from clawcore.memory.embeddings import choose_provider
from clawcore.testing.contracts import EmbeddingProviderContract
from clawcore.testing.openai_server import OpenAIServer, deterministic_vector
from clawcore_embeddings_openai import OpenAIEmbeddingProvider, OpenAIEmbeddingSettings, create_provider
from clawcore_embeddings_openai.provider import retry_after_seconds

SECRET = "sk-embed-test-0123456789SECRET"


def settings_for(server: OpenAIServer, **overrides: Any) -> dict[str, Any]:
    return {"model": "test-embed", "baseUrl": server.base_url, "apiKey": SECRET, "backoff": "10ms",
            "maxBackoff": "2s", "timeout": "5s", **overrides}


def provider_for(server: OpenAIServer, sleeps: list[float] | None = None, **overrides: Any) -> OpenAIEmbeddingProvider:
    settings = OpenAIEmbeddingSettings.from_mapping(settings_for(server, **overrides))
    if sleeps is None:
        return OpenAIEmbeddingProvider(settings)
    return OpenAIEmbeddingProvider(settings, sleep=sleeps.append)


def test_entry_point_is_found() -> None:
    names = {ep.name: ep.value for ep in importlib_metadata.entry_points(group="clawcore")}
    assert names.get("embeddings_openai") == "clawcore_embeddings_openai"


class TestContract(EmbeddingProviderContract):
    @pytest.fixture
    def provider(self, openai_server: OpenAIServer, tmp_path: Path) -> OpenAIEmbeddingProvider:
        return create_provider(settings_for(openai_server), tmp_path)


def test_registered_as_openai_with_defaults(plugin_manager: Any, register_plugin: Any, tmp_path: Path,
                                            openai_server: OpenAIServer) -> None:
    register_plugin(clawcore_embeddings_openai, "embeddings_openai")
    factory = Hooks(plugin_manager).embedding_providers()["openai"]
    config = load_config(tmp_path, data={"memory": {"embeddings": {"openai": {"baseUrl": openai_server.base_url}}}},
                         pm=plugin_manager)
    section = config.section("memory.embeddings.openai")
    assert (section["model"], section["batchSize"], section["retries"]) == ("text-embedding-3-small", 128, 4)
    provider = factory({**section, "dimensions": 32}, tmp_path)
    assert (provider.name, provider.model, provider.dims) == ("openai", "text-embedding-3-small", 32)
    assert openai_server.requests[0].body == {"model": "text-embedding-3-small", "input": ["probe"],
                                              "encoding_format": "float", "dimensions": 32}


def test_probe_learns_the_dimension_of_an_unknown_model(openai_server: OpenAIServer, tmp_path: Path) -> None:
    provider = create_provider(settings_for(openai_server), tmp_path)
    assert provider.dims == 64
    [vector] = provider.embed(["hello"])
    assert vector == pytest.approx(deterministic_vector("hello", 64))


def test_batches_by_count_and_by_tokens_keep_order(openai_server: OpenAIServer) -> None:
    texts = [f"text number {i} " + "word " * (i * 10) for i in range(10)]
    by_count = provider_for(openai_server, batchSize=3).embed(texts)
    assert sorted(len(r.body["input"]) for r in openai_server.requests) == [1, 3, 3, 3]  # concurrent
    openai_server.reset()
    by_tokens = provider_for(openai_server, batchTokens=200).embed(texts)
    sizes = [len(r.body["input"]) for r in openai_server.requests]
    assert sum(sizes) == 10 and len(sizes) > 4
    for request in openai_server.requests:  # every request within budget (or a lone long text)
        cost = sum(len(t.encode()) // 3 + 1 for t in request.body["input"])
        assert cost <= 200 or len(request.body["input"]) == 1
    expected = [deterministic_vector(t, 64) for t in texts]
    for got in (by_count, by_tokens):
        assert len(got) == len(expected)
        assert all(g == pytest.approx(e) for g, e in zip(got, expected))


def test_concurrency_is_bounded(openai_server: OpenAIServer) -> None:
    openai_server.fail(delay=0.15, times=8, endpoint="embeddings")
    provider_for(openai_server, batchSize=1, concurrency=2).embed([f"t{i}" for i in range(8)])
    assert openai_server.max_in_flight == 2
    assert len(openai_server.requests) == 8


def test_long_inputs_are_truncated(openai_server: OpenAIServer) -> None:
    provider = provider_for(openai_server, maxInputTokens=100)
    [vector] = provider.embed(["x" * 10_000])
    [request] = openai_server.requests
    assert len(request.body["input"][0]) == 300 and len(vector) == 64


def test_429_waits_what_retry_after_says(openai_server: OpenAIServer) -> None:
    sleeps: list[float] = []
    openai_server.fail(429, retry_after="1.5", times=2, endpoint="embeddings")
    assert len(provider_for(openai_server, sleeps).embed(["a"])) == 1
    assert sleeps == [1.5, 1.5]
    assert [r.status for r in openai_server.requests] == [429, 429, 200]


def test_retry_after_really_waits(openai_server: OpenAIServer) -> None:
    openai_server.fail(429, retry_after="0.3", endpoint="embeddings")
    provider_for(openai_server).embed(["a"])
    first, second = openai_server.requests
    assert second.received - first.received >= 0.28


def test_5xx_malformed_and_slow_answers_are_retried_with_backoff(openai_server: OpenAIServer) -> None:
    sleeps: list[float] = []
    openai_server.fail(500, endpoint="embeddings")
    openai_server.fail(body=b'{"data": [', endpoint="embeddings")
    openai_server.fail(body=b'{"data": [{"embedding": "abc", "index": 0}]}', endpoint="embeddings")
    openai_server.fail(delay=1.0, endpoint="embeddings")
    provider = provider_for(openai_server, sleeps, timeout="300ms", backoff="100ms", retries=4)
    assert len(provider.embed(["a"])) == 1
    assert sleeps == [0.1, 0.2, 0.4, 0.8]  # exponential from backoff
    deadline = time.monotonic() + 3  # the slow answer is logged once the server finished sleeping
    while len(openai_server.requests_to("embeddings")) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r.status for r in openai_server.requests_to("embeddings")] == [500, 200, 200, 200, 200]


def test_retry_after_is_capped(openai_server: OpenAIServer) -> None:
    sleeps: list[float] = []
    openai_server.fail(503, retry_after="3600", endpoint="embeddings")
    provider_for(openai_server, sleeps, maxBackoff="2s").embed(["a"])
    assert sleeps == [2.0]


def test_transient_failures_outlasting_retries_are_unavailable_but_not_permanent(openai_server: OpenAIServer) -> None:
    sleeps: list[float] = []
    openai_server.fail(500, times=3, endpoint="embeddings")
    provider = provider_for(openai_server, sleeps, retries=2)
    with pytest.raises(ProviderUnavailable, match="HTTP 500 .after 3 attempts"):
        provider.embed(["a"])
    assert provider.failure is None
    assert len(provider.embed(["a"])) == 1  # the server recovered, so does the provider


def test_wrong_dims_fail_permanently(openai_server: OpenAIServer, tmp_path: Path) -> None:
    provider = create_provider(settings_for(openai_server), tmp_path)
    openai_server.fail(wrong_dims=12, endpoint="embeddings")
    with pytest.raises(ProviderUnavailable, match=r"\[12\] dimensions, expected 64"):
        provider.embed(["a"])
    before = len(openai_server.requests)
    with pytest.raises(ProviderUnavailable, match="dimensions"):
        provider.embed(["b"])
    assert len(openai_server.requests) == before  # marked failed: no more requests


def test_bad_key_and_unknown_model_fail_at_start_without_leaking_the_key(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with OpenAIServer(api_key="sk-the-right-one", models={"text-embedding-3-small"}) as server:
        with pytest.raises(ProviderUnavailable) as bad_key:
            create_provider(settings_for(server, model="text-embedding-3-small"), tmp_path)
        good = settings_for(server, apiKey="sk-the-right-one", model="nope")
        with pytest.raises(ProviderUnavailable, match="model 'nope' was not found") as bad_model:
            create_provider(good, tmp_path)
        assert len(server.requests) == 2  # permanent failures are not retried
        settings_repr = repr(OpenAIEmbeddingSettings.from_mapping(settings_for(server)))
    assert "refused the key (HTTP 401)" in str(bad_key.value) and "OPENAI_API_KEY" in str(bad_key.value)
    assert SECRET not in str(bad_key.value) + str(bad_model.value) + caplog.text
    assert SECRET not in settings_repr


def test_no_key_without_base_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderUnavailable, match="set OPENAI_API_KEY"):
        create_provider({}, tmp_path)


def test_the_chain_falls_back_local_openai_bm25(openai_server: OpenAIServer, tmp_path: Path) -> None:
    def local(settings: Any, home: Path) -> Any:
        raise ProviderUnavailable("no model bundle")

    factories = {"local": local, "openai": create_provider}
    settings = {"provider": "auto", "openai": settings_for(openai_server)}
    choice = choose_provider(settings, factories, tmp_path)
    assert choice.provider is not None and choice.provider.name == "openai"
    assert choice.skipped == ("local: no model bundle",)
    offline = {"provider": "auto", "openai": settings_for(openai_server, baseUrl="http://127.0.0.1:9/v1",
                                                           retries=0)}
    choice = choose_provider(offline, factories, tmp_path)
    assert choice.provider is None and "openai: openai embeddings at" in choice.reason


def test_memory_index_uses_openai_vectors(openai_server: OpenAIServer, plugin_manager: Any,
                                          register_plugin: Any, clawcore_home: Path) -> None:
    register_plugin(clawcore_embeddings_openai, "embeddings_openai")
    workspace = clawcore_home / "workspace"
    (workspace / "MEMORY.md").write_text("# Memory\n\nWe decided to migrate the database to Postgres.\n")
    (workspace / "memory" / "2026-03-14.md").write_text("- bananas are yellow\n")
    config = {"memory": {"embeddings": {"provider": "openai", "openai": settings_for(openai_server)}}}
    memory = open_memory(workspace, config, plugin_manager=plugin_manager,
                         index_path=clawcore_home / "index" / "memory.sqlite")
    try:
        memory.sync()
        status = memory.status()
        assert (status["provider"], status["model"], status["dims"], status["mode"]) == (
            "openai", "test-embed", 64, "hybrid")
        response = memory.search("database migration decision")
        assert response.mode == "hybrid" and response.results[0].path == "MEMORY.md"
    finally:
        memory.close()
    assert len(openai_server.requests_to("embeddings")) >= 2


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < (retry_after_seconds({"retry-after": future}) or 0) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_config_show_masks_the_keys(clawcore_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from clawcore.cli import main

    (clawcore_home / "clawcore.yaml").write_text(yaml.safe_dump({
        "memory": {"embeddings": {"provider": "none", "openai": {"apiKey": SECRET}}},
        "models": {"openai": {"apiKey": SECRET}},
    }))
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "apiKey" in out and SECRET not in out


def test_changing_dimensions_rebuilds_without_calling_the_index_corrupt(
        openai_server: OpenAIServer, plugin_manager: Any, register_plugin: Any, clawcore_home: Path) -> None:
    register_plugin(clawcore_embeddings_openai, "embeddings_openai")
    workspace = clawcore_home / "workspace"
    (workspace / "MEMORY.md").write_text("# Memory\n\nWe decided to migrate the database to Postgres.\n")
    index = clawcore_home / "index" / "memory.sqlite"
    for dimensions in (None, 32, None):
        section = settings_for(openai_server) | ({"dimensions": dimensions} if dimensions else {})
        memory = open_memory(workspace, {"memory": {"embeddings": {"provider": "openai", "openai": section}}},
                             plugin_manager=plugin_manager, index_path=index)
        try:
            report = memory.sync()
            assert memory.status()["dims"] == (dimensions or 64)
            response = memory.search("database migration")
            assert response.mode == "hybrid" and not response.warnings, response.warnings
        finally:
            memory.close()
    assert sorted(p.name for p in index.parent.iterdir() if "corrupt" in p.name) == []
    assert report.cached == 1  # the 64-dimension vector came back from the cache


def test_an_answer_that_is_not_json_is_unreadable_and_retried(openai_server: OpenAIServer) -> None:
    openai_server.fail(body=b"<html>proxy login</html>", content_type="text/html", times=2, endpoint="embeddings")
    openai_server.fail(body=b"[]", endpoint="embeddings")
    with pytest.raises(ProviderUnavailable) as caught:
        provider_for(openai_server, [], retries=1).embed(["a"])
    message = str(caught.value)
    assert "unreadable response" in message and openai_server.base_url in message and "after 2 attempts" in message
    assert len(provider_for(openai_server, [], retries=1).embed(["a"])) == 1  # `[]`, then a real answer


def test_more_vectors_than_texts_or_a_huge_body_are_refused(openai_server: OpenAIServer) -> None:
    two = [{"object": "embedding", "index": i, "embedding": [0.5, 0.5]} for i in range(2)]
    openai_server.fail(body=json.dumps({"object": "list", "data": two}).encode(), endpoint="embeddings")
    with pytest.raises(ProviderUnavailable, match="2 vectors for 1 texts"):
        provider_for(openai_server, [], retries=0).embed(["a"])
    many = [{"object": "embedding", "index": i, "embedding": [0.5] * 4} for i in range(100_000)]
    openai_server.fail(body=json.dumps({"object": "list", "data": many}).encode(), endpoint="embeddings")
    with pytest.raises(ProviderUnavailable, match=r"unreadable response \(the response is larger than"):
        provider_for(openai_server, [], retries=0, batchSize=1, dimensions=4).embed(["a"])


def test_an_error_body_is_one_line(openai_server: OpenAIServer) -> None:
    body = json.dumps({"error": {"message": "bad\ninput\n\nsee docs", "type": "invalid_request_error"}}).encode()
    openai_server.fail(400, body=body, endpoint="embeddings")
    with pytest.raises(ProviderUnavailable) as caught:
        provider_for(openai_server).embed(["a"])
    assert "HTTP 400: " in str(caught.value) and "bad input see docs" in str(caught.value) and "\n" not in str(caught.value)


def test_the_timeout_bounds_a_dripping_answer(openai_server: OpenAIServer) -> None:
    openai_server.fail(drip=0.2, endpoint="embeddings")  # 20 pieces: about 4 s, each read quick
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match="no answer within 1s"):
        provider_for(openai_server, [], retries=0, timeout="1s").embed(["a"])
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(("settings", "expected"), [
    ({"apiKeyEnv": "sk-proj-PASTEDKEY0123456789abcdefghij"}, "is not an environment variable name"),
    ({"timeout": 0}, "is not a duration above 0"),
    ({"baseUrl": "127.0.0.1:18080/v1"}, "is not an http:// or https:// URL"),
    ({"baseUrl": "http://embed.lan:8080/v1"}, "plain http:// to a host other than loopback"),
])
def test_bad_endpoint_settings_fail_config_check(plugin_manager: Any, register_plugin: Any, tmp_path: Path,
                                                 settings: dict[str, Any], expected: str) -> None:
    from clawcore.errors import ConfigError

    register_plugin(clawcore_embeddings_openai, "embeddings_openai")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, data={"memory": {"embeddings": {"openai": settings}}}, pm=plugin_manager)
    [problem] = caught.value.problems
    assert expected in problem and "PASTEDKEY" not in problem
    with pytest.raises(ProviderUnavailable) as refused:  # and where settings skip the config
        OpenAIEmbeddingSettings.from_mapping({"baseUrl": "http://127.0.0.1:9/v1", **settings})
    assert "PASTEDKEY" not in str(refused.value)


def test_an_outage_at_start_answers_by_keyword_and_keeps_the_vectors(
        openai_server: OpenAIServer, plugin_manager: Any, register_plugin: Any, clawcore_home: Path) -> None:
    register_plugin(clawcore_embeddings_openai, "embeddings_openai")
    workspace = clawcore_home / "workspace"
    (workspace / "MEMORY.md").write_text("# Memory\n\nWe decided to migrate the database to Postgres.\n")
    index = clawcore_home / "index" / "memory.sqlite"
    config = {"memory": {"embeddings": {"provider": "openai", "openai": settings_for(openai_server, retries=0)}}}

    def opened() -> Any:
        return open_memory(workspace, config, plugin_manager=plugin_manager, index_path=index)

    with opened() as memory:
        memory.sync()
    openai_server.fail(503, times=1, endpoint="embeddings")  # the probe of the next start fails
    with opened() as memory:
        assert memory.provider is None and not memory.status()["pendingRebuild"]
        response = memory.search("database migration")
        assert response.mode == "fts-only" and "HTTP 503" in response.reason
        assert response.results[0].path == "MEMORY.md"
        (workspace / "memory" / "2026-03-14.md").write_text("- the kayak trip is in June\n")
        report = memory.sync()  # an explicit write during the outage: keyword now, vectors later
        assert not report.rebuilt and memory.status()["vectors"] == "partial"
    with opened() as memory:  # the provider is back: no rebuild, the new chunk gets its vector
        report = memory.sync()
        assert not report.rebuilt and (report.embedded, memory.status()["vectors"]) == (1, "complete")
        assert memory.search("kayak trip").mode == "hybrid"
    texts = [t for r in openai_server.requests_to("embeddings") if r.status == 200 for t in r.body["input"]]
    chunks = [t for t in texts if t not in ("probe", "database migration", "kayak trip")]
    assert len(chunks) == 2  # each chunk embedded once: nothing was rebuilt or embedded again
