"""Markdown-aware chunking: headings and paragraphs first, then a token budget.

A chunk is a run of whole lines (a line is cut only when it alone exceeds
the budget) that keeps its 1-based first and last line, so every search hit
can cite ``path#Lx-Ly`` and ``memory_get`` can read exactly those lines.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from clawcore.memory.tokens import estimate_tokens, is_cjk

__all__ = ["CHUNKER_VERSION", "Chunk", "ChunkingSettings", "chunk_markdown"]

#: Changes when the same text would be cut into other chunks or cited at other lines
#: (2: lines counted as an editor counts them); an index built by another version is rebuilt.
CHUNKER_VERSION = "2"

_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


@dataclass(frozen=True)
class ChunkingSettings:
    """Budget and overlap in estimated tokens (see :func:`~clawcore.memory.tokens.estimate_tokens`)."""

    tokens: int = 600
    overlap: int = 120

    def __post_init__(self) -> None:
        if self.tokens < 16:
            raise ValueError(f"memory.chunking.tokens must be at least 16, got {self.tokens}")
        if not 0 <= self.overlap < self.tokens:
            raise ValueError(
                f"memory.chunking.overlap must be between 0 and tokens-1 ({self.tokens - 1}), got {self.overlap}"
            )


@dataclass(frozen=True)
class Chunk:
    """A run of lines of one file: 1-based inclusive ``start_line``..``end_line``."""

    start_line: int
    end_line: int
    text: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Piece:
    line: int  # 1-based
    text: str
    tokens: int


def _pieces(lines: list[str], budget: int) -> list[list[_Piece]]:
    """Group lines into blocks (a heading with the paragraph under it, a paragraph,
    a fenced code block); lines over the budget are cut into budget-sized pieces."""
    blocks: list[list[_Piece]] = []
    current: list[_Piece] = []
    in_fence = False

    def close() -> None:
        nonlocal current
        if current:
            blocks.append(current)
            current = []

    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            if not in_fence:
                close()
            in_fence = not in_fence
        elif not in_fence:
            if not line.strip():
                # A blank line ends a paragraph, unless the block is only headings so far.
                if current and not all(_HEADING.match(p.text) for p in current):
                    close()
                continue
            if _HEADING.match(line) and current and not all(_HEADING.match(p.text) for p in current):
                close()
        tokens = estimate_tokens(line)
        if tokens <= budget:
            current.append(_Piece(number, line, max(tokens, 1)))
            continue
        # One line alone is over the budget: cut it, the pieces keep its line number.
        for part in _cut(line, budget):
            current.append(_Piece(number, part, max(estimate_tokens(part), 1)))
    close()
    return blocks


def _cut(line: str, budget: int) -> list[str]:
    """Pieces of a line that is over the budget, each within it by the token estimate (a CJK
    character is a token, four other characters are one), cut at a space near the end where there is one."""
    limit = max(budget - 2, 4)
    parts: list[str] = []
    start = 0
    while start < len(line):
        cost, end = 0.0, start
        while end < len(line):
            step = 1.0 if is_cjk(line[end]) else 0.25
            if cost + step > limit:
                break
            cost, end = cost + step, end + 1
        if end < len(line):
            space = line.rfind(" ", start + (end - start) // 2, end)
            if space > start:
                end = space + 1
        end = max(end, start + 1)
        parts.append(line[start:end])
        start = end
    return parts


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor numbers them: split at ``\\n``, ``\\r\\n`` and ``\\r`` only.

    ``str.splitlines`` also splits at a form feed, U+2028 and other separators, and citations
    (``path#L4``) and ``memory_get`` would then count lines the file does not have.
    """
    lines = _LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def chunk_markdown(text: str, settings: ChunkingSettings | None = None) -> list[Chunk]:
    """Split Markdown into chunks of about ``settings.tokens`` estimated tokens.

    Blocks (heading + paragraph, paragraph, code fence) are packed whole
    while they fit; a block bigger than the budget is packed line by line.
    Each new chunk starts with up to ``settings.overlap`` tokens of whole
    lines from the end of the previous one, so a fact near a boundary is
    found from either side.
    """
    settings = settings or ChunkingSettings()
    budget, overlap = settings.tokens, settings.overlap
    lines = split_lines(text)
    chunks: list[Chunk] = []
    current: list[_Piece] = []
    size = 0
    fresh = 0  # pieces in ``current`` that are not overlap from the previous chunk

    def add(piece: _Piece) -> None:
        nonlocal size, fresh
        current.append(piece)
        size += piece.tokens
        fresh += 1

    def emit() -> None:
        nonlocal current, size, fresh
        if not fresh or all(not p.text.strip() for p in current):
            current, size, fresh = [], 0, 0
            return
        chunks.append(Chunk(current[0].line, current[-1].line, "\n".join(p.text for p in current)))
        # Carry whole trailing lines as overlap; never the whole chunk (progress is guaranteed).
        carried: list[_Piece] = []
        total = 0
        for piece in reversed(current[1:]):
            if total + piece.tokens > overlap:
                break
            carried.insert(0, piece)
            total += piece.tokens
        current, size, fresh = carried, total, 0

    for block in _pieces(lines, budget):
        block_tokens = sum(p.tokens for p in block)
        if size + block_tokens > budget and block_tokens <= budget:
            emit()
            if size + block_tokens > budget:
                current, size = [], 0
        if size + block_tokens <= budget:
            for piece in block:
                add(piece)
            continue
        # The block alone is over the budget: pack it piece by piece.
        for piece in block:
            if size + piece.tokens > budget:
                emit()
                if size + piece.tokens > budget:
                    current, size = [], 0
            add(piece)
    emit()
    return chunks
