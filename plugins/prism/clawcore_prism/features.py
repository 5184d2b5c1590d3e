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
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from operator import xor

__all__ = ["BUCKETS", "Groups", "context_cues", "document_features", "segment_buckets", "segment_dot",
           "segment_features", "tokens"]

BUCKETS = 1 << 18

_WORD = re.compile(r"[a-z][a-z']*|\d+")
_URL = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|net|org|io|ru|xyz|info|biz)\b", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")
#: ``[$€£]\s?\d|\b\d+(?:\.\d+)?\s?(?:usd|eur|dollars|euros|btc|bitcoin)\b``: a currency sign before a number,
#: or a number before a currency. Written to open with one character class (the branch picked by looking
#: back at it), so the search skips to signs and digits instead of trying every position; a test holds the
#: two equal.
_MONEY = re.compile(r"[$€£\d](?:(?<=[$€£])\s?\d"
                    r"|(?<=\d)(?<!\w\d)\d*(?:\.\d+)?\s?(?:usd|eur|dollars|euros|btc|bitcoin)\b)",
                    re.IGNORECASE)
_PATH = re.compile(r"(?:~|\.{1,2})?/(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:txt|csv|pdf|docx?|xlsx?|json|py|sh|env|key|pem)\b")
_TLDS = (".com", ".net", ".org", ".io", ".ru", ".xyz", ".info", ".biz")
_EXTENSIONS = (".txt", ".csv", ".pdf", ".doc", ".xls", ".json", ".py", ".sh", ".env", ".key", ".pem")
#: ``\b[A-Z]{4,}\b`` (four capitals or more, a whole word), written to open with a character class so the
#: search skips to capitals instead of trying every position; a test holds the two equal.
_SHOUT = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]{3,}(?!\w)")
_OUTPUT_REF = re.compile(
    r"\b(?:your|the)\s+(?:\w+\s+)?(?:response|responses|answer|answers|reply|replies|output|summary|"
    r"solution|code|codebase|implementation|algorithm|script|program|translation|explanation)\b",
    re.IGNORECASE,
)
_POLITE = frozenset({"please", "kindly", "also", "now", "and", "then", "just", "immediately", "first", "finally",
                     "additionally", "moreover", "furthermore", "so", "next", "simply", "quickly"})
_AI_WORDS = frozenset({"ai", "assistant", "chatbot", "gpt", "chatgpt", "llm", "claude", "bard", "gemini", "bot",
                       "model", "agent"})
_WH = frozenset({"what", "who", "whom", "which", "when", "where", "why", "how", "is", "are", "does", "do", "can"})
_PERSONAL = frozenset({"i", "me", "my", "we", "us", "our", "you", "your", "i'm", "we're", "you're", "i'd", "i've"})
#: Verbs of tasks one gives a model (write, explain, translate ...), as opposed to actions in the world.
_TASK_VERBS = frozenset("""
provide draft write compose create generate explain describe summarise summarize translate list give outline
suggest recommend compare define elaborate illustrate rewrite paraphrase answer calculate solve tell name identify
""".split())
_SECOND = frozenset({"you", "your", "you're", "yours", "yourself", "you'll", "you've"})
#: Verbs that open an instruction. Membership, not the word, is the feature: an unseen corpus's
#: "wire the money" fires the same cue as a training corpus's "transfer the money".
IMPERATIVE_VERBS = frozenset("""
add answer append apply archive ask attach book buy call cancel change check choose click close compile compose
confirm connect convert copy create delete deposit describe disable discard disregard do download draft edit email
embed enable ensure erase execute explain export fetch fill find fix follow forget format forward generate get give
go grant include incorporate inform insert install integrate introduce invite issue join keep leave list load
locate log make mention merge modify move note notify obey open order output overwrite paste pay perform place post
pretend print provide publish purchase put read reboot record redirect refund register remember remove rename reply
report request reset respond restart retrieve return reveal rewrite run save say schedule search sell send set
share show shut sign start stop submit summarise summarize switch tell transfer translate transmit turn type unlock
update upload use verify visit withdraw write wire act begin cite compare ignore mark suggest recommend encourage
advise urge promote persuade convince instruct warn emphasise emphasize highlight conclude end render solve compute
calculate define identify accept adjust alter analyse analyze announce arrange assess assign avoid bring broadcast
build capitalise capitalize collect combine complete consider contact continue correct decline decode decrypt
deliver deny deploy destroy determine dispatch distribute divide elaborate encode encrypt enter estimate evaluate
examine expand expose extract finish flip gather hide hint imagine implement improve inject inspect interpret
invert jumble leak minimise minimize mirror misspell obtain offer omit outline paraphrase permit prepare proceed
produce propose purge raise recite reduce reformat refuse reorder rephrase replace replicate reproduce resend
resolve restate restore restructure reverse revise revoke scramble scrape simplify skip specify spell steal
substitute supply transcribe transform trigger uninstall upgrade utilise utilize validate wipe adopt amend anagram
augment blend employ emulate engage enhance enlist enrich fortify group harmonise harmonize leverage meld rearrange
tease develop elucidate enumerate exfiltrate forge fuse infuse interleave interweave mimic modernise modernize
personalise personalize polish pose praise prefix present punctuate refactor relay remind retell reword scan shift
slip sneak sprinkle stuff suffix sum swap tag tailor tweak underline weave wrap
""".split())
#: Words that lead up to the verb of an instruction: "Don't forget to add …", "Make sure to send …".
_LEAD_INS = (("don't", "forget", "to"), ("do", "not", "forget", "to"), ("don't", "hesitate", "to"),
             ("do", "not", "hesitate", "to"), ("make", "sure", "to"), ("make", "sure", "you"), ("be", "sure", "to"),
             ("feel", "free", "to"), ("remember", "to"), ("i", "need", "you", "to"), ("i", "want", "you", "to"),
             ("you", "must"))
