"""Turning keyword and vector candidates into a ranked, cited result list.

Pure functions over plain values, so every step (fusion, source weights,
decay, one-best-chunk-per-file, MMR, snippets) is testable on its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from clawcore.memory.settings import SearchSettings
from clawcore.memory.sources import note_date, source_weight
from clawcore.memory.tokens import query_terms, words

__all__ = ["Candidate", "fuse", "rank", "snippet_for"]

SNIPPET_CHARS = 700


@dataclass(frozen=True)
class Candidate:
    """A chunk that one of the two searches found."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    text: str


def fuse(
    text_scores: Mapping[int, float],
    vector_scores: Mapping[int, float],
    settings: SearchSettings,
) -> dict[int, float]:
    """Combine BM25 scores (higher is better) and cosine similarities into one score per chunk.

    ``weighted``: each list is scaled to [0, 1] (BM25 by its best score,
    cosine by the span between the worst and best candidate), then mixed
    with ``weights``; a chunk missing from one list scores 0 there.
    ``rrf``: reciprocal rank fusion, ``sum(w / (k + rank))``, scaled so the
    best possible score is 1.
    BM25 alone is scaled the same way. Cosine alone (no keyword matched) is the
    similarity itself, floored at 0: scaled between its own candidates, the best
    of them would score 1 however unrelated, and ``minScore`` could not drop it.
    """
    if not vector_scores:
        return _scaled_text(text_scores)
    if not text_scores:
        return {cid: min(max(score, 0.0), 1.0) for cid, score in vector_scores.items()}
    wt, wv = settings.text_weight, settings.vector_weight
    if wt + wv <= 0:
        wt = wv = 0.5
    fused: dict[int, float] = {}
    if settings.fusion == "rrf":
        k = settings.rrf_k
        for weight, scores in ((wt, text_scores), (wv, vector_scores)):
            for rank, cid in enumerate(sorted(scores, key=lambda c: -scores[c]), start=1):
                fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
        top = (wt + wv) / (k + 1)
        return {cid: score / top for cid, score in fused.items()}
    text = _scaled_text(text_scores)
    vector = _scaled_vector(vector_scores)
    for cid in text.keys() | vector.keys():
        fused[cid] = (wt * text.get(cid, 0.0) + wv * vector.get(cid, 0.0)) / (wt + wv)
    return fused


