"""Fixtures for PRISM's tests: a runtime with the prism plugin registered on a fresh home."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import clawcore_prism
from clawcore_prism.plugin import _MONITORS


@pytest.fixture
def make_runtime(clawcore_home: Path, plugin_manager: Any, register_plugin: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """``make_runtime(prism_section=None)``: a started Runtime with prism registered; audit events collected."""
    from clawcore.runtime import Runtime

    register_plugin(clawcore_prism, name="prism")
    made: list[Any] = []

    def make(prism: dict[str, Any] | None = None) -> Any:
        rt = Runtime(clawcore_home, config={"prism": prism or {}}, plugin_manager=plugin_manager)
        rt.events = []  # type: ignore[attr-defined]
        original = rt.audit

        def audit(kind: str, data: Any, *, session_id: str = "") -> None:
            rt.events.append((kind, dict(data), session_id))  # type: ignore[attr-defined]
            original(kind, data, session_id=session_id)

        rt.audit = audit  # type: ignore[method-assign]
        rt.start()
        made.append(rt)
        return rt

    yield make
    for rt in made:
        rt.close()
    _MONITORS.pop(clawcore_home.resolve(), None)
