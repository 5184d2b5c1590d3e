"""The side-by-side benchmark's own machinery: data generation, pooling, tables into the README."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import memory_scale
import peers
import run_all
import scale
from memory_eval import Question


def test_scale_generates_memory_scale_files_for_the_asked_chunk_count(tmp_path: Path) -> None:
    files = memory_scale.generate(tmp_path / "a", 2 * memory_scale.CHUNKS_PER_FILE)
    scale.generate(tmp_path / "b", 3 * len(scale.chunks_of(tmp_path / "a")) // files)
    a = sorted((tmp_path / "a" / "memory").iterdir())
    b = sorted((tmp_path / "b" / "memory").iterdir())
    assert [p.name for p in b[: len(a)]] == [p.name for p in a]
    assert all(x.read_text() == y.read_text() for x, y in zip(a, b, strict=False))
    assert len(b) == 3


def test_pooled_layout_keeps_each_conversation_apart_and_maps_evidence(tmp_path: Path) -> None:
    for ws in ("c1", "c2"):
        (tmp_path / ws / "memory").mkdir(parents=True)
        (tmp_path / ws / "memory" / "2023-01-01.md").write_text(f"- A: hello from {ws}\n")
    folder = peers.pooled_layout(tmp_path, ["c1", "c2"], tmp_path / "out")
    assert (folder / "memory" / "c2" / "2023-01-01.md").read_text() == "- A: hello from c2\n"
    q = Question("q1", "c2", "hello?", "single-hop", (("memory/2023-01-01.md", 1),))
    pooled = peers.pooled_question(q)
    assert pooled.workspace == "pooled" and pooled.evidence == (("memory/c2/2023-01-01.md", 1),)
    corpus = peers.chunk_corpus("pooled", folder)
    assert {d.path for d in corpus.docs} == {"memory/c1/2023-01-01.md", "memory/c2/2023-01-01.md"}


def test_quantisation_variants_find_the_exact_neighbours(tmp_path: Path) -> None:
    result = scale.measure_quantisation(2000, 5, tmp_path)
    variants = result["variants"]
    assert variants["float32"]["recall"] == 1.0
    assert variants["int8 + rescore"]["recall"] >= 0.9
    assert variants["binary + rescore"]["disk_mb"] < variants["float32"]["disk_mb"]


def test_run_all_replaces_only_the_results_part_of_the_readme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{run_all.START}\nold table\n{run_all.END}\noutro\n")
    monkeypatch.setattr(run_all, "README", readme)
    run_all.write_readme("new table\n")
    assert readme.read_text() == f"intro\n{run_all.START}\nnew table\n{run_all.END}\noutro\n"
