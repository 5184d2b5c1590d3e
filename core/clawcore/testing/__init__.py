"""Test support for clawcore and its plugins.

Installed as a pytest plugin (``pytest11`` entry point ``clawcore``), so the
fixtures in :mod:`clawcore.testing.pytest_plugin` are available in any test
suite once clawcore is installed, and plugin authors subclass the contract
suites in :mod:`clawcore.testing.contracts` to prove their implementation.
"""

from __future__ import annotations

from clawcore.testing.recorder import HookCall, HookRecorder

__all__ = ["HookCall", "HookRecorder"]
