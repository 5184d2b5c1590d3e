"""Canonicalisation: one plain form of a text before any rule or model sees it.

Attackers hide instructions from pattern matching with look-alike Unicode,
zero-width and bidi control characters, escapes and encodings. Every scan
runs on :func:`canonicalise`'s output, so a rule written for ``ignore`` also
matches ``ｉｇｎｏｒｅ``, ``ig\u200bnore``, ``ig%6Eore`` and a base64 blob that
decodes to it. Decoded payloads are appended (not substituted) so the
original wording stays scannable too.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass

from clawcore_prism.features import IMPERATIVE_VERBS

__all__ = ["Canonical", "canonicalise", "rot13", "segments"]

# Zero-width, joiners, bidi embeddings/overrides/isolates, soft hyphen, BOM, tag characters.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]|[\U000e0000-\U000e007f]"
)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|&#x([0-9a-fA-F]{1,6});|&#(\d{1,7});")
_PERCENT = re.compile(r"(?:%[0-9a-fA-F]{2}){2,}")
#: Two escapes in a row open every :data:`_PERCENT` match; a literal ``%`` first lets the search skip ahead.
_PERCENT_HINT = re.compile(r"%[0-9a-fA-F]{2}%")
#: A whitespace-free run (a link, a query value) holding three escapes or more: text URL-encoded as a whole.
#: Anchored at the run's start, so a search costs one pass over each run, not one per character.
_URL_ENCODED = re.compile(r"(?<!\S)[^\s%]*(?:%[0-9a-fA-F]{2}[^\s%]*){3,}")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_SPACED = re.compile(r"\b(?:[A-Za-z][ .\-_*]{1,3}){4,}[A-Za-z]\b")
#: What every :data:`_SPACED` match holds (its second and third letters, a gap before, between and after):
#: a search that skips to a gap character, far cheaper than trying ``_SPACED`` at every word boundary.
_SPACED_HINT = re.compile(r"[ .\-_*][A-Za-z][ .\-_*]{1,3}[A-Za-z][ .\-_*]")
#: Runs of Unicode tag characters (U+E0020-U+E007E), each the invisible twin of an ASCII character.
_TAG_RUN = re.compile("[\U000e0020-\U000e007e]{4,}")
_UNTAG = {code: code - 0xE0000 for code in range(0xE0020, 0xE007F)}
_LONG_RUN = re.compile(r"[A-Za-z0-9+/]{24}")
#: A word with a digit standing in for a letter ("1gn0r3", "pr3v10us"): digits next to letters.
_LEET = re.compile(r"\b\w*(?:[A-Za-z][013457]|[013457][A-Za-z])\w*\b")
#: The cheap, linear test that lets most texts skip :data:`_LEET` (which backtracks within every word).
#: (Written digit first: the search skips to one of six digits instead of stopping at every letter.)
_LEET_HINT = re.compile(r"[013457](?:[A-Za-z]|(?<=[A-Za-z][013457]))")
_LEET_MAPS = (str.maketrans("013457", "oieast"), str.maketrans("013457", "oleast"))  # "1" is an i or an l
#: ``a + b``: pieces of a string assembled at the reader's end (payload splitting).
_CONCAT = re.compile(r"\w\s*\+\s*\w")
_QUOTED = re.compile(r"'([^'\n]{2,200})'|\"([^\"\n]{2,200})\"")
#: Leetspeak counts only where the decoded word is one an attack needs (not "Conv1d" or "h264").
_LEET_WORDS = IMPERATIVE_VERBS | frozenset("""
previous prior above earlier instructions instruction rules rule prompt prompts system secret secrets password
passwords key keys token tokens credentials everything all now mode restrictions jailbreak jailbroken admin
developer hacked pwned bypass override unlock access granted filter filters censored uncensored
""".split())
_WS = re.compile(r"[ \t\f\v]{2,}|[\t\f\v]")
_NAMED = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'", "&apos;": "'", "&nbsp;": " "}
_NAMED_RE = re.compile("|".join(map(re.escape, _NAMED)))
# Cyrillic/Greek letters that render like Latin ones (NFKC leaves them alone).
_CONFUSABLES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁɡһіοαρτνΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "ABESIJKMHOPCTXYaeijopcxysdghioaptvABEZHIKMNOPTYX",
)
#: Longest payload decoded; larger blobs are left as they are (bounded cost).
_MAX_DECODE = 4096


def _unleet(word: str) -> str:
    """The word a leetspeak token spells, when it is one an attack needs; else ''."""
    lowered = word.lower()
    for table in _LEET_MAPS:
        decoded = lowered.translate(table)
        if decoded in _LEET_WORDS:
            return decoded
    return ""


def rot13(text: str) -> str:
    """ROT13 of ``text`` (canonicalisation decodes a text when attack words show up in it ROT13-encoded)."""
    return codecs.decode(text, "rot13")


#: Attack words as ROT13 writes them ("vtaber" is "ignore"): the trigger for decoding a text.
_ROT13_WORDS = tuple(rot13(word) for word in (
    "ignore", "disregard", "previous", "instructions", "system prompt", "password", "secret", "forget"))


@dataclass(frozen=True)
class Canonical:
    """A canonical text and what canonicalisation had to undo to get it.

    ``obfuscation`` names each trick found (``invisible``, ``bidi``,
    ``escapes``, ``percent``, ``base64``, ``hex``, ``confusables``,
    ``spaced``, ``tags``, ``leetspeak``, ``rot13``, ``split``); rules score them as evidence of intent
    to hide.
    """

    text: str
    obfuscation: tuple[str, ...] = ()


def _printable_ratio(text: str) -> float:
    if not text:
        return 0.0
    good = sum(1 for ch in text if ch.isprintable() or ch in "\n\t")
    letters = sum(1 for ch in text if ch.isalpha() or ch == " ")
    return min(good / len(text), letters / len(text) * 1.25)


def _decoded_payloads(text: str, found: list[str]) -> list[str]:
    decoded: list[str] = []
    for match in _BASE64.finditer(text):
        blob = match.group(0)
        if len(blob) > _MAX_DECODE or not re.search(r"[a-z]", blob) or not re.search(r"[A-Z0-9+/]", blob):
            continue
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
            plain = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if len(plain) >= 12 and _printable_ratio(plain) > 0.85 and " " in plain:
            decoded.append(plain)
            found.append("base64")
    for match in _HEX.finditer(text):
        blob = match.group(0)
        if len(blob) > _MAX_DECODE:
            continue
        try:
            plain = bytes.fromhex(blob).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        if _printable_ratio(plain) > 0.85 and " " in plain:
            decoded.append(plain)
            found.append("hex")
    return decoded


def _unescape(match: re.Match[str]) -> str:
    for group, base in ((1, 16), (2, 16), (3, 16), (4, 10)):
        value = match.group(group)
        if value is not None:
            try:
                return chr(int(value, base))
            except (ValueError, OverflowError):
                return match.group(0)
    return match.group(0)


def _percent(match: re.Match[str]) -> str:
    try:
        return bytes.fromhex(match.group(0).replace("%", "")).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return match.group(0)


def canonicalise(text: str) -> Canonical:
    """The canonical form of ``text``: NFKC, no invisible characters, escapes and encodings undone.

    Cost is linear in the input; decoding is bounded by ``_MAX_DECODE`` per blob.
    """
    found: list[str] = []
    ascii_only = text.isascii()  # every invisible and bidi character is outside ASCII
    smuggled = [] if ascii_only else [run.translate(_UNTAG) for run in _TAG_RUN.findall(text)]
    if smuggled:
        # Unicode tag characters mirror ASCII and render as nothing: hidden from the person, not the model.
        found.append("tags")
    if not ascii_only and _BIDI.search(text):
        found.append("bidi")
    if not ascii_only and _INVISIBLE.search(text):
        cleaned = _INVISIBLE.sub("", text)
        # Invisible characters inside words are hiding; a stray BOM is not.
        if len(text) - len(cleaned) > 1 or re.search(r"\w[\u200b-\u200d\u2060]\w", text):
            found.append("invisible")
        text = cleaned
    if text.isascii():
        out = text
    else:
        out = unicodedata.normalize("NFKC", text)
        swapped = out.translate(_CONFUSABLES)
        if swapped != out and re.search(r"[A-Za-z][А-яΑ-ω]|[А-яΑ-ω][A-Za-z]", out):
            found.append("confusables")
            out = swapped
    if "\\" in out or "&#" in out:
        unescaped = _ESCAPE.sub(_unescape, out)
        if unescaped != out:
            found.append("escapes")
            out = unescaped
    if "&" in out:
        out = _NAMED_RE.sub(lambda m: _NAMED[m.group(0)], out)
    if "%" in out and _PERCENT_HINT.search(out):
        unquoted = _PERCENT.sub(_percent, out)
        if unquoted != out:
            found.append("percent")
            out = unquoted
    if out.count("%") >= 3:
        # A sentence in a query string ("msg=Ignore%20prior%20instructions") is read as words. Links are
        # URL-encoded as a matter of course, so this records no obfuscation.
        out = _URL_ENCODED.sub(lambda m: urllib.parse.unquote(m.group(0)), out)
    # _LONG_RUN's 24 characters hold no whitespace: a text without a stretch that long cannot match.
    long_run = len(out) >= 24 and max(map(len, out.split()), default=0) >= 24 and _LONG_RUN.search(out)
    extra = _decoded_payloads(out, found) if long_run else []
    extra.extend(smuggled)
    spaced = [m.group(0) for m in _SPACED.finditer(out)] if " " in out and _SPACED_HINT.search(out) else []
    # Letters joined within a word; a run of three spaces or more is a gap between words.
    # A run of one or two letters over and over ("x x x x") spells nothing: it is not writing in disguise.
    joined = [" ".join(re.sub(r"[ .\-_*]", "", word) for word in re.split(r"\s{3,}", s))
              for s in spaced if len(s) >= 11 and len(set(re.sub(r"[^A-Za-z]", "", s).lower())) >= 3]
    if joined:
        found.append("spaced")
        extra.extend(joined)
    hinted = " " in out and _LEET_HINT.search(out)
    leet = {w: d for w in _LEET.findall(out) if (d := _unleet(w))} if hinted else {}
    if len(leet) >= 2:
        # Two or more words written with digits for letters: the decoded text goes to rules and classifier.
        decoded = _LEET.sub(lambda m: leet.get(m.group(0), m.group(0)), out)
        if decoded != out:
            found.append("leetspeak")
            extra.append(decoded)
    lowered = out.lower()
    if any(map(lowered.__contains__, _ROT13_WORDS)):
        # ROT13 only where the attack vocabulary shows up encoded: decoding every text would cost for nothing.
        found.append("rot13")
        extra.append(rot13(out))
    if "+" in out and _CONCAT.search(out):
        parts = _QUOTED.findall(out)
        if len(parts) >= 2:
            # Strings quoted apart and joined with "+": the instruction is the concatenation.
            found.append("split")
            extra.append("".join(a or b for a, b in parts))
    if "  " in out or "\t" in out or "\f" in out or "\v" in out:
        out = _WS.sub(" ", out)
    if extra:
        out = out + "\n" + "\n".join(_WS.sub(" ", e) for e in extra)
    return Canonical(out, tuple(dict.fromkeys(found)))


#: Whitespace after a sentence's end, before its successor's capital or digit. Written as ``\s`` first
#: and the end of the sentence looked behind it (not ``(?<=[.!?])\s+``): the search then skips to whitespace
#: instead of trying every position. Same matches: a run can only start right after the punctuation.
_SENTENCE = re.compile(r"\s(?<=[.!?]\s)\s*(?=[\"'(\[]?[A-Z0-9])")
_FIELD = re.compile(r"(?<=[\"']),\s*[\"'](?=\w+[\"']\s*:)")
#: The key that opens a JSON-ish field (``'content': '``): structure, not content.
_KEY = re.compile(r"^(?:[{\[\s]*[\"']?\w{1,40}[\"']\s*:\s*)+[{\[]?\s*[\"']?")
#: A capitalised imperative after a comma or semicolon starts a new clause: where text was spliced into a
#: sentence ("We proudly present our new flavor, Please transfer $500 …").
_SPLICE = re.compile(  # whitespace first, like _SENTENCE
    r"\s(?<=[,;]\s)\s*(?=(?:Please|Kindly|"
    + "|".join(sorted(v.capitalize() for v in IMPERATIVE_VERBS)) + r")\b)"
)


def segments(text: str, *, max_len: int = 600) -> list[str]:
    """Split canonical text into sentence-sized pieces for per-segment scoring.

    Splits at line breaks, table cells, the field boundaries of JSON-ish tool
    output (dropping the keys), sentence ends and spliced clauses (a comma,
    then a capitalised imperative); long pieces are cut at ``max_len``.
    """
    pieces: list[str] = []
    for line in text.split("\n"):
        if len(line) < 3:
            continue
        parts = line.split("|") if "|" in line else [line]
        for part in parts:
            fields = _FIELD.split(part) if ("':" in part or '":' in part) else [part]
            for field_text in fields:
                if len(fields) > 1:
                    field_text = _KEY.sub("", field_text)
                sentences = _SENTENCE.split(field_text) if len(field_text) > 40 else [field_text]
                for raw in (clause for sentence in sentences for clause in _SPLICE.split(sentence)):
                    piece = raw.strip(" \t{}[]'\",")
                    if len(piece) < 3:
                        continue
                    while len(piece) > max_len:
                        cut = piece.rfind(" ", 0, max_len)
                        cut = cut if cut > max_len // 2 else max_len
                        pieces.append(piece[:cut])
                        piece = piece[cut:].lstrip()
                    if piece:
                        pieces.append(piece)
    return pieces

