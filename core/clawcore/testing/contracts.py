"""Contract suites: subclass one in your plugin's tests to prove your implementation.

Each suite needs one fixture from the subclass::

    class TestMyProvider(EmbeddingProviderContract):
        @pytest.fixture
        def provider(self):
            return MyProvider(...)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from clawcore.types import EmbeddingProvider, ExecResult, SandboxBackend

__all__ = ["EmbeddingProviderContract", "SandboxBackendContract"]


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


class EmbeddingProviderContract:
    """What every embedding provider promises the memory index.

    Subclasses provide a ``provider`` fixture.
    """

    @pytest.fixture
    def provider(self) -> EmbeddingProvider:  # pragma: no cover - overridden
        raise NotImplementedError("subclass the contract and define a `provider` fixture")

    def test_identity(self, provider: EmbeddingProvider) -> None:
        assert isinstance(provider, EmbeddingProvider)
        assert provider.name and provider.model
        assert isinstance(provider.dims, int) and provider.dims > 0

    def test_one_vector_per_text_in_order(self, provider: EmbeddingProvider) -> None:
        texts = ["the cat sat on the mat", "quarterly revenue grew", "the cat sat on the mat"]
        vectors = provider.embed(texts)
        assert len(vectors) == 3
        assert all(len(v) == provider.dims for v in vectors)
        assert _cosine(vectors[0], vectors[2]) == pytest.approx(1.0, abs=1e-4)
        assert _cosine(vectors[0], vectors[1]) < 0.99

    def test_vectors_are_unit_length_and_finite(self, provider: EmbeddingProvider) -> None:
        for vector in provider.embed(["hello world", "a", "数据库迁移的决定"]):
            assert all(math.isfinite(x) for x in vector)
            assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-3)

    def test_empty_batch(self, provider: EmbeddingProvider) -> None:
        assert provider.embed([]) == []

    def test_batching_does_not_change_vectors(self, provider: EmbeddingProvider) -> None:
        texts = [f"note number {i} about topic {i % 3}" for i in range(10)]
        together = provider.embed(texts)
        alone = [provider.embed([text])[0] for text in texts[:3]]
        for a, b in zip(together[:3], alone, strict=True):
            assert _cosine(a, b) == pytest.approx(1.0, abs=1e-3)

    def test_long_input_is_handled(self, provider: EmbeddingProvider) -> None:
        long_text = "memory " * 5000
        [vector] = provider.embed([long_text])
        assert len(vector) == provider.dims

    def test_similar_texts_score_higher(self, provider: EmbeddingProvider) -> None:
        query, near, far = provider.embed(
            ["we decided to migrate the database", "the database migration was decided", "bananas are yellow"]
        )
        assert _cosine(query, near) > _cosine(query, far)


class SandboxBackendContract:
    """What every sandbox backend promises the runtime.

    Subclasses provide a ``backend`` fixture and may override ``workdir``.
    """

    @pytest.fixture
    def backend(self) -> SandboxBackend:  # pragma: no cover - overridden
        raise NotImplementedError("subclass the contract and define a `backend` fixture")

    @pytest.fixture
    def workdir(self, tmp_path: Path) -> Path:
        return tmp_path

    def run(self, backend: SandboxBackend, command: str, workdir: Path, **kwargs: Any) -> ExecResult:
        kwargs.setdefault("timeout_s", 20)
        return backend.run(command, cwd=workdir, **kwargs)

    def test_identity(self, backend: SandboxBackend) -> None:
        assert isinstance(backend, SandboxBackend)
        assert backend.name
        assert backend.info().strip()

    def test_stdout_and_exit_code(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "echo hello; exit 3", workdir)
        assert result.stdout.strip() == "hello"
        assert result.exit_code == 3
        assert not result.timed_out

    def test_stderr_is_separate(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "echo out; echo err >&2", workdir)
        assert result.stdout.strip() == "out"
        assert result.stderr.strip() == "err"

    def test_pipes_and_redirections_work(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "printf 'b\\na\\n' | sort | head -n 1", workdir)
        assert result.stdout.strip() == "a"

    def test_stdin(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "cat", workdir, stdin="from stdin")
        assert result.stdout == "from stdin"

    def test_timeout_kills(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "sleep 30", workdir, timeout_s=1)
        assert result.timed_out
        assert result.exit_code != 0
        assert result.duration_s < 15

    def test_output_is_capped(self, backend: SandboxBackend, workdir: Path) -> None:
        result = self.run(backend, "head -c 5000000 /dev/zero | tr '\\0' x", workdir)
        assert result.truncated
        assert len(result.stdout) < 5_000_000

    def test_environment_is_scrubbed(self, backend: SandboxBackend, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-contract-test-secret")
        result = self.run(backend, "env", workdir)
        assert "sk-contract-test-secret" not in result.stdout

    def test_close_is_idempotent(self, backend: SandboxBackend) -> None:
        backend.close()
        backend.close()


class RetrieverContract:
    """What every retriever (``register_retrievers``) promises memory search.

    Subclasses provide a ``retriever`` fixture: an object with
    ``search(query, max_results, min_score)`` over the Markdown memory that
    the ``contract_workspace`` fixture writes (index it there however the
    retriever needs)::

        class TestMyRetriever(RetrieverContract):
            @pytest.fixture
            def retriever(self, contract_workspace, tmp_path):
                return MyRetriever(contract_workspace, tmp_path / "index")
    """

    #: ``(relative path, text)`` of the memory files the suite searches.
    NOTES = (
        ("MEMORY.md", "# Preferences\n\nThe user prefers green tea over coffee.\nEditor: Helix.\n"),
        ("memory/2024-05-01.md", "# 2024-05-01\n\n- Alice: The database migration runs on Friday.\n- Bob: Lunch was pizza.\n"),
        ("memory/2024-05-02.md", "# 2024-05-02\n\n- Alice: The kayak trip to the lake is in June.\n- Bob: I bring the tent.\n"),
        ("memory/2024-05-03.md", "# 2024-05-03\n\n我们决定使用数据库迁移\n"),
    )

    @pytest.fixture
    def contract_workspace(self, tmp_path: Path) -> Path:
        workspace = tmp_path / "contract-workspace"
        for relative, text in self.NOTES:
            path = workspace / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return workspace

    @pytest.fixture
    def retriever(self, contract_workspace: Path) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError("subclass the contract and define a `retriever` fixture")

    def test_finds_a_keyword_and_cites_real_lines(self, retriever: Any, contract_workspace: Path) -> None:
        response = retriever.search("kayak trip", 5, None)
        assert response.mode in ("hybrid", "fts-only")
        top = response.results[0]
        assert top.path == "memory/2024-05-02.md"
        lines = (contract_workspace / top.path).read_text(encoding="utf-8").splitlines()
        assert 1 <= top.start_line <= top.end_line <= len(lines)
        assert top.citation == f"{top.path}#L{top.start_line}-L{top.end_line}"
        assert "kayak" in top.snippet and len(top.snippet) <= 700

    def test_results_are_sorted_and_limited(self, retriever: Any) -> None:
        results = retriever.search("the user and the team", 2, None).results
        assert len(results) <= 2
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True)

    def test_min_score_is_respected(self, retriever: Any) -> None:
        everything = retriever.search("database migration", 10, None).results
        assert everything
        floor = everything[0].score
        assert all(r.score >= floor for r in retriever.search("database migration", 10, floor).results)

    def test_query_syntax_never_raises(self, retriever: Any) -> None:
        for query in ['"', "kayak*", "NEAR(a b)", "a AND OR NOT", "(((", "col:kayak", "-", "^x", "\\"]:
            response = retriever.search(query, 5, None)
            assert isinstance(tuple(response.results), tuple)

    def test_finds_cjk_text_without_spaces(self, retriever: Any) -> None:
        results = retriever.search("数据库", 5, None).results
        assert results and results[0].path == "memory/2024-05-03.md"


__all__ += ["RetrieverContract"]
