"""Words, CJK runs and token estimates shared by the chunker, the FTS index and snippets.

CJK scripts write words without spaces, so "a token" there is one character
(for the budget) and one overlapping character pair (for the index). Every
other script is split on what SQLite's ``unicode61`` tokenizer treats as
separators: anything but letters and digits.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

__all__ = ["STOPWORDS", "estimate_tokens", "is_cjk", "query_terms", "split_runs", "words"]

# Han (incl. extensions A), Hiragana, Katakana, Hangul syllables and jamo, CJK punctuation excluded.
_CJK_RANGES = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\u1100-\u11ff"  # Hangul jamo
)
_CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# A word: letters and digits, no underscore (unicode61 splits on "_").
_WORD = re.compile(r"[^\W_]+")

#: English function words dropped from keyword queries: they match every
#: chunk and only dilute BM25. A query made only of them keeps them.
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "s", "t", "d", "ll", "m", "o", "re", "ve", "y", "did", "does", "doing", "ever", "also", "get", "got"]
)


def is_cjk(char: str) -> bool:
    return bool(_CJK_CHAR.match(char))


def estimate_tokens(text: str) -> int:
    """A model-free token estimate: one per CJK character, one per four other characters.

    Used for chunk budgets; close enough to BPE tokenizers for English prose
    (about four characters per token) and to their one-or-more tokens per
    ideograph.
    """
    cjk = len(_CJK_CHAR.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def split_runs(text: str) -> Iterator[tuple[bool, str]]:
    """Yield ``(is_cjk, run)`` for the CJK runs and the stretches between them."""
    pos = 0
    for match in _CJK_RUN.finditer(text):
        if match.start() > pos:
            yield False, text[pos : match.start()]
        yield True, match.group()
        pos = match.end()
    if pos < len(text):
        yield False, text[pos:]


def cjk_grams(run: str) -> list[str]:
    """Overlapping character pairs of a CJK run (the run itself when it is one character)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """Lower-cased index terms of ``text``: words, and character pairs for CJK runs."""
    terms: list[str] = []
    for cjk, run in split_runs(text):
        if cjk:
            terms.extend(cjk_grams(run))
        else:
            terms.extend(w.lower() for w in _WORD.findall(run))
    return terms


def query_pairs(query: str) -> list[tuple[str, str]]:
    """Pairs of words that stand next to each other in the query, neither a stopword.

    Matched as phrases they reward chunks where the words are adjacent too
    ("support group", "birthday party") on top of matching each word.
    """
    pairs: list[tuple[str, str]] = []
    for cjk, run in split_runs(query):
        if cjk:
            continue
        found = [w.lower() for w in _WORD.findall(run)]
        for left, right in itertools.pairwise(found):
            if left not in STOPWORDS and right not in STOPWORDS:
                pairs.append((left, right))
    return list(dict.fromkeys(pairs))


def query_terms(query: str) -> list[tuple[str, ...]]:
    """The distinct terms of a query, stopwords dropped; a CJK run is one phrase of its pairs.

    Each item is a phrase: one word, or the consecutive character pairs of a
    CJK run (which match exactly where the run occurs in the text). When
    every word is a stopword they are kept, so a query never becomes empty
    just for being made of common words.
    """
    phrases: list[tuple[str, ...]] = []
    dropped: list[tuple[str, ...]] = []
    for cjk, run in split_runs(query):
        if cjk:
            phrases.append(tuple(cjk_grams(run)))
            continue
        for word in _WORD.findall(run):
            word = word.lower()
            (dropped if word in STOPWORDS else phrases).append((word,))
    chosen = phrases or dropped
    return list(dict.fromkeys(chosen))
