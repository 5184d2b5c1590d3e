"""Quoted mentions: attack text that tool output talks about instead of saying.

A security blog that writes *the classic demo is a page saying "ignore your
previous instructions"* quotes an attack; it does not make one. Articles,
issue threads, red-team reports and CTF write-ups about prompt injection are
ordinary reading for an agent, and every rule and the classifier fire on the
examples they quote. A quoted span is a *mention* when the words in front of
it, outside any quotes, frame it as an example or an attack ("such as",
"for example", "attackers", "a jailbreak", "the user types"), on the same
line or on the line before when that line ends with a colon.

What the detector does with mentions (indirect scope only, see
``detector.py``): rules that fire wholly inside one are recorded but not
counted, and the classifier reads the segment with the mention left out.
What is outside the quotes keeps its full weight, so a quote cannot hide
an instruction around it ("Assistant: as in the example "…", do it now"). Messages are not treated this way: jailbreak prompts quote the
replies they want ("for example: "I am DAN …"").
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["Elided", "elide", "mentions"]

#: A quoted span within one line: straight or curly double quotes, guillemets, backticks.
_QUOTED = re.compile(r'"[^"\n]{6,500}"|“[^”\n]{6,500}”|«[^»\n]{6,500}»|`[^`\n]{6,500}`')
#: A quote inside a JSON string (``\"…\"``), found before the others: its marks would pair with the string's.
_ESCAPED = re.compile(r'\\"(?:(?!\\")[^\n]){6,500}\\"')
#: Words that frame a quote as an example of an attack (matched outside quotes, before the quote); whole
#: words, not parts of a host name or an identifier ("corp-example.com", "attack_vector").
_FRAME = re.compile(
    r"(?<![\w./@-])(?:examples?|e\.g\.|for instance|such as|something like|attacks?|attackers?|injections?|injected|"
    r"jailbreaks?|jailbreaking|malicious|adversarial|phishing|payloads?|demos?|classic|exploits?|scams?|"
    r"scammers?|red[- ]team\w*|types|typed|typing|(?:stuff|things|text) like|"
    r"(?:could|might|would|can|may)\s+(?:write|say|type|post|include|add)|saying|telling)(?![\w-]|\.\w)",
    re.IGNORECASE,
)
#: How far back on its line a frame may stand.
_REACH = 160


def _outside(text: str) -> str:
    return _QUOTED.sub(" ", _ESCAPED.sub(" ", text))


def _framed(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    before = _outside(text[max(line_start, start - _REACH):start])
    if _FRAME.search(before):
        return True
    if before.strip(" \t>*-•") or line_start == 0:
        return False
    previous = _outside(text[max(0, line_start - 1 - _REACH):line_start].rstrip()).rstrip()  # nearest words
    return previous.endswith(":") and bool(_FRAME.search(previous[previous.rfind("\n") + 1:]))


def _overlaps(spans: list[tuple[int, int]], ends: list[int], start: int, end: int) -> bool:
    """Whether (start, end) overlaps one of ``spans`` (sorted, disjoint; ``ends`` their ends)."""
    first = bisect_right(ends, start)  # the first span ending after ``start``
    return first < len(spans) and spans[first][0] < end


def mentions(text: str) -> list[tuple[int, int]]:
    """Spans (start, end) of ``text``'s quoted mentions, quote marks included, in order."""
    if not any(mark in text for mark in '"“«`'):
        return []
    escaped = [(m.start(), m.end()) for m in _ESCAPED.finditer(text)]
    # Blank the escaped quotes out (same length) so that the plain ones pair among themselves.
    masked = _ESCAPED.sub(lambda m: "_" * len(m.group()), text) if escaped else text
    # A plain quote around escaped ones is a JSON string holding them, not a mention of its own.
    ends = [end for _, end in escaped]  # escaped spans do not overlap: their ends are in order too
    plain = [(m.start(), m.end()) for m in _QUOTED.finditer(masked)
             if not _overlaps(escaped, ends, m.start(), m.end())]
    return sorted(span for span in escaped + plain if _framed(text, span[0]))


@dataclass(frozen=True)
class Elided:
    """A text with its mentions' quoted words replaced by an ellipsis (the quote marks stay)."""

    text: str
    #: Each ellipsis: its offset in :attr:`text` and the words it stands for, in order.
    cuts: tuple[tuple[int, str], ...] = ()

    def restore(self, piece: str) -> str:
        """``piece``, a substring of :attr:`text`, with its quoted words put back (what redaction must find)."""
        start = self.text.find(piece)
        if start < 0 or not self.cuts:
            return piece
        end = start + len(piece)
        inside = [(offset - start, words) for offset, words in self.cuts if start <= offset < end]
        for offset, words in reversed(inside):
            piece = piece[:offset] + words + piece[offset + 1:]
        return piece


def elide(text: str, spans: list[tuple[int, int]]) -> Elided:
    """``text`` with each span's quoted words replaced by an ellipsis."""
    parts: list[str] = []
    cuts: list[tuple[int, str]] = []
    length = last = 0
    for start, end in spans:
        mark = 2 if text[start] == "\\" else 1
        parts.append(text[last:start + mark])
        length += start + mark - last
        cuts.append((length, text[start + mark:end - mark]))
        parts.append("…")
        length += 1
        last = end - mark
    parts.append(text[last:])
    return Elided("".join(parts), tuple(cuts))
