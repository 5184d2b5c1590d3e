"""What the vectors are: close to the fp32 model, semantically ordered, long inputs split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from clawcore_embeddings_local import LocalEmbeddingProvider
from clawcore_embeddings_local.provider import MAX_WINDOWS

#: fp32 all-MiniLM-L6-v2 vectors, computed by reference_fp32.py (NumPy BERT on the original weights).
REFERENCE = json.loads((Path(__file__).parent / "reference_fp32.json").read_text(encoding="utf-8"))


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


@pytest.mark.parametrize("sentence", sorted(REFERENCE))
def test_matches_the_fp32_reference(local_provider: LocalEmbeddingProvider, sentence: str) -> None:
    # int8 weights cost a little precision: measured cosine >= 0.9994, largest component error 0.0065.
    reference = REFERENCE[sentence]
    [vector] = local_provider.embed([sentence])
    assert cos(vector, reference) > 0.998
    assert np.abs(np.asarray(vector) - reference).max() < 0.02


def test_reference_sentences_are_not_interchangeable(local_provider: LocalEmbeddingProvider) -> None:
    # The tolerance above must be tight enough to tell the sentences apart.
    sentences = sorted(REFERENCE)
    vectors = local_provider.embed(sentences)
    for i, vector in enumerate(vectors):
        for j, sentence in enumerate(sentences):
            if i != j:
                assert cos(vector, REFERENCE[sentence]) < 0.9


@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        ("Where did Caroline go on Tuesday?", "Caroline went to the support group on Tuesday.",
         "The quarterly revenue report is due."),
        ("database migration plan", "We will move the user tables to PostgreSQL next week.",
         "My cat likes to sleep in the sun."),
        ("What is Melanie painting?", "Melanie finished a painting of a sunset by the lake.",
         "The train to Berlin was delayed by an hour."),
    ],
)
def test_similar_scores_higher_than_unrelated(
    local_provider: LocalEmbeddingProvider, query: str, near: str, far: str
) -> None:
    q, n, f = local_provider.embed([query, near, far])
    assert cos(q, n) > cos(q, f) + 0.2


def test_long_input_is_split_and_pooled_not_truncated(local_provider: LocalEmbeddingProvider) -> None:
    head = "We decided to migrate the user database to PostgreSQL. " * 12  # > one 128-token window
    tail = "Bananas and mangoes are tropical fruits that grow in warm places. " * 12
    assert local_provider.windows(head) == 2
    assert local_provider.windows(head + tail) == 3
    [long_vector, head_vector, tail_vector] = local_provider.embed([head + tail, head, tail])
    # Truncation would make the long text equal to its head; pooling lets the tail count.
    assert cos(long_vector, tail_vector) > 0.5  # truncation would keep only the head: near 0
    assert cos(long_vector, head_vector) < 0.9  # truncation: near 1


def test_window_count_is_bounded(local_provider: LocalEmbeddingProvider) -> None:
    assert local_provider.windows("memory " * 100_000) == MAX_WINDOWS


def test_batch_size_does_not_change_vectors(tmp_path: Path, local_provider: LocalEmbeddingProvider) -> None:
    texts = [f"note {i}: " + "word " * (i * 9) for i in range(6)]
    small = LocalEmbeddingProvider(local_provider.files, threads=1, batch_size=1)
    for a, b in zip(small.embed(texts), local_provider.embed(texts), strict=True):
        assert cos(a, b) > 0.998


def test_threads_setting_reaches_onnx_runtime(tmp_path: Path) -> None:
    provider = LocalEmbeddingProvider.from_settings({"threads": 2, "batchSize": 4}, tmp_path)
    assert provider._session.get_session_options().intra_op_num_threads == 2
    assert (provider.threads, provider.batch_size) == (2, 4)


def test_identity_goes_into_the_index_meta(local_provider: LocalEmbeddingProvider) -> None:
    assert local_provider.name == "local"
    assert local_provider.model == "all-MiniLM-L6-v2@sha256:8199be6f699a"
    assert local_provider.dims == 384
    assert local_provider.files.source == "bundle"


def test_a_lone_surrogate_is_replaced_not_fatal(local_provider: LocalEmbeddingProvider) -> None:
    broken, clean = local_provider.embed(["data\udcffbase migration", "database migration"])
    assert len(broken) == len(clean) and abs(sum(x * x for x in broken) - 1.0) < 1e-3
