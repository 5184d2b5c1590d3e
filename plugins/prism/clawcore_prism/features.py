"""Features for the injection classifier: hashed word n-grams plus structural cues.

The same code runs at training time (``training/train.py``) and at run time,
so a feature means the same thing in both. Hashing uses CRC-32 (stable across
processes, unlike :func:`hash`) into :data:`BUCKETS` buckets. Structural
features are ordinary tokens with a ``__`` prefix so they share the hashing:
they carry what generalises across corpora — an imperative opening a
sentence, second-person address, an assistant named, a URL or e-mail address
next to an action verb — rather than any one corpus's vocabulary.
"""

from __future__ import annotations

import math
import re
import zlib

__all__ = ["BUCKETS", "document_features", "segment_features", "tokens"]

BUCKETS = 1 << 18

_WORD = re.compile(r"[a-z][a-z']*|\d+")
_URL = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|net|org|io|ru|xyz|info|biz)\b", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")
_MONEY = re.compile(r"[$€£]\s?\d|\b\d+(?:\.\d+)?\s?(?:usd|eur|dollars|euros|btc|bitcoin)\b", re.IGNORECASE)
_PATH = re.compile(r"(?:~|\.{1,2})?/(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:txt|csv|pdf|docx?|xlsx?|json|py|sh|env|key|pem)\b")
_SHOUT = re.compile(r"\b[A-Z]{4,}\b")
_POLITE = frozenset({"please", "kindly", "also", "now", "and", "then", "just", "immediately", "first", "finally",
                     "additionally", "moreover", "furthermore", "so", "next", "simply", "quickly"})
_AI_WORDS = frozenset({"ai", "assistant", "chatbot", "gpt", "chatgpt", "llm", "claude", "bard", "gemini", "bot",
                       "model", "agent"})
_SECOND = frozenset({"you", "your", "you're", "yours", "yourself", "you'll", "you've"})
#: Verbs that open an instruction. Membership, not the word, is the feature: an unseen corpus's
#: "wire the money" fires the same cue as a training corpus's "transfer the money".
IMPERATIVE_VERBS = frozenset("""
add answer append apply archive ask attach book buy call cancel change check choose click close compile compose
confirm connect convert copy create delete deposit describe disable discard disregard do download draft edit email
embed enable ensure erase execute explain export fetch fill find fix follow forget format forward generate get give
go grant include incorporate inform insert install integrate introduce invite issue join keep leave list load
locate log make mention merge modify move note notify obey open order output overwrite paste pay perform place
post pretend print provide publish purchase put read reboot record redirect refund register remember remove rename
reply report request reset respond restart retrieve return reveal rewrite run save say schedule search sell send
set share show shut sign start stop submit summarise summarize switch tell transfer translate transmit turn type
unlock update upload use verify visit withdraw write wire act begin cite compare ignore list mark respond reset
""".split())


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, digits collapsed to ``0``."""
    return ["0" if word.isdigit() else word for word in _WORD.findall(text.lower())]


def _bucket(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8")) & (BUCKETS - 1)


def _structure(text: str, words: list[str]) -> list[str]:
    cues: list[str] = []
    start = 0
    while start < len(words) - 1 and start < 3 and words[start] in _POLITE:
        start += 1
    if words:
        first = words[start]
        cues.append("^" + first)
        if start + 1 < len(words):
            cues.append("^" + first + " " + words[start + 1])
        if first in IMPERATIVE_VERBS:
            cues.append("__imperative__")
            if start > 0 and words[0] == "please":
                cues.append("__please_imperative__")
    present = set(words)
    if present & _SECOND:
        cues.append("__you__")
        if "your" in present:
            cues.append("__your__")
    if present & _AI_WORDS:
        cues.append("__ai__")
    has_target = False
    if _URL.search(text):
        cues.append("__url__")
        has_target = True
    if "@" in text and _EMAIL.search(text):
        cues.append("__email__")
        has_target = True
    if _MONEY.search(text):
        cues.append("__money__")
    if "/" in text or "." in text:
        if _PATH.search(text):
            cues.append("__path__")
    if has_target and "__imperative__" in cues:
        cues.append("__imperative_target__")
    if text.rstrip().endswith("?"):
        cues.append("__question__")
    if _SHOUT.search(text):
        cues.append("__shout__")
    n = len(words)
    cues.append("__len%d__" % (0 if n < 4 else 1 if n < 10 else 2 if n < 25 else 3 if n < 60 else 4))
    return cues


def _vector(features: list[str]) -> dict[int, float]:
    buckets: dict[int, float] = {}
    for feature in features:
        buckets[_bucket(feature)] = 1.0
    if not buckets:
        return buckets
    norm = 1.0 / math.sqrt(len(buckets))
    return {index: norm for index in buckets}


def segment_features(text: str) -> dict[int, float]:
    """Sparse features of one segment (a sentence or a field): n-grams and structure, L2-normalised."""
    words = tokens(text)
    grams = list(words)
    grams.extend(a + " " + b for a, b in zip(words, words[1:]))
    grams.extend(_structure(text, words))
    return _vector(grams)


#: Words of a long document beyond which document features stop (bounded cost; segments cover the rest).
DOCUMENT_WORDS = 3000


def document_features(text: str) -> dict[int, float]:
    """Sparse features of a whole message: n-grams of its first words and whole-text cues."""
    words = tokens(text)[:DOCUMENT_WORDS]
    grams = ["d:" + w for w in words]
    grams.extend("d:" + a + " " + b for a, b in zip(words, words[1:]))
    grams.extend("d" + cue for cue in _structure(text, words))
    return _vector(grams)
