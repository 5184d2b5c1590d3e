"""The keyword side of the index: what FTS5 stores and how a question becomes a MATCH.

FTS5's ``unicode61`` tokenizer does not split text written without spaces
(Chinese, Japanese, Korean), so before a chunk reaches the FTS table every
CJK run is rewritten as its overlapping character pairs, separated by
spaces, and its last character follows alone (``数据库迁移`` -> ``数据 据库
库迁 迁移 移``). A CJK query becomes the phrase of its pairs, which matches
exactly where the query text occurs, in any length of two characters or
more; a single character is the prefix of a pair, or the run's last
character, wherever it occurs.

Queries never reach FTS5 raw: each term is a double-quoted string, so no
user input can produce an FTS5 syntax error, and the terms are OR-joined so
a natural-language question finds chunks that share some of its words,
ranked by BM25.
"""

from __future__ import annotations

from clawcore.memory.tokens import cjk_grams, query_pairs, query_terms, split_runs

__all__ = ["FTS_SCHEME", "TOKENIZER", "fts_text", "match_expression"]

#: Porter stemming over unicode61 (diacritics folded): "painted" finds "painting".
TOKENIZER = "porter unicode61 remove_diacritics 2"
#: Written into the index meta; a change rebuilds the index. "contentless": the
#: FTS table holds no copy of the text (indexes written before are rebuilt).
FTS_SCHEME = f"cjk-bigram-v2/contentless/{TOKENIZER}"


def fts_text(text: str) -> str:
    """The text stored in the FTS table for a chunk: CJK runs spelled as character pairs.

    A run's last character is also indexed alone: it begins no pair, and a
    one-character query looks for the characters that begin a token.
    """
    parts: list[str] = []
    for cjk, run in split_runs(text):
        grams = cjk_grams(run) + ([run[-1]] if len(run) > 1 else [])
        parts.append(" " + " ".join(grams) + " " if cjk else run)
    return "".join(parts)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression for a free-text query, or None when it has no searchable term.

    Terms are quoted and OR-joined; a CJK run becomes a quoted phrase of its
    character pairs (``"数据 据库"``).
    """
    phrases = query_terms(query)
    if not phrases:
        return None
    phrases += [pair for pair in query_pairs(query) if pair not in phrases]
    return " OR ".join(_quote(" ".join(phrase)) + ("*" if _one_cjk_character(phrase) else "") for phrase in phrases)


def _one_cjk_character(phrase: tuple[str, ...]) -> bool:
    """A lone CJK character is looked up as the prefix of a token (``"数"*``): a pair, or a run's last character."""
    return len(phrase) == 1 and len(phrase[0]) == 1 and next(split_runs(phrase[0]))[0]
