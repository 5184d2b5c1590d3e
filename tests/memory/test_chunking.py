from __future__ import annotations

import itertools

from clawcore.memory.chunking import ChunkingSettings, chunk_markdown
from clawcore.memory.tokens import estimate_tokens
from hypothesis import given, settings
from hypothesis import strategies as st


def test_chunks_keep_one_based_line_ranges_and_text() -> None:
    text = "# Title\n\nfirst paragraph\nstill first\n\n## Section\n\nsecond paragraph\n"
    [chunk] = chunk_markdown(text)
    assert (chunk.start_line, chunk.end_line) == (1, 8)
    assert "first paragraph" in chunk.text and "second paragraph" in chunk.text


def test_budget_splits_at_paragraphs_not_inside_lines() -> None:
    paragraphs = [f"## Part {i}\n\n" + "\n".join(f"line {i}.{j} " + "word " * 10 for j in range(6)) for i in range(6)]
    text = "\n\n".join(paragraphs)
    lines = text.splitlines()
    chunks = chunk_markdown(text, ChunkingSettings(tokens=120, overlap=0))
    assert len(chunks) > 3
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= 120 + len(chunk.text.splitlines())
        # every line of a chunk is a whole line of the file, at its position
        for offset, line in enumerate(chunk.text.splitlines()):
            assert line in lines[chunk.start_line - 1 : chunk.end_line]
    # consecutive chunks cover the file without gaps
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line + 3


def test_overlap_repeats_trailing_lines() -> None:
    text = "\n".join(f"fact number {i} is about topic {i}" for i in range(60))
    chunks = chunk_markdown(text, ChunkingSettings(tokens=60, overlap=20))
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks):
        assert after.start_line <= before.end_line  # shares at least one line
        assert after.end_line > before.end_line  # and always makes progress


def test_a_line_over_the_budget_is_cut_and_keeps_its_line_number() -> None:
    text = "intro\n" + "word " * 2000 + "\noutro"
    chunks = chunk_markdown(text, ChunkingSettings(tokens=100, overlap=10))
    long_pieces = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(long_pieces) >= 10
    assert all(estimate_tokens(c.text) <= 100 for c in long_pieces)


def test_cjk_text_counts_one_token_per_character() -> None:
    assert estimate_tokens("我们决定使用数据库迁移") == 11
    assert estimate_tokens("abcd" * 10) == 10
    text = "\n".join("我们决定使用数据库迁移。" * 3 for _ in range(20))
    chunks = chunk_markdown(text, ChunkingSettings(tokens=100, overlap=0))
    assert all(estimate_tokens(c.text) <= 100 for c in chunks)
    assert len(chunks) >= 7


def test_a_long_cjk_line_is_cut_by_tokens_not_characters() -> None:
    line = "数据库迁移计划" * 2000
    chunks = chunk_markdown("# 标题\n" + line + "\n", ChunkingSettings(tokens=600, overlap=120))
    pieces = [c for c in chunks if c.start_line == c.end_line == 2]
    assert all(estimate_tokens(c.text) <= 600 for c in chunks)
    assert "".join(c.text for c in pieces) == line  # nothing lost, nothing repeated


def test_fenced_code_stays_together() -> None:
    text = "para\n\n```\ncode line one\n\ncode line two\n```\n\nafter"
    [chunk] = chunk_markdown(text)
    assert "code line one\ncode line two" in chunk.text or "code line one\n\ncode line two" in chunk.text


def test_invalid_settings_are_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="overlap"):
        ChunkingSettings(tokens=100, overlap=100)
    with pytest.raises(ValueError, match="tokens"):
        ChunkingSettings(tokens=4, overlap=0)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.just(""),
            st.just("# Heading"),
            st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=300),
        ),
        max_size=60,
    ),
    st.integers(min_value=16, max_value=300),
)
def test_every_nonblank_line_lands_in_a_chunk(lines: list[str], budget: int) -> None:
    text = "\n".join(lines)
    chunks = chunk_markdown(text, ChunkingSettings(tokens=budget, overlap=budget // 4))
    covered = set()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= max(len(text.splitlines()), 1)
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            assert number in covered
