"""The shipped injection classifier: two logistic heads over hashed features.

* the *segment* head reads one sentence or field of content a tool brought in
  and answers "is this an instruction addressed to the assistant?"; a
  document's score is its highest segment's;
* the *message* head reads a whole inbound message and answers "is this a
  jailbreak, an override or a prompt-extraction attempt?" (ordinary requests
  are imperatives too, so the segment head would be wrong there).

The segment head adds a small hidden layer to its linear weights (:class:`Hidden`):
a sum of evidence cannot say "a question, *and* off the document's topic, *and*
addressed to no one", and those conjunctions are what carry to injections
written in other styles (docs/prism-evaluation.md, "The hidden layer").

Weights live in ``weights.json.gz`` beside this module (about 1.3 MB),
trained by ``plugins/prism/training/train.py``; run time needs only the
standard library. Each head carries the decision threshold chosen at
training time; :meth:`Head.calibrated` maps a probability so that this
threshold lands on 0.5, the score at which a verdict becomes suspicious.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from clawcore_prism.features import (
    BUCKETS,
    Groups,
    context_cues,
    document_features,
    segment_buckets,
    segment_dot,
    tokens,
)

__all__ = ["Classifier", "Head", "Hidden", "load_classifier"]

WEIGHTS_FILE = "weights.json.gz"


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


#: Bits per unit in a packed row of :class:`Hidden` (room for the sum of 2**24 rows).
_FIELD = 32
_FIELD_MASK = (1 << _FIELD) - 1


@dataclass(frozen=True)
class Hidden:
    """A hidden layer of ``size`` rectified units beside a head's linear weights.

    Each weight is a signed byte stored as ``128 + round(weight / scale)``. ``rows`` maps a feature bucket
    to its row, the ``size`` stored bytes packed into one integer, unit ``j`` in bits ``32j`` to
    ``32j + 31``; buckets the layer ignores have no row. Adding packed rows adds every unit's column at
    once, in C, and no field can carry into the next. A segment's units are ``relu(bias + Σ value · weight)``
    over its features, and ``out · units + out_bias`` is added to the head's logit.
    """

    size: int
    rows: Mapping[int, int]
    scale: float
    bias: tuple[float, ...]
    out: tuple[float, ...]
    out_bias: float

    def logit(self, groups: Iterable[tuple[float, Iterable[int]]]) -> float:
        """The layer's share of the logit for features given as (value, buckets) groups."""
        units = list(self.bias)
        get = self.rows.get
        for value, buckets in groups:
            found = list(filter(None, map(get, buckets)))  # a packed row is never 0: every field is >= 1
            if found:
                total = sum(found)
                offset = 128 * len(found)
                factor = value * self.scale
                units = [u + factor * (((total >> (_FIELD * j)) & _FIELD_MASK) - offset)
                         for j, u in enumerate(units)]
        return self.out_bias + sum(o * u for o, u in zip(self.out, units) if u > 0)

    @classmethod
    def from_bytes(cls, buckets: Sequence[int], stored: bytes, scale: float, bias: Sequence[float],
                   out: Sequence[float], out_bias: float) -> Hidden:
        """Build the layer from ``len(buckets)`` rows of ``len(bias)`` stored bytes each."""
        size = len(bias)
        if len(stored) != len(buckets) * size or len(out) != size:
            raise ValueError("weights file is corrupt: the hidden layer's sizes disagree")
        width = size * _FIELD // 8
        spread = bytearray(len(stored) * (_FIELD // 8))
        spread[:: _FIELD // 8] = stored  # each byte becomes the low byte of its little-endian field
        rows = {bucket: int.from_bytes(spread[n * width:(n + 1) * width], "little")
                for n, bucket in enumerate(buckets)}
        return cls(size, rows, float(scale), tuple(map(float, bias)), tuple(map(float, out)), float(out_bias))

    def to_bytes(self) -> tuple[list[int], bytes]:
        """The inverse of :meth:`from_bytes`: the buckets that have a row, in order, and their stored bytes."""
        buckets = sorted(self.rows)
        step = _FIELD // 8
        return buckets, b"".join(self.rows[b].to_bytes(self.size * step, "little")[::step] for b in buckets)


@dataclass(frozen=True)
class Head:
    """One logistic head: sparse linear weights, optionally a hidden layer, a bias and its threshold."""

    weights: Mapping[int, float]
    bias: float
    threshold: float = 0.5
    hidden: Hidden | None = None

    def probability(self, features: Mapping[int, float]) -> float:
        z = self.bias
        get = self.weights.get
        for index, value in features.items():
            weight = get(index)
            if weight is not None:
                z += weight * value
        if self.hidden is not None:
            groups: dict[float, list[int]] = defaultdict(list)
            for index, value in features.items():
                groups[value].append(index)
            z += self.hidden.logit(groups.items())
        return _sigmoid(z)

    def segment_probability(self, text: str, context: Sequence[str], words: list[str]) -> float:
        """``probability(segment_features(text, context, words))``, without building the vector."""
        return self.group_probability(segment_buckets(text, context, words))

    def group_probability(self, groups: Groups) -> float:
        """The probability of features given as :func:`~clawcore_prism.features.segment_buckets` groups."""
        z = self.bias + segment_dot(self.weights, groups)
        if self.hidden is not None:
            z += self.hidden.logit(groups)
        return _sigmoid(z)

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
    layer = data.get("hidden")
    hidden = None
    if layer:
        hidden = Hidden.from_bytes(layer["buckets"], base64.b64decode(layer["rows"]), layer["scale"],
                                   layer["bias"], layer["out"], layer["out_bias"])
    return Head(dict(zip(indices, values)), float(data["bias"]), float(data.get("threshold", 0.5)), hidden)


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