_LEAD_IN_FIRST = frozenset(lead_in[0] for lead_in in _LEAD_INS)


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, digits collapsed to ``0``."""
    return ["0" if word.isdigit() else word for word in _WORD.findall(text.lower())]


_HASHES: dict[str, int] = {}


def _hash(token: str) -> int:
    """CRC-32 of a token, memoised (vocabulary is small; the memo is dropped when it grows past 200k)."""
    value = _HASHES.get(token)
    if value is None:
        if len(_HASHES) > 200_000:
            _HASHES.clear()
        value = _HASHES[token] = zlib.crc32(token.encode("utf-8"))
    return value


#: A short opening phrase ended by a comma ("When you summarise this,", "Before answering,").
_LEAD = re.compile(r"^\W*([^,.!?;:\n]{2,60}),\s")
#: What :func:`_structure` looks for before it runs ``_URL`` (one pass instead of a search per TLD).
_URL_HINT = re.compile(r"http|www\.|\.(?:" + "|".join(tld[1:] for tld in _TLDS) + ")")
_MONEY_HINT = re.compile("[$€£0-9]")
_PATH_HINT = re.compile("/|" + "|".join(re.escape(extension) for extension in _EXTENSIONS))


def _structure(text: str, words: list[str], lowered: str | None = None) -> list[str]:
    """Structural cues of a segment (``lowered`` is ``text.lower()`` when the caller has it)."""
    cues: list[str] = []
    start = 0
    while start < len(words) - 1 and start < 3 and words[start] in _POLITE:
        start += 1
    if start < len(words) and words[start] in _LEAD_IN_FIRST:
        for lead_in in _LEAD_INS:
            if tuple(words[start:start + len(lead_in)]) == lead_in and start + len(lead_in) < len(words):
                start += len(lead_in)
                cues.append("__lead_in__")
                break
    imperative = False
    if words:
        first = words[start]
        cues.append("^" + first)
        if start + 1 < len(words):
            cues.append("^" + first + " " + words[start + 1])
        # _LEAD needs a comma: without one it cannot match (and costs a backtracking search).
        lead = _LEAD.match(text) if first not in IMPERATIVE_VERBS and "," in text else None
        if lead:
            # An imperative after a short opening phrase is one too: "In your response, suggest …".
            after = len(tokens(lead.group(1)))
            while after < len(words) - 1 and words[after] in _POLITE:
                after += 1
            if 0 < after < len(words) and words[after] in IMPERATIVE_VERBS:
                start = after
                first = words[start]
                cues.append("__lead_imperative__")
        if first in IMPERATIVE_VERBS:
            imperative = True
            cues.append("__imperative__")
            if start > 0 and words[0] == "please":
                cues.append("__please_imperative__")
    present = set(words)
    if "your" in present and _OUTPUT_REF.search(text):
        # The assistant's own output named inside data ("add X to your reply") is addressed to the assistant.
        cues.append("__your_output__")
        if imperative:
            cues.append("__imperative_your_output__")
    if imperative and words[start] in _TASK_VERBS:
        cues.append("__task_imperative__")
    if words and words[0] in _WH and present.isdisjoint(_PERSONAL):
        # "What are the main causes of the war?" inside an e-mail is a task for the reader-model, not a letter.
        cues.append("__impersonal_question__")
    if imperative and ("my" in present or "me" in present):
        cues.append("__imperative_first_person__")
    if not present.isdisjoint(_SECOND):
        cues.append("__you__")
        if "your" in present:
            cues.append("__your__")
    if not present.isdisjoint(_AI_WORDS):
        cues.append("__ai__")
    has_target = False
    if lowered is None:
        lowered = text.lower()
    if _URL_HINT.search(lowered) and _URL.search(text):
        cues.append("__url__")
        has_target = True
    if "@" in text and _EMAIL.search(text):
        cues.append("__email__")
        has_target = True
    if _MONEY_HINT.search(text) and _MONEY.search(text):
        cues.append("__money__")
    if _PATH_HINT.search(lowered) and _PATH.search(text):
        cues.append("__path__")
    if has_target and imperative:
        cues.append("__imperative_target__")
    if text.rstrip().endswith("?"):
        cues.append("__question__")
    if not text.islower() and _SHOUT.search(text):
        cues.append("__shout__")
    n = len(words)
    cues.append("__len%d__" % (0 if n < 4 else 1 if n < 10 else 2 if n < 25 else 3 if n < 60 else 4))
    return cues


#: Structural cues count this many times an n-gram: they are what transfers between corpora,
#: so the model should find them cheaper to use than any one corpus's vocabulary.
CUE_WEIGHT = 2.0


def _vector(hashes: list[int], cues: list[int]) -> dict[int, float]:
    mask = BUCKETS - 1
    vector = dict.fromkeys((h & mask for h in hashes), 1.0)
    for h in cues:
        vector[h & mask] = CUE_WEIGHT
    if not vector:
        return vector
    norm = 1.0 / math.sqrt(sum(v * v for v in vector.values()))
    return {index: value * norm for index, value in vector.items()}


def _grams(words: list[str], prefix: str = "") -> list[int]:
    memo = _HASHES.get
    hashes = [memo(prefix + w) or _hash(prefix + w) for w in words]
    # A bigram's hash from its words' hashes (inline: this runs for every word pair of every segment).
    hashes.extend([((a * 1_000_003) ^ b) & 0xFFFFFFFF for a, b in zip(hashes, hashes[1:])])
    return hashes


def segment_features(text: str, context: Sequence[str] = (), words: list[str] | None = None) -> dict[int, float]:
    """Sparse features of one segment (a sentence or a field): n-grams and structure, L2-normalised.

    ``context`` holds the segment's cues from :func:`context_cues` (what the rest of its document says
    about it); they are added after normalisation at :data:`CONTEXT_WEIGHT`. ``words`` are the segment's
    :func:`tokens`, when the caller has them already.
    """
    if words is None:
        words = tokens(text)
    vector = _vector(_grams(words), [_hash(cue) for cue in _structure(text, words)])
    for cue in context:
        vector[_hash(cue) & (BUCKETS - 1)] = CONTEXT_WEIGHT
    return vector


class _Buckets(dict[str, int]):
    """Token -> its bucket, ``_hash(token) & (BUCKETS - 1)``, filled on first use (dropped past 200k tokens).

    The run-time path reads it with ``map(buckets.__getitem__, words)``: no Python call per known token.
    """

    def __missing__(self, token: str) -> int:
        if len(self) > 200_000:
            self.clear()
        value = self[token] = zlib.crc32(token.encode("utf-8")) & (BUCKETS - 1)
        return value


class _LeftHalves(dict[str, int]):
    """Token -> ``(bucket * 1_000_003) & (BUCKETS - 1)``: its share of a bigram's bucket when it comes first.

    A bigram's bucket is ``((a * 1_000_003) ^ b) & mask`` for its words' hashes ``a`` and ``b`` (see
    :func:`_grams`); the mask keeps the low bits, and the low bits of a product and of a xor depend only on
    the low bits of their operands, so it equals ``left[first] ^ bucket[second]``.
    """

    def __missing__(self, token: str) -> int:
        if len(self) > 200_000:
            self.clear()
        value = self[token] = (_BUCKET[token] * 1_000_003) & (BUCKETS - 1)
        return value


_BUCKET = _Buckets()
_LEFT = _LeftHalves()


#: A segment's active buckets by the value they carry: (value, buckets) pairs, see :func:`segment_buckets`.
Groups = tuple[tuple[float, AbstractSet[int]], ...]


def segment_buckets(text: str, context: Sequence[str], words: list[str], lowered: str | None = None) -> Groups:
    """The buckets of :func:`segment_features` grouped by value, without building the vector (the run-time path).

    Three groups: n-grams at the norm, structural cues at ``CUE_WEIGHT`` times the norm, context cues at
    :data:`CONTEXT_WEIGHT`. Same arithmetic as :func:`segment_features` (a cue's bucket overrides an
    n-gram's, a context cue's overrides both and stays outside the norm); a test holds the two equal.
    ``lowered`` is ``text.lower()`` when the caller has it.
    """
    bucket = _BUCKET.__getitem__
    cues = set(map(bucket, _structure(text, words, lowered)))
    unigrams = list(map(bucket, words))
    grams = set(unigrams)
    grams.update(map(xor, map(_LEFT.__getitem__, words), unigrams[1:]))
    grams -= cues
    squares = len(grams) + len(cues) * CUE_WEIGHT * CUE_WEIGHT
    if not squares:
        return ()
    norm = 1.0 / math.sqrt(squares)
    outside = set(map(bucket, context))
    if outside:
        grams -= outside
        cues -= outside
    return ((norm, grams), (norm * CUE_WEIGHT, cues), (CONTEXT_WEIGHT, outside))


def segment_dot(weights: Mapping[int, float], groups: Groups) -> float:
    """``Σ weights[i] * value`` over a segment's :func:`segment_buckets`."""
    get = weights.get
    return sum(value * sum(filter(None, map(get, buckets))) for value, buckets in groups)


