"""Record hook calls in order, to assert when hooks fire."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

__all__ = ["HookCall", "HookRecorder"]


@dataclass(frozen=True)
class HookCall:
    """One hook call: its name and keyword arguments."""

    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class HookRecorder:
    """Records every hook call made through a plugin manager, in order.

    Uses pluggy's public ``add_hookcall_monitoring``; call :meth:`close` (the
    fixture does) to stop recording.
    """

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.calls: list[HookCall] = []
        self._undo: Callable[[], None] = pm.add_hookcall_monitoring(self._before, self._after)

    def _before(self, hook_name: str, hook_impls: Any, kwargs: Mapping[str, Any]) -> None:
        self.calls.append(HookCall(hook_name, dict(kwargs)))

    def _after(self, outcome: Any, hook_name: str, hook_impls: Any, kwargs: Any) -> None:
        pass

    @property
    def names(self) -> list[str]:
        """Hook names in call order, consecutive repeats collapsed
        (the facade calls each plugin's implementation separately)."""
        names: list[str] = []
        for call in self.calls:
            if not names or names[-1] != call.name:
                names.append(call.name)
        return names

    def of(self, name: str) -> list[HookCall]:
        return [call for call in self.calls if call.name == name]

    def clear(self) -> None:
        self.calls.clear()

    def close(self) -> None:
        self._undo()
