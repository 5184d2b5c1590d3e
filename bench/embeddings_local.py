"""Throughput of the local ONNX embedding provider, raw and through memory indexing.

    .venv/bin/python bench/embeddings_local.py            # the config defaults (1 thread, batch 8)
    .venv/bin/python bench/embeddings_local.py --quick    # fewer texts, one repeat
    .venv/bin/python bench/embeddings_local.py --sweep    # batch size x threads grid (sentences/s)

Texts come from the LoCoMo dev workspaces (read only): "sentences" are the
conversation lines, "chunks" are what the memory chunker cuts from the same
files (the memory defaults). End-to-end indexing syncs a fresh index of
one workspace through ``open_memory`` with provider ``local`` and compares
its chunks/s with the raw provider on the same chunk texts.

Throughput on a shared machine is noisy, so every figure is the best of
``--repeat`` runs and is given twice: per wall-clock second (what a user
waits, under whatever else the machine runs; the load average is printed)
and per CPU second of this process, all its threads together (what the work
costs, much less disturbed by other load). With ``--threads 1`` and a
quiet core the two agree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from clawcore.memory import open_memory
from clawcore.memory.chunking import ChunkingSettings, chunk_markdown
from clawcore.plugins import PluginSettings, get_plugin_manager
from clawcore_embeddings_local import LocalEmbeddingProvider
from rich.console import Console
from rich.table import Table

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev"


def sentences_of(data: Path) -> list[str]:
    lines = []
    for path in sorted(data.glob("conv-*/memory/*.md")):
        lines += [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("- ")]
    return lines


def chunks_of(workspace: Path) -> list[str]:
    texts = []
    for path in sorted(workspace.glob("memory/*.md")):
        texts += [c.text for c in chunk_markdown(path.read_text(encoding="utf-8"), ChunkingSettings())]
    return texts


def best_rate(count: int, run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(items per wall second, items per CPU second): the best of ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return count / min(walls), count / min(cpus)


def raw_table(provider: LocalEmbeddingProvider, sentences: Sequence[str], chunks: Sequence[str], repeat: int) -> Table:
    table = Table("texts", "count", "mean windows", "mean chars", "per wall s", "per CPU s", title="raw provider.embed")
    for label, texts in (("sentences", sentences), ("chunks", chunks)):
        windows = statistics.mean(provider.windows(t) for t in texts)
        wall, cpu = best_rate(len(texts), partial(provider.embed, texts), repeat)
        table.add_row(label, str(len(texts)), f"{windows:.2f}", f"{statistics.mean(map(len, texts)):.0f}",
                      f"{wall:.1f}", f"{cpu:.1f}")
    return table


def end_to_end(workspace: Path, threads: int, batch_size: int, repeat: int) -> tuple[int, float, float, float]:
    """(chunks, chunks per wall s and per CPU s of a fresh sync, seconds to open the memory with its provider)."""
    pm = get_plugin_manager(PluginSettings(load=("embeddings_local",)))
    config = {"memory": {"embeddings": {"provider": "local", "local": {"threads": threads, "batchSize": batch_size}}}}
    best_wall = best_cpu = float("inf")
    chunks = 0
    open_s = 0.0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "workspace"
            shutil.copytree(workspace, ws, ignore=shutil.ignore_patterns("turns.jsonl"))
            started = time.perf_counter()
            with open_memory(ws, config, plugin_manager=pm, index_path=Path(tmp) / "index.sqlite") as memory:
                open_s = time.perf_counter() - started
                assert memory.provider is not None, memory.status()
                wall, cpu = time.perf_counter(), time.process_time()
                report = memory.sync()
                best_wall = min(best_wall, time.perf_counter() - wall)
                best_cpu = min(best_cpu, time.process_time() - cpu)
                chunks = report.chunks
    return chunks, chunks / best_wall, chunks / best_cpu, open_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--threads", type=int, default=None, help="default: the config default")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the config default")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="256 sentences, one workspace's chunks, 1 repeat")
    parser.add_argument("--sweep", action="store_true",
                        help="256 sentences and 24 chunks over a grid of batch sizes and threads")
    parser.add_argument("--grid-batches", default="8,32,128", help="batch sizes for --sweep")
    parser.add_argument("--grid-threads", default="1,2", help="thread counts for --sweep")
    args = parser.parse_args()
    console = Console()
    home = Path(tempfile.mkdtemp(prefix="bench-embeddings-local-"))
    settings = {k: v for k, v in (("threads", args.threads), ("batchSize", args.batch_size)) if v is not None}
    provider = LocalEmbeddingProvider.from_settings(settings, home)
    threads = provider.threads
    repeat = 1 if args.quick else args.repeat
    sentences = sentences_of(args.data)[: 256 if args.quick else 1024]
    workspace = args.data / "conv-26"
    chunks = chunks_of(workspace)
    console.print(f"model {provider.model} ({provider.files.source}), threads {threads}, "
                  f"batch size {provider.batch_size}, best of {repeat}; {os.cpu_count()} CPUs, "
                  f"load average {os.getloadavg()[0]:.1f} at start")

    if args.sweep:
        table = Table("threads", "batch size", "sentences per wall s", "per CPU s", "chunks per wall s",
                      "per CPU s", title="sweep")
        few_sentences, few_chunks = sentences[:256], chunks[:24]
        for threads in (int(t) for t in args.grid_threads.split(",")):
            for batch in (int(b) for b in args.grid_batches.split(",")):
                p = LocalEmbeddingProvider(provider.files, threads=threads, batch_size=batch)
                s_wall, s_cpu = best_rate(len(few_sentences), partial(p.embed, few_sentences), repeat)
                c_wall, c_cpu = best_rate(len(few_chunks), partial(p.embed, few_chunks), repeat)
                table.add_row(str(threads), str(batch), f"{s_wall:.1f}", f"{s_cpu:.1f}", f"{c_wall:.1f}", f"{c_cpu:.1f}")
        console.print(table)
        console.print(f"load average {os.getloadavg()[0]:.1f} at the end")
        return 0

    console.print(raw_table(provider, sentences, chunks, repeat))
    raw_wall, raw_cpu = best_rate(len(chunks), partial(provider.embed, chunks), repeat)
    count, e2e_wall, e2e_cpu, open_s = end_to_end(workspace, threads, provider.batch_size, repeat)
    table = Table("what", "chunks", "per wall s", "per CPU s", title="indexing conv-26 end to end vs raw model")
    table.add_row("raw provider.embed on the same chunks", str(len(chunks)), f"{raw_wall:.2f}", f"{raw_cpu:.2f}")
    table.add_row("open_memory(...).sync() on a fresh index", str(count), f"{e2e_wall:.2f}", f"{e2e_cpu:.2f}")
    table.add_row("overhead beyond the model", "", f"{(1 - e2e_wall / raw_wall) * 100:.1f}%",
                  f"{(1 - e2e_cpu / raw_cpu) * 100:.1f}%")
    console.print(table)
    console.print(f"opening the memory with the provider took {open_s:.2f}s (model verified and loaded); "
                  f"load average {os.getloadavg()[0]:.1f} at the end")
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