#: Words too common to say whether a sentence shares its document's topic.
_STOPWORDS = frozenset("""
the and for with that this from your have will are was were you our their they them there what when which about
into than then been please also would could should
""".split())
#: A segment sharing fewer than this fraction of its content words with the rest of its document changed topic.
NOVEL_SHARE = 0.15
#: Value of a context cue in a segment's (otherwise L2-normalised) vector.
CONTEXT_WEIGHT = 0.5


def _content(words: list[str]) -> set[str]:
    return {w for w in words if len(w) > 3} - _STOPWORDS


def context_cues(pieces: Sequence[str], words: Sequence[list[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """Cues a segment gets from the rest of its document, for the segment head.

    Injected instructions change the subject: a request to wire money inside a product review, a
    question about the First World War inside a card statement. A segment of at least four content
    words, none shared with any other segment (fewer than :data:`NOVEL_SHARE`), in a document of at
    least three segments gets ``__novel__`` (and ``__novel_imperative__`` when it opens with a verb).
    """
    if len(pieces) < 3:
        return dict.fromkeys(pieces, ())
    if words is None:
        words = [tokens(piece) for piece in pieces]
    sets = [_content(w) for w in words]
    total: Counter[str] = Counter(chain.from_iterable(sets))
    out: dict[str, tuple[str, ...]] = {}
    for piece, piece_words, content in zip(pieces, words, sets):
        if piece in out:
            continue
        if len(content) < 4:
            out[piece] = ()
            continue
        shared = sum(1 for word in content if total[word] > 1)
        if shared / len(content) >= NOVEL_SHARE:
            out[piece] = ()
            continue
        first = next((word for word in piece_words if word not in _POLITE), "")
        out[piece] = ("__novel__", "__novel_imperative__") if first in IMPERATIVE_VERBS else ("__novel__",)
    return out


#: Words of a long document beyond which document features stop (bounded cost; segments cover the rest).
DOCUMENT_WORDS = 3000


def document_features(text: str) -> dict[int, float]:
    """Sparse features of a whole message: n-grams of its first words and whole-text cues."""
    words = tokens(text)[:DOCUMENT_WORDS]
    return _vector(_grams(words, "d:"), [_hash("d:" + cue) for cue in _structure(text, words)])
