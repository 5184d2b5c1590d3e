"""The shipped linear injection classifier: two logistic heads over hashed features.

* the *segment* head reads one sentence or field of content a tool brought in
  and answers "is this an instruction addressed to the assistant?"; a
  document's score is its highest segment's;
* the *message* head reads a whole inbound message and answers "is this a
  jailbreak, an override or a prompt-extraction attempt?" (ordinary requests
  are imperatives too, so the segment head would be wrong there).

Weights live in ``weights.json.gz`` beside this module (a few hundred KB),
trained by ``plugins/prism/training/train.py``; run time needs only the
standard library. Each head carries the decision threshold chosen at
training time; :meth:`Head.calibrated` maps a probability so that this
threshold lands on 0.5, the score at which a verdict becomes suspicious.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from clawcore_prism.features import BUCKETS, context_cues, document_features, segment_dot, tokens

__all__ = ["Classifier", "Head", "load_classifier"]

WEIGHTS_FILE = "weights.json.gz"


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Head:
    """One logistic-regression head: sparse weights, a bias and its threshold."""

    weights: Mapping[int, float]
    bias: float
    threshold: float = 0.5

    def probability(self, features: Mapping[int, float]) -> float:
        z = self.bias
        get = self.weights.get
        for index, value in features.items():
            weight = get(index)
            if weight is not None:
                z += weight * value
        return _sigmoid(z)

    def segment_probability(self, text: str, context: Sequence[str], words: list[str]) -> float:
        """``probability(segment_features(text, context, words))``, without building the vector."""
        return _sigmoid(self.bias + segment_dot(self.weights, text, context, words))

    def calibrated(self, probability: float) -> float:
        """Probability mapped piecewise-linearly so the threshold becomes 0.5."""
        t = min(max(self.threshold, 1e-6), 1 - 1e-6)
        if probability < t:
            return 0.5 * probability / t
        return 0.5 + 0.5 * (probability - t) / (1 - t)


@dataclass(frozen=True)
class Classifier:
    """Both heads, plus where they came from (shown by ``clawcore prism status``)."""

    segment: Head
    message: Head
    info: Mapping[str, Any] = field(default_factory=dict)
    _memo: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def segment_scores(self, pieces: Sequence[str]) -> list[float]:
        """Calibrated score per segment of one document (memoised: boilerplate repeats across tool results).

        ``pieces`` are all of one document's segments: whether a segment changes the document's topic
        (:func:`~clawcore_prism.features.context_cues`) depends on the others.
        """
        head = self.segment
        memo = self._memo
        words = [tokens(piece) for piece in pieces]
        context = context_cues(pieces, words)
        scores = []
        for piece, piece_words in zip(pieces, words):
            cues = context[piece]
            key = piece + "\x00" + " ".join(cues) if cues else piece
            score = memo.get(key)
            if score is None:
                if len(memo) > 8192:
                    memo.clear()
                score = memo[key] = head.calibrated(head.segment_probability(piece, cues, piece_words))
            scores.append(score)
        return scores

    def message_score(self, text: str) -> float:
        """Calibrated score of a whole inbound message."""
        head = self.message
        return head.calibrated(head.probability(document_features(text)))


def _head(data: Mapping[str, Any]) -> Head:
    indices = data["indices"]
    values = data["values"]
    if len(indices) != len(values):
        raise ValueError("weights file is corrupt: indices and values differ in length")
    return Head(dict(zip(indices, values)), float(data["bias"]), float(data.get("threshold", 0.5)))


@functools.lru_cache(maxsize=4)
def load_classifier(path: Path | None = None) -> Classifier:
    """Load the shipped weights (or ``path``); cached, the weights are immutable.

    :raises ValueError: the file is not a weights file of this feature version.
    """
    if path is None:
        raw = resources.files("clawcore_prism").joinpath(WEIGHTS_FILE).read_bytes()
    else:
        raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw))
    if data.get("buckets") != BUCKETS:
        raise ValueError(f"weights were trained with {data.get('buckets')} buckets, features use {BUCKETS}")
    return Classifier(_head(data["segment"]), _head(data["message"]), data.get("info", {}))
