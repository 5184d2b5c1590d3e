"""The ``local`` embedding provider: tokenise, run ONNX, mean-pool, normalise.

Long inputs are split, not truncated: a text longer than the model's window
is cut into consecutive windows of at most ``window`` tokens (special tokens
included), every window is run, and the text's vector is the mean of all
their token vectors — the same mean pooling the model uses inside one window,
so a chunk's tail counts as much as its head. Beyond :data:`MAX_WINDOWS`
windows (about 2,000 tokens with 128-token windows, where a default memory
chunk takes about 500) the rest of a text is cut off, which bounds the cost
of one pathological input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from clawcore.types import ProviderUnavailable

from clawcore_embeddings_local.model_store import ModelFiles, describe_error, locate
from clawcore_embeddings_local.settings import LocalSettings

__all__ = ["MAX_WINDOWS", "LocalEmbeddingProvider"]

#: Windows per text; text beyond them is ignored.
MAX_WINDOWS = 16


class LocalEmbeddingProvider:
    """Sentence embeddings from an ONNX model on the CPU, with no network.

    :param files: a verified model (see :func:`clawcore_embeddings_local.model_store.locate`).
    :param threads: ONNX Runtime intra-op threads; 0 lets it choose.
    :param batch_size: token windows per forward pass.
    :raises ProviderUnavailable: ONNX Runtime or the tokenizer cannot load the files.
    """

    name = "local"

    def __init__(self, files: ModelFiles, *, threads: int = 1, batch_size: int = 8) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.files = files
        self.model = files.model_id
        self.batch_size = batch_size
        self.threads = threads
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(files.onnx), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ORT raises its own exception types for every broken file
            raise ProviderUnavailable(
                f"ONNX Runtime cannot load {files.onnx} ({describe_error(exc)}); "
                "replace the file with a valid ONNX model"
            ) from exc
        try:
            self._tokenizer = Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:
            raise ProviderUnavailable(
                f"cannot read tokenizer {files.tokenizer} ({describe_error(exc)}); "
                "replace it with the model's tokenizer.json"
            ) from exc
        # Truncation and padding are done here, per window, not by the tokenizer's own settings.
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        specials = self._tokenizer.encode("").ids  # e.g. [CLS] [SEP] or <s> </s>
        self._prefix, self._suffix = specials[:1], specials[1:]
        self._content = files.window - len(specials)
        if self._content < 1:
            raise ProviderUnavailable(f"window {files.window} leaves no room for text")
        pads = (self._tokenizer.token_to_id(token) for token in ("[PAD]", "<pad>"))
        self._pad_id = next((pad for pad in pads if pad is not None), 0)  # masked out either way
        self._inputs = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self._inputs:
            raise ProviderUnavailable(
                f"{files.onnx} takes inputs {sorted(self._inputs)}, not input_ids and "
                "attention_mask; export the model as a sentence-transformers/BERT-style ONNX encoder"
            )
        self._output = self._session.get_outputs()[0].name
        self.dims = self._probe()

    def _probe(self) -> int:
        """The model's vector size, from one run on empty text; a model that gives no usable vector is refused."""
        fix = "export the model as a sentence-transformers/BERT-style ONNX encoder"
        try:
            [probe] = self._run([self._prefix + self._suffix])[0]
        except Exception as exc:  # ORT's own errors, or an output of a shape pooling cannot read
            raise ProviderUnavailable(
                f"{self.files.onnx} fails on a test input ({describe_error(exc)}); {fix}"
            ) from exc
        if probe.ndim != 1 or probe.shape[0] < 1:
            raise ProviderUnavailable(f"{self.files.onnx} gives vectors of shape {probe.shape}, not of 1 or more dims; {fix}")
        if not np.isfinite(probe).all():
            raise ProviderUnavailable(f"{self.files.onnx} gives vectors that are not finite (NaN or infinity); {fix}")
        return int(probe.shape[0])

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], home: Path) -> LocalEmbeddingProvider:
        """The registry's factory: ``memory.embeddings.local`` and ``$CLAWCORE_HOME`` in, a provider out."""
        parsed = LocalSettings.from_mapping(settings, home)
        return cls(locate(parsed, home), threads=parsed.threads, batch_size=parsed.batch_size)

    def __repr__(self) -> str:
        return f"LocalEmbeddingProvider(model={self.model!r}, dims={self.dims}, source={self.files.source!r})"

    # -- embedding -----------------------------------------------------------

    def windows(self, text: str) -> int:
        """How many forward-pass windows ``text`` takes (at most :data:`MAX_WINDOWS`)."""
        tokens = len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return min(MAX_WINDOWS, max(1, -(-tokens // self._content)))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order.

        Windows from all texts are sorted by length before batching, so a
        batch pads little; pooling is per text, so batching does not change a
        text's vector beyond int8 rounding.
        """
        if not texts:
            return []
        # A lone surrogate (text decoded with surrogateescape, a "\ud800" escape) is no text the tokenizer
        # takes: it becomes U+FFFD rather than failing the whole batch.
        texts = [t if t.isascii() else t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        rows: list[list[int]] = []
        owners: list[int] = []
        limit = self._content * MAX_WINDOWS
        for index, encoding in enumerate(self._tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            ids = encoding.ids[:limit]
            for start in range(0, max(len(ids), 1), self._content):
                rows.append(self._prefix + ids[start : start + self._content] + self._suffix)
                owners.append(index)
        order = sorted(range(len(rows)), key=lambda r: len(rows[r]))
        sums = np.zeros((len(texts), self.dims), dtype=np.float64)
        counts = np.zeros(len(texts), dtype=np.float64)
        owner_of = np.asarray(owners)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            token_sums, token_counts = self._run([rows[r] for r in batch])
            np.add.at(sums, owner_of[batch], token_sums)
            np.add.at(counts, owner_of[batch], token_counts)
        vectors = sums / counts[:, None]
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.tolist()

    def _run(self, rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Sum of token vectors and token count of each row (one window each)."""
        width = max(len(row) for row in rows)
        ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        [hidden] = self._session.run([self._output], feeds)
        counts = mask.sum(axis=1).astype(np.float64)
        if hidden.ndim == 2:  # a model that pools inside the graph: weigh its window by length
            return hidden.astype(np.float64) * counts[:, None], counts
        return (hidden.astype(np.float64) * mask[:, :, None]).sum(axis=1), counts
