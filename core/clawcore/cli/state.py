"""What every command shares: the home folder, its plugin manager and a lazily built runtime."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from clawcore.config import clawcore_home, read_config_file
from clawcore.errors import ClawcoreError
from clawcore.plugins import PluginSettings, get_plugin_manager

if TYPE_CHECKING:
    from clawcore.runtime import ConfirmHandler, Runtime

__all__ = ["CliState", "build_plugin_manager"]


#: What to load when the config cannot say what is disabled: no external plugin (the error is reported by
#: whichever command loads the config; a plugin the user disabled must never be imported meanwhile).
_NONE_EXTERNAL = {"load": []}


def _plugin_section(home: Path) -> Any:
    try:
        raw = read_config_file(home / "clawcore.yaml")
    except ClawcoreError:
        return _NONE_EXTERNAL
    section = raw.get("plugins")
    if section is None:
        return None
    if not isinstance(section, dict):
        return _NONE_EXTERNAL
    try:
        PluginSettings.from_sources(section, {})
    except ClawcoreError:
        # Reported with its key path when the config is loaded; a readable block list still holds.
        disable = section.get("disable")
        if disable is None or isinstance(disable, list) and all(isinstance(d, str) for d in disable):
            return {"disable": disable or []}
        return _NONE_EXTERNAL
    return section


def build_plugin_manager(home: Path) -> pluggy.PluginManager:
    """A plugin manager from the home's ``plugins`` section and the environment."""
    return get_plugin_manager(PluginSettings.from_sources(_plugin_section(home), os.environ))


class CliState:
    """Carried in ``click.Context.obj``.

    :param home: ``--home`` or ``$CLAWCORE_HOME``.
    :param built: ``(home, plugin manager)`` that ``main`` built before parsing (a bare manager is the
        environment's home's); rebuilt when ``home`` is another one.
    """

    def __init__(self, home: Path | None,
                 built: tuple[Path, pluggy.PluginManager] | pluggy.PluginManager | None = None) -> None:
        self.home = (home or clawcore_home()).expanduser()
        built_home, pm = built if isinstance(built, tuple) else (clawcore_home(), built)
        self._pm = pm if self.home == built_home else None
        self._runtime: Runtime | None = None

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        if self._pm is None:
            self._pm = build_plugin_manager(self.home)
        return self._pm

    def runtime(self, confirm: ConfirmHandler | None = None) -> Runtime:
        """The runtime for this home, built on first use (config validated then)."""
        if self._runtime is None:
            from clawcore.runtime import Runtime

            self._runtime = Runtime(self.home, plugin_manager=self.plugin_manager, confirm=confirm)
        elif confirm is not None:
            self._runtime.confirm = confirm
        return self._runtime
