"""Text that can be stored and shown safely.

Two policies every part of clawcore shares:

- **Stored text is well-formed Unicode.** A lone surrogate (``"\\ud800"`` sent as a
  JSON escape, bytes that are not UTF-8 read with ``surrogateescape``) has no
  UTF-8 form; before text reaches a file it becomes U+FFFD, the replacement
  character, so the write never fails and nothing else of the text is lost.
- **Untrusted text shown on a terminal cannot drive it.** Control characters
  other than newline and tab (ESC sequences that recolour, retitle or clear the
  screen, carriage returns that overwrite a line) and the bidirectional
  overrides that reorder what is seen are shown as ``\\u`` escapes (``\\u001b``) — the
  JSON spelling, so JSON text made printable still reads as the same JSON.
"""

from __future__ import annotations

import re

__all__ = ["printable", "well_formed"]

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def well_formed(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a pair split in two code points is joined)."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters but ``\\n`` and ``\\t`` escaped, and
    lone surrogates replaced (see :func:`well_formed`)."""
    return _CONTROL.sub(_escape, well_formed(text))