def _scaled_text(scores: Mapping[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    top = max(scores.values())
    if top <= 0:
        return {cid: 0.0 for cid in scores}
    return {cid: max(score, 0.0) / top for cid, score in scores.items()}


def _scaled_vector(scores: Mapping[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-9:
        return {cid: 1.0 for cid in scores}
    return {cid: (score - low) / (high - low) for cid, score in scores.items()}


def _decay(path: str, today: date, half_life_days: float) -> float:
    day = note_date(path)
    if day is None:
        return 1.0  # MEMORY.md and other undated files never decay
    age = max((today - day).days, 0)
    return 0.5 ** (age / half_life_days)


def rank(
    candidates: Mapping[int, Candidate],
    fused: Mapping[int, float],
    settings: SearchSettings,
    *,
    max_results: int,
    min_score: float,
    today: date | None = None,
) -> list[tuple[Candidate, float]]:
    """Weight by source (and age), keep the best ``per_file`` chunks per file, drop
    scores under ``min_score``, optionally diversify with MMR, and cut to ``max_results``."""
    weights = dict(settings.source_weights)
    today = today or date.today()
    scored: list[tuple[Candidate, float]] = []
    for cid, score in fused.items():
        candidate = candidates.get(cid)
        if candidate is None:
            continue
        score *= source_weight(candidate.path, weights)
        if settings.decay:
            score *= _decay(candidate.path, today, settings.half_life_days)
        scored.append((candidate, score))
    scored.sort(key=lambda item: (-item[1], item[0].path, item[0].start_line))
    per_file: dict[str, int] = {}
    cited: set[tuple[str, int, int]] = set()
    kept: list[tuple[Candidate, float]] = []
    for candidate, score in scored:
        if score < min_score or score <= 0:
            continue
        if per_file.get(candidate.path, 0) >= settings.per_file:
            continue
        citation = (candidate.path, candidate.start_line, candidate.end_line)
        if citation in cited:
            continue  # pieces of one over-long line cite the same lines: one result for them
        cited.add(citation)
        per_file[candidate.path] = per_file.get(candidate.path, 0) + 1
        kept.append((candidate, score))
    if settings.mmr and len(kept) > 1:
        kept = _mmr(kept, settings.mmr_lambda, max_results)
    return kept[:max_results]


def _mmr(items: list[tuple[Candidate, float]], lam: float, k: int) -> list[tuple[Candidate, float]]:
    """Maximal marginal relevance over word sets: trade score for novelty."""
    bags = [set(words(c.text)) for c, _ in items]
    top = max(score for _, score in items) or 1.0
    chosen: list[int] = []
    rest = list(range(len(items)))
    while rest and len(chosen) < k:
        def gain(i: int) -> float:
            overlap = max((_jaccard(bags[i], bags[j]) for j in chosen), default=0.0)
            return lam * items[i][1] / top - (1 - lam) * overlap

        best = max(rest, key=gain)
        chosen.append(best)
        rest.remove(best)
    return [items[i] for i in chosen]


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


_SUFFIX = re.compile(r"(ingly|edly|ing|ed|es|s|ly)$")


def _stem(word: str) -> str:
    return _SUFFIX.sub("", word) if len(word) > 4 else word


def snippet_for(text: str, query: str, limit: int = SNIPPET_CHARS) -> tuple[str, int]:
    """The run of whole lines (at most ``limit`` characters) that covers the most query terms,
    rarer terms counting more.

    Returns the snippet and its offset in lines from the chunk's first line.
    A single line longer than ``limit`` is cut around its first match.
    """
    lines = text.split("\n")
    if len(text) <= limit:
        return text, 0
    phrases = query_terms(query)
    terms = {_stem(p[0]) if len(p) == 1 else p[0] + "".join(g[-1] for g in p[1:]) for p in phrases}
    line_hits: list[set[str]] = []
    for line in lines:
        lowered = line.lower()
        stems = {_stem(w) for w in words(line)}
        line_hits.append({t for t in terms if t in stems or (not t.isascii() and t in lowered)})
    # A term on every line (a speaker's name, say) tells little about where the answer is:
    # weight each term by how rare it is among the chunk's lines.
    weight = {t: math.log(1 + len(lines) / (1 + sum(t in hits for hits in line_hits))) for t in terms}
    best_score, best = -1.0, (0, 0)
    for i in range(len(lines)):
        size, covered, hits = 0, set(), 0
        for j in range(i, len(lines)):
            size += len(lines[j]) + (1 if j > i else 0)
            if size > limit:
                break
            covered |= line_hits[j]
            hits += len(line_hits[j])
            score = sum(weight[t] for t in covered) + 0.01 * hits
            if score > best_score:
                best_score, best = score, (i, j)
    i, j = best
    if best_score < 0 or (not any(line_hits[i : j + 1]) and any(line_hits)):
        # Every line is over the limit, or the best fitting window has no match
        # while a long line has: cut the long line around its first match.
        index = max(range(len(lines)), key=lambda n: (len(line_hits[n]), -n))
        line = lines[index]
        if len(line) > limit:
            lowered = line.lower()
            at = min((lowered.find(t) for t in terms if lowered.find(t) >= 0), default=0)
            start = max(0, min(at - limit // 3, len(line) - limit))
            return line[start : start + limit], index
        if best_score < 0:
            return line, index
    return "\n".join(lines[i : j + 1]), i


def cosine_from_l2(distance: float) -> float:
    """Cosine similarity of unit vectors from their Euclidean distance."""
    return 1.0 - (distance * distance) / 2.0


def finite(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values)
