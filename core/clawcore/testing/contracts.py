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
