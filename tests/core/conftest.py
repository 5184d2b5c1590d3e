from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import importlib_metadata
import pytest


@pytest.fixture
def fake_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """Install a throwaway distribution with a `clawcore` entry point onto sys.path.

    ``fake_distribution(name, source)`` writes module ``<name>_mod`` with
    ``source`` and a dist-info declaring the entry point ``name``.
    """
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    made: list[str] = []

    def make(name: str, source: str) -> Path:
        module = f"{name}_mod"
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        info = site / f"fake_{name}-1.2.3.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-{name}\nVersion: 1.2.3\n")
        (info / "entry_points.txt").write_text(f"[clawcore]\n{name} = {module}\n")
        made.append(module)
        importlib_metadata.distributions.cache_clear() if hasattr(importlib_metadata.distributions, "cache_clear") else None
        return site

    yield make
    for module in made:
        sys.modules.pop(module, None)
