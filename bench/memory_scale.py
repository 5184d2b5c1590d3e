"""Memory index at scale: index time, incremental sync and search latency on generated workspaces.

    .venv/bin/python bench/memory_scale.py --quick        # 10k chunks
    .venv/bin/python bench/memory_scale.py                # 10k and 100k chunks
    .venv/bin/python bench/memory_scale.py --sizes 50000 --provider none

The workspace is generated (deterministic words, daily notes of about 20
chunks each) in a temporary folder. The default provider is the test
provider ``hash`` (feature-hashed words, 384 dims), so the numbers measure
the engine (chunking, SQLite, FTS5, sqlite-vec, fusion), not a model;
``--provider local`` measures with the ONNX model instead.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from clawcore.memory import open_memory
from clawcore.plugins import PluginSettings, get_plugin_manager
from rich.console import Console
from rich.table import Table

CHUNKS_PER_FILE = 20


def vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)]


def generate(workspace: Path, chunks: int, seed: int = 7) -> int:
    """Write daily notes for about ``chunks`` chunks of ~400 tokens; returns the number of files."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    # Zipf-like word frequencies, as in prose.
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
    memory = workspace / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    files = max(1, chunks // CHUNKS_PER_FILE)
    for index in range(files):
        day = f"{2000 + index // 336:04d}-{index // 28 % 12 + 1:02d}-{index % 28 + 1:02d}"
        sections = []
        for section in range(CHUNKS_PER_FILE):
            lines = [" ".join(rng.choices(words, cum_weights=cumulative, k=24)) for _ in range(12)]
            sections.append(f"## Topic {section}\n\n" + "\n".join(f"- {line}" for line in lines))
        (memory / f"{day}-{index}.md").write_text(f"# {day}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    (workspace / "MEMORY.md").write_text("# Facts\n\n" + " ".join(rng.choices(words, k=200)) + "\n", encoding="utf-8")
    return files


def plugin_manager(provider: str) -> Any:
    if provider == "hash":
        from clawcore.testing.providers import HashEmbeddingPlugin

        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(HashEmbeddingPlugin(dims=384))
        return pm
    if provider == "none":
        return get_plugin_manager(load_entrypoints=False)
    return get_plugin_manager(PluginSettings.from_sources({}, {}))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(size: int, args: argparse.Namespace, console: Console) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memory-scale-") as tmp_name:
        tmp = Path(tmp_name)
        workspace = tmp / "workspace"
        started = time.perf_counter()
        files = generate(workspace, size)
        console.print(f"[dim]{size}: generated {files} files in {time.perf_counter() - started:.1f}s[/]")
        config = {"memory": {"embeddings": {"provider": args.provider}}}
        pm = plugin_manager(args.provider)
        index = tmp / "index" / "memory.sqlite"
        with open_memory(workspace, config, plugin_manager=pm, index_path=index) as memory:
            started = time.perf_counter()
            report = memory.sync()
            index_s = time.perf_counter() - started
        started = time.perf_counter()
        memory = open_memory(workspace, config, plugin_manager=pm, index_path=index)
        open_s = time.perf_counter() - started
        try:
            target = sorted((workspace / "memory").iterdir())[files // 2]
            target.write_text(target.read_text() + "\n- one more line about zyzzyva\n", encoding="utf-8")
            started = time.perf_counter()
            incremental = memory.sync()
            incremental_s = time.perf_counter() - started
            rng = random.Random(11)
            texts = [line for f in sorted((workspace / "memory").iterdir())[:50] for line in f.read_text().splitlines()
                     if line.startswith("- ")]
            queries = []
            for _ in range(args.queries):
                words = rng.choice(texts)[2:].split()
                start = rng.randrange(max(len(words) - 5, 1))
                queries.append(" ".join(words[start : start + 5]))
            latency: dict[str, list[float]] = {"bm25": [], "vector": [], "hybrid": []}
            for mode, times in latency.items():
                if mode != "bm25" and memory.provider is None:
                    continue
                for query in queries:
                    started = time.perf_counter()
                    memory.search(query, keyword=mode != "vector", vector=mode != "bm25")
                    times.append((time.perf_counter() - started) * 1000)
        finally:
            memory.close()
        size_mb = sum(p.stat().st_size for p in index.parent.iterdir()) / 1e6
    return {
        "size": size, "files": report.files, "chunks": report.chunks, "index_s": index_s, "open_s": open_s,
        "incremental_s": incremental_s, "incremental_indexed": incremental.indexed,
        "incremental_embedded": incremental.embedded, "db_mb": size_mb, "latency": latency,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k chunks only, 30 queries")
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--provider", default="hash", help="hash | local | openai | none")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    sizes = [10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    if args.quick:
        args.queries = min(args.queries, 30)
    console = Console(width=150)
    rows = [run(size, args, console) for size in sizes]
    table = Table(title=f"memory index at scale, provider {args.provider}, {args.queries} queries per mode")
    for column in ("chunks", "files", "index s", "open s", "1-file sync s", "db MB",
                   "bm25 p50/p95 ms", "vector p50/p95 ms", "hybrid p50/p95 ms"):
        table.add_column(column, justify="right")
    for row in rows:
        cells = []
        for mode in ("bm25", "vector", "hybrid"):
            values = row["latency"][mode]
            cells.append(f"{percentile(values, 0.5):.1f} / {percentile(values, 0.95):.1f}" if values else "-")
        table.add_row(str(row["chunks"]), str(row["files"]), f"{row['index_s']:.1f}", f"{row['open_s']:.2f}",
                      f"{row['incremental_s']:.2f} ({row['incremental_embedded']} embedded)", f"{row['db_mb']:.0f}", *cells)
    console.print(table)
    console.print(f"command: bench/memory_scale.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
