"""Would a head on the local embedding model beat the hashed classifier? The experiment behind "no".

    .venv/bin/python plugins/prism/training/embedding_head.py [--cache FILE]

Needs numpy and the ``clawcore-embeddings-local`` plugin with its bundled
model. It embeds every segment of the training documents (those of
``train.py``) and of the independent sets in ``bench/data``, fits a logistic
head on the sentence vectors with the same examples the hashed segment head
learns from, and prints, per test set, how well each head ranks attacks above
benign tool output (ROC AUC: 0.5 is chance). Embedding takes about ten
minutes on two cores; ``--cache`` keeps the vectors for a second run.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import train
from clawcore_prism.classifier import load_classifier


def embed(texts: Sequence[str], cache: Path | None) -> dict[str, np.ndarray]:
    if cache is not None and cache.exists():
        stored = np.load(cache, allow_pickle=False)
        if list(stored["texts"]) == list(texts):
            return dict(zip(texts, stored["vectors"]))
    from clawcore_embeddings_local.model_store import locate
    from clawcore_embeddings_local.provider import LocalEmbeddingProvider
    from clawcore_embeddings_local.settings import LocalSettings

    home = Path("/nonexistent")  # the bundled model only: nothing is fetched
    provider = LocalEmbeddingProvider(locate(LocalSettings.from_mapping({}, home), home, allow_fetch=False),
                                      threads=2, batch_size=64)
    vectors = np.asarray(provider.embed(list(texts)), dtype=np.float32)
    if cache is not None:
        np.savez(cache, texts=np.asarray(texts), vectors=vectors)
    return dict(zip(texts, vectors))


def fit_dense(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method (384 dimensions: a few exact steps)."""
    a = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(a.shape[1])
    weight = weight / weight.mean()
    ridge = l2 * np.eye(a.shape[1])
    ridge[-1, -1] = 0.0
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-a @ theta))
        grad = a.T @ (weight * (p - y)) / len(y) + ridge @ theta
        hess = (a * (weight * p * (1 - p))[:, None]).T @ a / len(y) + ridge + 1e-9 * np.eye(a.shape[1])
        theta -= np.linalg.solve(hess, grad)
    return theta


def auc(attacks: Sequence[float], benign: Sequence[float]) -> float:
    """Probability that a random attack outscores a random benign case (ties count half)."""
    pos, neg = np.asarray(attacks)[:, None], np.asarray(benign)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=train.DEFAULT_EVAL)
    parser.add_argument("--cache", type=Path, help="an .npz file for the segment vectors")
    args = parser.parse_args(argv)
    docs = train.dev_docs(args.eval_dir) + train.extra_docs(args.eval_dir, random.Random(train.SEED))
    tests = train.independent_docs()
    train.prepare(docs + tests)
    shipped = load_classifier().segment
    texts = sorted({p for d in docs + tests for p in d.pieces})
    print(f"embedding {len(texts)} segments", file=sys.stderr, flush=True)
    vectors = embed(texts, args.cache)

    def fit(training: Sequence[train.Doc]) -> np.ndarray:
        # The hashed head's own examples: every benign segment, the best unique segment of each attack.
        rows, labels, sources = train.segment_training_set(training, shipped)
        where = train.segment_rows(training)
        x = np.stack([vectors[doc.pieces[i]] for doc, i in (where[id(r)] for r in rows)])
        return fit_dense(x, np.asarray(labels, dtype=float), train.balanced_weights(labels, sources))

    def dense_score(theta: np.ndarray, doc: train.Doc) -> float:
        return max((float(vectors[p] @ theta[:-1] + theta[-1]) for p in doc.pieces), default=-1e9)

    classifier = load_classifier()

    def hashed_score(doc: train.Doc) -> float:
        return max(classifier.segment_scores(doc.pieces), default=0.0)

    print("| test set | trained without | hashed head AUC | embedding head AUC |")
    print("|---|---|---:|---:|")
    for held in ("bipia", "injecagent"):
        theta = fit([d for d in docs if d.corpus != held])
        held_docs = [d for d in docs if d.corpus == held and d.hook == "after_tool_call"]
        cross = train.train_classifier([d for d in docs if d.corpus not in (held, "handwritten-chat")])
        hashed = [max(cross.segment_scores(d.pieces), default=0.0) for d in held_docs]
        dense = [dense_score(theta, d) for d in held_docs]
        attack = [d.attack for d in held_docs]
        print(f"| {held} | {held} | {auc(*_split(hashed, attack)):.3f} | {auc(*_split(dense, attack)):.3f} |",
              flush=True)
    theta = fit(docs)
    for name in sorted({d.corpus for d in tests}):
        chosen = [d for d in tests if d.corpus == name]
        attack = [d.attack for d in chosen]
        hashed = [hashed_score(d) for d in chosen]
        dense = [dense_score(theta, d) for d in chosen]
        print(f"| {name} | – | {auc(*_split(hashed, attack)):.3f} | {auc(*_split(dense, attack)):.3f} |")
    return 0


def _split(scores: Sequence[float], attack: Sequence[bool]) -> tuple[list[float], list[float]]:
    return [s for s, a in zip(scores, attack) if a], [s for s, a in zip(scores, attack) if not a]


if __name__ == "__main__":
    sys.exit(main())
