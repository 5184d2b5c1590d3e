from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from clawcore import hookimpl
from clawcore.errors import ConfigError, MemoryAccessError
from clawcore.memory import SearchResponse, open_memory
from clawcore.testing.providers import HashEmbeddingProvider
from clawcore.types import ProviderUnavailable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_hybrid_search_finds_and_cites(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    report = memory.sync()
    assert (report.files, report.indexed, report.embedded) == (3, 3, report.chunks)
    response = memory.search("database migration plan")
    assert isinstance(response, SearchResponse)
    assert response.mode == "hybrid" and response.provider == "hash"
    top = response.results[0]
    assert top.path == "memory/2024-05-01.md" and top.source == "daily"
    assert top.citation == f"memory/2024-05-01.md#L{top.start_line}-L{top.end_line}"
    assert "migration plan" in top.snippet


def test_memory_md_outweighs_daily_notes(workspace: Path, open_mem) -> None:
    (workspace / "memory" / "2024-05-03.md").write_text("The user prefers green tea over coffee.\n")
    memory = open_mem(workspace, provider="none")
    results = memory.search("prefers green tea coffee").results
    assert results[0].path == "MEMORY.md"
    daily = next(r for r in results if r.path == "memory/2024-05-03.md")
    assert results[0].score > daily.score


def test_source_weights_are_configurable_per_glob(workspace: Path, open_mem) -> None:
    (workspace / "memory" / "2024-05-03.md").write_text("The user prefers green tea over coffee.\n")
    memory = open_mem(workspace, {"search": {"sourceWeights": {"memory/*": 3.0}}}, provider="none")
    assert memory.search("prefers green tea coffee").results[0].path == "memory/2024-05-03.md"


def test_keyword_only_when_no_provider(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace, provider="none")
    response = memory.search("kayak")
    assert response.mode == "fts-only" and response.provider is None
    assert "none" in response.reason
    assert response.results[0].path == "memory/2024-05-02.md"


def test_auto_without_installed_providers_falls_back_to_bm25(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace, provider="auto")
    response = memory.search("kayak")
    assert response.mode == "fts-only"
    assert "local: not installed" in response.reason and "openai: not installed" in response.reason
    assert response.results


def test_a_provider_without_a_vector_width_is_skipped(workspace: Path, open_mem, register_plugin) -> None:
    widthless = HashEmbeddingProvider(name="widthless")
    widthless.dims = 0

    class Offer:
        @hookimpl
        def register_embedding_providers(self, register):
            register("widthless", lambda settings, home: widthless)

    register_plugin(Offer(), "widthless")
    memory = open_mem(workspace, provider="widthless")
    memory.sync()
    response = memory.search("kayak")
    assert response.mode == "fts-only" and response.results
    assert "widthless: makes vectors of 0 dimensions" in response.reason


def test_a_misspelled_provider_is_answered_with_the_name_meant(workspace: Path, open_mem) -> None:
    response = open_mem(workspace, provider="opnai").search("kayak")
    assert response.mode == "fts-only" and response.results
    assert "opnai: not installed (no plugin offers it; did you mean 'openai'?)" in response.reason


def test_explicit_provider_missing_warns_and_still_answers(workspace: Path, open_mem, caplog) -> None:
    with caplog.at_level("WARNING", logger="clawcore.memory"):
        memory = open_mem(workspace, provider="openai")
    assert any("openai: not installed" in r.getMessage() for r in caplog.records)
    response = memory.search("kayak")
    assert response.mode == "fts-only" and response.results
    assert memory.status()["mode"] == "fts-only"


class _Unavailable:
    @hookimpl
    def register_embedding_providers(self, register):
        def factory(settings, home):
            raise ProviderUnavailable("model file missing; run clawcore embeddings download")

        register("local", factory)


def test_fallback_chain_skips_an_unavailable_provider(workspace: Path, open_mem, register_plugin) -> None:
    register_plugin(_Unavailable())
    memory = open_mem(workspace, {"embeddings": {"provider": "local", "fallback": ["hash"]}})
    assert memory.provider is not None and memory.provider.name == "hash"
    assert "model file missing" in memory.status()["skippedProviders"][0]
    assert memory.search("kayak").mode == "hybrid"


class _FlakyProvider(HashEmbeddingProvider):
    """Works while indexing, then fails (as a remote API might) for queries."""

    broken = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.broken:
            raise ConnectionError("embedding endpoint refused the connection")
        return super().embed(texts)


class _FlakyPlugin:
    def __init__(self, provider):
        self.provider = provider

    @hookimpl
    def register_embedding_providers(self, register):
        register("flaky", lambda settings, home: self.provider)


def test_provider_failing_at_query_time_answers_fts_only(workspace: Path, open_mem, register_plugin) -> None:
    provider = _FlakyProvider(name="flaky")
    register_plugin(_FlakyPlugin(provider))
    memory = open_mem(workspace, provider="flaky")
    assert memory.search("kayak").mode == "hybrid"
    provider.broken = True
    response = memory.search("kayak lake")
    assert response.mode == "fts-only"
    assert "refused the connection" in response.reason and response.reason in response.warnings
    assert response.results[0].path == "memory/2024-05-02.md"


def test_provider_failing_during_sync_keeps_keyword_search_and_heals(workspace: Path, open_mem, register_plugin) -> None:
    provider = _FlakyProvider(name="flaky")
    provider.broken = True
    register_plugin(_FlakyPlugin(provider))
    memory = open_mem(workspace, provider="flaky")
    report = memory.sync()
    assert report.indexed == 3 and report.embedded == 0
    assert any("failed during sync" in w for w in report.warnings)
    assert memory.status()["vectors"] == "partial"
    provider.broken = False
    healed = memory.sync()
    assert healed.embedded == healed.chunks
    assert memory.status()["vectors"] == "complete"
    assert memory.search("kayak").mode == "hybrid"


class _NaNProvider(HashEmbeddingProvider):
    """Returns a NaN in every vector while ``broken``: a buggy third-party model."""

    broken = True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = super().embed(texts)
        if self.broken:
            for vector in vectors:
                vector[0] = float("nan")
        return vectors


def test_non_finite_vectors_are_refused_and_never_cached(workspace: Path, open_mem, register_plugin) -> None:
    provider = _NaNProvider(name="flaky")
    register_plugin(_FlakyPlugin(provider))
    memory = open_mem(workspace, provider="flaky")
    report = memory.sync()
    assert report.embedded == 0
    assert any("returned a vector with NaN or infinite values" in w for w in report.warnings)
    assert memory.search("kayak lake").results[0].path == "memory/2024-05-02.md"  # by keyword
    provider.broken = False
    healed = memory.sync(force=True)
    assert healed.embedded == healed.chunks  # nothing bad came back from the cache
    response = memory.search("kayak lake")
    assert response.mode == "hybrid" and response.results[0].path == "memory/2024-05-02.md"


def test_a_nan_vector_already_in_an_index_is_skipped(workspace: Path, open_mem, tmp_path: Path) -> None:
    """Written by a version that did not check vectors: search ranks around it."""
    memory = open_mem(workspace)
    memory.sync()
    store = memory.store
    nan = np.full(memory.provider.dims, np.nan, dtype=np.float32).tobytes()
    store.conn.execute("UPDATE embedding_cache SET vector = ?", (nan,))
    if store.has_table("chunks_vec"):
        store.conn.execute("UPDATE chunks_vec SET embedding = ? WHERE rowid = (SELECT min(rowid) FROM chunks_vec)",
                           (nan,))
    response = memory.search("kayak lake")
    assert response.results and response.results[0].path == "memory/2024-05-02.md"


def test_best_chunks_per_file_two_by_default_and_configurable(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    body = "\n\n".join(f"## Trip {i}\n\nThe kayak trip number {i} went to lake {i}." + " filler" * 60 for i in range(8))
    (ws / "memory" / "2024-06-01.md").write_text(body)
    small = {"tokens": 60, "overlap": 0}
    default = open_mem(ws, {"chunking": small}, provider="none", index=tmp_path / "default.sqlite")
    assert len(default.search("kayak lake", max_results=10).results) == 2
    one = open_mem(ws, {"search": {"perFile": 1}, "chunking": small}, provider="none", index=tmp_path / "one.sqlite")
    assert len(one.search("kayak lake", max_results=10).results) == 1
    three = open_mem(ws, {"search": {"perFile": 3}, "chunking": small}, provider="none", index=tmp_path / "three.sqlite")
    results = three.search("kayak lake", max_results=10).results
    assert len(results) == 3 and len({(r.start_line, r.end_line) for r in results}) == 3


def test_max_results_and_min_score(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace)
    assert len(memory.search("the team and billing", max_results=1).results) == 1
    everything = memory.search("billing team", max_results=10).results
    floor = everything[0].score * 0.99
    assert all(r.score >= floor for r in memory.search("billing team", min_score=floor).results)
    assert memory.search("billing team", min_score=1000).results == ()
    with pytest.raises(MemoryAccessError):
        memory.search("billing", max_results=0)
    with pytest.raises(MemoryAccessError):
        memory.search("   ")


def test_a_query_no_keyword_matches_scores_by_its_cosine(workspace: Path, open_mem) -> None:
    """Not scaled between its own candidates: the best of unrelated chunks would score 1 and the worst 0."""
    memory = open_mem(workspace)
    unrelated = memory.search("xyzzy qwerty plugh", max_results=10)
    assert unrelated.mode == "hybrid"
    assert all(r.score < 0.1 for r in unrelated.results), unrelated.results
    assert memory.search("xyzzy qwerty plugh", min_score=0.1).results == ()
    assert memory.search("kayak lake", min_score=0.1).results[0].path == "memory/2024-05-02.md"


def test_snippets_are_at_most_700_chars_and_hold_the_match(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    lines = [f"- Note {i}: ordinary line about nothing in particular {i}" for i in range(40)]
    lines[31] = "- Note 31: the secret ingredient is smoked paprika"
    (ws / "memory" / "2024-01-01.md").write_text("\n".join(lines))
    memory = open_mem(ws, provider="none")
    [result] = memory.search("secret ingredient paprika").results
    assert len(result.snippet) <= 700
    assert "smoked paprika" in result.snippet
    assert result.end_line - result.start_line + 1 > len(result.snippet.splitlines())


def test_cjk_query_finds_text_without_spaces(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2024-02-01.md").write_text("# 会议\n\n我们决定使用数据库迁移\n")
    (ws / "memory" / "2024-02-02.md").write_text("# 午餐\n\n今天吃了饺子\n")
    memory = open_mem(ws, provider="none")
    response = memory.search("数据库")
    assert [r.path for r in response.results] == ["memory/2024-02-01.md"]
    assert "数据库" in response.results[0].snippet
    assert memory.search("饺子").results[0].path == "memory/2024-02-02.md"
    # one character, wherever it stands in a run: first, inside, last
    assert [r.path for r in memory.search("数").results] == ["memory/2024-02-01.md"]
    assert [r.path for r in memory.search("饺").results] == ["memory/2024-02-02.md"]
    assert [r.path for r in memory.search("移").results] == ["memory/2024-02-01.md"]
    assert [r.path for r in memory.search("子").results] == ["memory/2024-02-02.md"]
    # a substring that is not in the text does not match through its pieces
    assert memory.search("库数据").results == ()
    # mixed-script queries work too
    (ws / "MEMORY.md").write_text("Deploy 用 Kubernetes 集群\n")
    assert memory.search("Kubernetes 集群").results[0].path == "MEMORY.md"


FTS_HOSTILE = ['"', "'", "*", "(", ")", "NEAR", "AND", "OR", "NOT", "^", ":", "-", "+", "{", "}", "[", "]", "\\", "\x00", "col:"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(FTS_HOSTILE), st.text(max_size=8)), min_size=1, max_size=8))
def test_fts5_syntax_in_queries_never_raises(workspace: Path, open_mem, parts: list[str]) -> None:
    memory = _shared_memory(workspace, open_mem)
    query = " ".join(parts)
    if not query.strip():
        return
    response = memory.search(query)
    assert response.mode in ("hybrid", "fts-only")
    assert not [w for w in response.warnings if "keyword search failed" in w]


_MEMORIES: dict[Path, object] = {}


def _shared_memory(workspace: Path, open_mem):
    if workspace not in _MEMORIES:
        _MEMORIES.clear()
        _MEMORIES[workspace] = open_mem(workspace, provider="none")
    return _MEMORIES[workspace]


def test_syntax_characters_around_real_words_still_match(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace, provider="none")
    for query in ['"kayak', "kayak*", "NEAR(kayak)", "kayak AND", "-kayak", "kayak:lake", "(kayak OR"]:
        assert memory.search(query).results[0].path == "memory/2024-05-02.md", query


def test_or_joined_question_finds_evidence_an_and_query_would_miss(workspace: Path, open_mem) -> None:
    memory = open_mem(workspace, provider="none")
    results = memory.search("When is the kayak trip with the canoe and paddles?").results
    assert results and results[0].path == "memory/2024-05-02.md"


def test_temporal_decay_prefers_recent_notes_but_not_over_memory_md(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2020-01-01.md").write_text("standup notes about the release\n")
    (ws / "memory" / "2024-01-01.md").write_text("standup notes about the release\n")
    plain = open_mem(ws, provider="none", index=tmp_path / "a.sqlite")
    decayed = open_mem(ws, {"search": {"temporalDecay": {"enabled": True, "halfLifeDays": 30}}},
                       provider="none", index=tmp_path / "b.sqlite")
    scores = {r.path: r.score for r in plain.search("standup release").results}
    assert scores["memory/2020-01-01.md"] == pytest.approx(scores["memory/2024-01-01.md"])
    order = [r.path for r in decayed.search("standup release").results]
    assert order[0] == "memory/2024-01-01.md"
    (ws / "MEMORY.md").write_text("standup notes about the release\n")
    assert decayed.search("standup release").results[0].path == "MEMORY.md"


def test_mmr_diversifies_near_duplicates(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    same = "deploy checklist: build, test, tag, push, announce"
    (ws / "memory" / "2024-01-01.md").write_text(same + "\n")
    (ws / "memory" / "2024-01-02.md").write_text(same + "\n")
    (ws / "memory" / "2024-01-03.md").write_text("deploy went wrong because the tag was missing\n")
    mmr = open_mem(ws, {"search": {"mmr": {"enabled": True, "lambda": 0.3}}}, provider="none")
    paths = [r.path for r in mmr.search("deploy checklist tag", max_results=2).results]
    assert "memory/2024-01-03.md" in paths


def test_config_errors_are_one_line_each(workspace: Path, hash_pm) -> None:
    with pytest.raises(ConfigError) as info:
        open_memory(workspace, {"memory": {"chunking": {"tokens": "big"}, "serach": {}}}, plugin_manager=hash_pm,
                    index_path=workspace.parent / "x.sqlite")
    problems = info.value.problems
    assert any(p.startswith("memory.chunking.tokens") for p in problems)
    assert any("serach: unknown key (did you mean 'search'?)" in p for p in problems)
    with pytest.raises(ConfigError, match="overlap"):
        open_memory(workspace, {"memory": {"chunking": {"tokens": 50, "overlap": 60}}}, plugin_manager=hash_pm,
                    index_path=workspace.parent / "x.sqlite")


def test_response_serialises_to_json(workspace: Path, open_mem) -> None:
    payload = json.loads(json.dumps(open_mem(workspace).search("pizza").to_dict()))
    assert payload["results"][0]["citation"].startswith("memory/2024-05-01.md#L")


def test_a_query_longer_than_the_limit_is_searched_by_its_beginning_and_says_so(tmp_path: Path, open_mem) -> None:
    from clawcore.memory.engine import MAX_QUERY_CHARS

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("kiwi season starts in May\n")
    memory = open_mem(ws, provider="none")
    response = memory.search("kiwi " + "x" * MAX_QUERY_CHARS)
    assert response.results[0].path == "MEMORY.md"
    assert any("longer than 4000 characters" in w for w in response.warnings)
    assert not any("longer than" in w for w in memory.search("kiwi").warnings)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1])
def test_min_score_must_be_a_finite_number_of_at_least_zero(tmp_path: Path, open_mem, bad: float) -> None:
    from clawcore.errors import MemoryAccessError

    ws = tmp_path / "ws"
    ws.mkdir()
    memory = open_mem(ws, provider="none")
    with pytest.raises(MemoryAccessError, match="minScore must be a number of at least 0"):
        memory.search("kiwi", min_score=bad)


def test_pieces_of_one_long_line_are_one_result(tmp_path: Path, open_mem) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "long.md").write_text("word " * 5000 + "\n")
    memory = open_mem(ws, provider="none")
    citations = [(r.path, r.start_line, r.end_line) for r in memory.search("word").results]
    assert citations == [("memory/long.md", 1, 1)]
