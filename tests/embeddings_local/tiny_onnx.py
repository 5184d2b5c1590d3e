"""Tiny ONNX encoders written byte by byte (no ``onnx`` package): a token-embedding lookup per token.

The graph is ``hidden = Gather(table, input_ids)``, shaped ``(batch, tokens, dims)``, which is what a
sentence-transformers encoder outputs before pooling; ``dims`` may be 0 and the table NaN, to make
the broken models a provider must refuse.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_FLOAT, _INT64 = 1, 7


def _varint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, elem_type: int, shape: list[int | str]) -> bytes:
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem_type) + _bytes(2, dims)))


def write_encoder(path: Path, dims: int, *, vocab: int = 30522, nan: bool = False, seed: int = 0) -> Path:
    """An ONNX encoder taking ``input_ids`` and ``attention_mask``; returns ``path``."""
    table = np.random.default_rng(seed).standard_normal((vocab, dims)).astype(np.float32)
    if nan:
        table[:] = np.nan
    initializer = b"".join(_int(1, d) for d in table.shape) + _int(2, _FLOAT) + _bytes(8, "table")
    initializer += _bytes(9, table.tobytes())
    node = _bytes(1, "table") + _bytes(1, "input_ids") + _bytes(2, "hidden") + _bytes(4, "Gather")
    graph = _bytes(1, node) + _bytes(2, "g") + _bytes(5, initializer)
    graph += _bytes(11, _value_info("input_ids", _INT64, ["b", "t"]))
    graph += _bytes(11, _value_info("attention_mask", _INT64, ["b", "t"]))
    graph += _bytes(12, _value_info("hidden", _FLOAT, ["b", "t", dims]))
    model = _int(1, 8) + _bytes(8, _bytes(1, "") + _int(2, 13)) + _bytes(7, graph)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model)
    return path
