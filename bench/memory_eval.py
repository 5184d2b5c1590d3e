"""Retrieval quality of memory search on the LoCoMo dev set (Markdown daily notes).

Prints Recall@5, MRR@10, nDCG@10, Snippet-Recall@5 (overall and per
category) and the mean lines per result, for BM25-only, vector-only and
hybrid search, with the configuration given on the command line.

    .venv/bin/python bench/memory_eval.py                      # test provider "hash"
    .venv/bin/python bench/memory_eval.py --provider local     # the ONNX plugin, once installed
    .venv/bin/python bench/memory_eval.py --provider none      # BM25 only
    .venv/bin/python bench/memory_eval.py --sweep              # fusion/chunking grid (hybrid only)

Scoring follows the data set's README: a result (path, start_line,
end_line) is relevant when its line range covers an evidence line. The
index is built in a temporary folder; the data set is only read.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawcore.memory import Memory, SearchResult, open_memory
from clawcore.plugins import PluginSettings, get_plugin_manager
from rich.console import Console
from rich.table import Table

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev"
MODES = ("bm25", "vector", "hybrid")
_SPEAKER = re.compile(r"^\s*-\s*[^:]{1,40}:\s*")


@dataclass(frozen=True)
class Question:
    qid: str
    workspace: str
    question: str
    category: str
    evidence: tuple[tuple[str, int], ...]


def load_questions(data: Path) -> list[Question]:
    questions = []
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        evidence = tuple(dict.fromkeys((e["path"], int(e["line"])) for e in q["evidence_turns"]))
        questions.append(Question(q["qid"], q["workspace"], q["question"], q["category_name"], evidence))
    return questions


def utterance(data: Path, workspace: str, path: str, line: int) -> str:
    text = (data / workspace / path).read_text(encoding="utf-8").splitlines()[line - 1]
    return _SPEAKER.sub("", text).strip()


def score(results: list[SearchResult], q: Question, texts: Mapping[tuple[str, int], str]) -> dict[str, float]:
    def covers(r: SearchResult, e: tuple[str, int]) -> bool:
        return r.path == e[0] and r.start_line <= e[1] <= r.end_line

    top5, top10 = results[:5], results[:10]
    found = {e for r in top5 for e in q.evidence if covers(r, e)}
    recall = len(found) / len(q.evidence)
    mrr = 0.0
    for rank, r in enumerate(top10, start=1):
        if any(covers(r, e) for e in q.evidence):
            mrr = 1.0 / rank
            break
    dcg = sum(1.0 / math.log2(i + 1) for i, r in enumerate(top10, start=1) if any(covers(r, e) for e in q.evidence))
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(q.evidence), 10) + 1))
    snippet_hits = sum(
        1 for e in q.evidence if texts[e] and any(r.path == e[0] and texts[e] in r.snippet for r in top5)
    )
    lines = [r.end_line - r.start_line + 1 for r in top5]
    return {
        "Recall@5": recall,
        "MRR@10": mrr,
        "nDCG@10": dcg / ideal,
        "Snippet-Recall@5": snippet_hits / len(q.evidence),
        "lines": sum(lines) / len(lines) if lines else 0.0,
    }


def plugin_manager(provider: str) -> Any:
    if provider == "hash":
        from clawcore.testing.providers import HashEmbeddingPlugin

        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(HashEmbeddingPlugin(dims=256))
        return pm
    if provider == "none":
        return get_plugin_manager(load_entrypoints=False)
    return get_plugin_manager(PluginSettings.from_sources({}, {}))


def memory_config(args: argparse.Namespace, **over: Any) -> dict[str, Any]:
    o = {**vars(args), **over}
    search: dict[str, Any] = {
        "fusion": o["fusion"],
        "weights": {"text": o["text_weight"], "vector": o["vector_weight"]},
        "perFile": o["per_file"],
        "candidates": o["candidates"],
    }
    return {
        "memory": {
            "embeddings": {"provider": o["provider"]},
            "chunking": {"tokens": o["tokens"], "overlap": o["overlap"]},
            "search": search,
            "sync": {"onSearch": False},
        }
    }


def o_provider(config: Mapping[str, Any]) -> str:
    return str(config["memory"]["embeddings"]["provider"])


class _QueryMemo:
    """Remembers query vectors so a sweep embeds each question once per provider."""

    def __init__(self, provider: Any) -> None:
        self.inner, self.name, self.model, self.dims = provider, provider.name, provider.model, provider.dims
        self.memo: dict[str, list[float]] = {}

    def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) != 1:
            return self.inner.embed(texts)
        if texts[0] not in self.memo:
            self.memo[texts[0]] = self.inner.embed(texts)[0]
        return [self.memo[texts[0]]]


_MEMOS: dict[str, _QueryMemo] = {}


def open_indexes(args: argparse.Namespace, pm: Any, workspaces: Iterable[str], tmp: Path, **over: Any) -> dict[str, Memory]:
    memories = {}
    config = memory_config(args, **over)
    for ws in workspaces:
        tag = f"{ws}-{o_provider(config)}-{config['memory']['chunking']['tokens']}-{config['memory']['chunking']['overlap']}"
        memory = open_memory(args.data / ws, config, plugin_manager=pm, index_path=tmp / f"{tag}.sqlite")
        report = memory.sync()
        if args.verbose:
            print(f"indexed {ws}: {report.files} files, {report.chunks} chunks, {report.seconds:.1f}s", file=sys.stderr)
        if memory.provider is not None:
            key = f"{memory.provider.name}/{memory.provider.model}"
            memo = _MEMOS.setdefault(key, _QueryMemo(memory.provider))
            memo.inner = memory.provider
            memory.provider = memo  # type: ignore[assignment]
        memories[ws] = memory
    return memories


def evaluate(memories: Mapping[str, Memory], questions: list[Question], texts: Mapping[tuple[str, int], str], mode: str) -> dict[str, dict[str, float]]:
    per_category: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in questions:
        memory = memories[q.workspace]
        response = memory.search(q.question, max_results=10, keyword=mode != "vector", vector=mode != "bm25")
        s = score(list(response.results), q, texts)
        per_category[q.category].append(s)
        per_category["overall"].append(s)
    return {
        cat: {k: sum(s[k] for s in rows) / len(rows) for k in rows[0]} | {"n": float(len(rows))}
        for cat, rows in per_category.items()
    }


def print_table(console: Console, title: str, table_rows: list[tuple[str, str, dict[str, float]]]) -> None:
    table = Table(title=title)
    for column in ("mode", "category", "n", "Recall@5", "MRR@10", "nDCG@10", "Snippet-Recall@5", "lines/result"):
        table.add_column(column, justify="right" if column not in ("mode", "category") else "left")
    for mode, category, m in table_rows:
        table.add_row(
            mode, category, str(int(m["n"])), f"{m['Recall@5']:.3f}", f"{m['MRR@10']:.3f}",
            f"{m['nDCG@10']:.3f}", f"{m['Snippet-Recall@5']:.3f}", f"{m['lines']:.1f}",
        )
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--provider", default="hash", help="hash | local | openai | none")
    parser.add_argument("--tokens", type=int, default=None, help="chunk budget (default: the config default)")
    parser.add_argument("--overlap", type=int, default=None)
    parser.add_argument("--fusion", default=None, choices=["weighted", "rrf"])
    parser.add_argument("--text-weight", type=float, default=None)
    parser.add_argument("--vector-weight", type=float, default=None)
    parser.add_argument("--per-file", type=int, default=None)
    parser.add_argument("--candidates", type=int, default=None)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--sweep", action="store_true", help="grid over chunking and fusion (hybrid and bm25)")
    parser.add_argument("--grid", default="200/40,300/60,400/80,600/120", help="tokens/overlap list for --sweep")
    parser.add_argument("--index-dir", type=Path, default=None,
                        help="keep the indexes here (reruns reuse their embeddings); default a temporary folder")
    parser.add_argument("--quick", action="store_true", help="first 60 questions only")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    from clawcore.memory.settings import MemorySettings

    defaults = MemorySettings.from_section({})
    for name, value in (
        ("tokens", defaults.chunking.tokens), ("overlap", defaults.chunking.overlap),
        ("fusion", defaults.search.fusion), ("text_weight", defaults.search.text_weight),
        ("vector_weight", defaults.search.vector_weight), ("per_file", defaults.search.per_file),
        ("candidates", defaults.search.candidates),
    ):
        if getattr(args, name) is None:
            setattr(args, name, value)

    console = Console(width=150)
    questions = load_questions(args.data)
    if args.quick:
        questions = questions[:60]
    texts = {e: utterance(args.data, q.workspace, *e) for q in questions for e in q.evidence}
    workspaces = sorted({q.workspace for q in questions})
    pm = plugin_manager(args.provider)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memory-eval-") as tmp_name:
        tmp = args.index_dir or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        if args.sweep:
            grid_tokens = [tuple(int(x) for x in g.split("/")) for g in args.grid.split(",")]
            fusions = [("weighted", 0.3, 0.7), ("weighted", 0.5, 0.5), ("weighted", 0.6, 0.4),
                       ("weighted", 0.7, 0.3), ("rrf", 1.0, 1.0), ("rrf", 2.0, 1.0)]
            table = Table(title=f"sweep, provider {args.provider}, {len(questions)} questions")
            for column in ("tokens/overlap", "perFile", "mode / fusion", "Recall@5", "MRR@10", "nDCG@10", "Snippet-R@5", "lines"):
                table.add_column(column)
            for (tokens, overlap), per_file in itertools.product(grid_tokens, (1, 2)):
                memories = open_indexes(args, pm, workspaces, tmp, tokens=tokens, overlap=overlap)
                variants = [("bm25", None)] + ([("hybrid", f) for f in fusions] if args.provider != "none" else [])
                for mode, fusion in variants:
                    over: dict[str, Any] = {"per_file": per_file}
                    if fusion:
                        over |= {"fusion": fusion[0], "text_weight": fusion[1], "vector_weight": fusion[2]}
                    for memory in memories.values():
                        memory.settings = _with_search(memory, args, over)
                    m = evaluate(memories, questions, texts, mode)["overall"]
                    label = mode if not fusion else f"{fusion[0]} {fusion[1]}/{fusion[2]}"
                    table.add_row(f"{tokens}/{overlap}", str(per_file), label, f"{m['Recall@5']:.3f}", f"{m['MRR@10']:.3f}",
                                  f"{m['nDCG@10']:.3f}", f"{m['Snippet-Recall@5']:.3f}", f"{m['lines']:.1f}")
                for memory in memories.values():
                    memory.close()
            console.print(table)
        else:
            memories = open_indexes(args, pm, workspaces, tmp)
            provider_names = {m.provider.name if m.provider else "none" for m in memories.values()}
            if args.provider != "none" and provider_names == {"none"}:
                reason = next(iter(memories.values())).status()["reason"]
                console.print(f"[yellow]provider {args.provider!r} is not in use ({reason}); BM25 only[/]")
            table_rows = []
            for mode in args.modes.split(","):
                if mode != "bm25" and provider_names == {"none"}:
                    continue
                results = evaluate(memories, questions, texts, mode)
                order = ["overall"] + sorted(c for c in results if c != "overall")
                table_rows += [(mode, cat, results[cat]) for cat in order]
            for memory in memories.values():
                memory.close()
            print_table(
                console,
                f"LoCoMo dev, provider {'/'.join(sorted(provider_names))}, chunks {args.tokens}/{args.overlap} tokens, "
                f"fusion {args.fusion} {args.text_weight}/{args.vector_weight}, perFile {args.per_file}",
                table_rows,
            )
    console.print(f"{len(questions)} questions, {time.monotonic() - started:.1f}s; command: "
                  f"{' '.join(['bench/memory_eval.py', *(argv if argv is not None else sys.argv[1:])])}")
    return 0


def _with_search(memory: Memory, args: argparse.Namespace, over: Mapping[str, Any]) -> Any:
    from clawcore.memory.settings import MemorySettings

    chunking = {"tokens": memory.settings.chunking.tokens, "overlap": memory.settings.chunking.overlap}
    section = memory_config(args, **{**over, **chunking})["memory"]
    return MemorySettings.from_section(section)


if __name__ == "__main__":
    sys.exit(main())
