"""The plugin manager factory.

Builtins are ordinary plugin modules registered first; external plugins come
from the ``clawcore`` entry-point group. Nothing happens at import time: every
caller (the runtime, a test) builds its own manager with
:func:`get_plugin_manager`.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import importlib_metadata
import pluggy

from clawcore import hookspecs
from clawcore.errors import ConfigError, PluginError

__all__ = [
    "BUILTIN_PLUGINS",
    "PluginInfo",
    "PluginSettings",
    "call_plugin",
    "get_plugin_manager",
    "plugin_infos",
]

ENTRY_POINT_GROUP = hookspecs.PROJECT

#: Builtin plugin name -> module. Registered in this order, before externals.
BUILTIN_PLUGINS: Mapping[str, str] = {
    # First registered = last called in transform chains: redaction sees every plugin's final text.
    "redaction": "clawcore.security.redaction_plugin",
    "memory": "clawcore.memory.plugin",
    "policy": "clawcore.security.plugin",
    "audit": "clawcore.security.audit_plugin",
    "sandbox-local": "clawcore.sandbox.plugin",
    "tools": "clawcore.agent.plugin",
    "gateway": "clawcore.gateway.plugin",
}


@dataclass(frozen=True)
class PluginSettings:
    """Which plugins to load: the ``plugins`` config section merged with the environment.

    ``load`` is an allowlist of external plugins (None = all, empty = none);
    ``disable`` blocks plugins by name before they are imported; ``required``
    plugins must be present or start-up fails closed.
    """

    load: tuple[str, ...] | None = None
    disable: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    trace: bool = False

    @classmethod
    def from_sources(
        cls, section: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None
    ) -> PluginSettings:
        """Combine the config's ``plugins`` section with ``CLAWCORE_*`` variables.

        The environment wins for ``load``; ``disable`` and ``required`` are unions.
        """
        from clawcore.config import PLUGINS_SCHEMA, validate

        section = section or {}
        problems = validate({"plugins": dict(section)}, {"type": "object", "properties": {"plugins": PLUGINS_SCHEMA}})
        if problems:
            raise ConfigError(problems)
        environ = os.environ if environ is None else environ
        load: tuple[str, ...] | None = None
        if section.get("load") is not None:
            load = tuple(section["load"])  # type: ignore[arg-type]
        if "CLAWCORE_LOAD_PLUGINS" in environ:
            load = _split(environ["CLAWCORE_LOAD_PLUGINS"])
        disable = tuple(section.get("disable") or ()) + _split(
            environ.get("CLAWCORE_DISABLE_PLUGINS", "")
        )
        required = tuple(section.get("required") or ())
        trace = environ.get("CLAWCORE_TRACE_PLUGINS", "") not in ("", "0") or bool(
            section.get("trace", False)
        )
        return cls(load, tuple(dict.fromkeys(disable)), tuple(dict.fromkeys(required)), trace)


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin, as ``clawcore plugins`` lists it."""

    name: str
    distribution: str
    version: str
    builtin: bool
    hooks: tuple[str, ...] = field(default=())


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


#: The plugins published with clawcore: for these the package to install is known.
FIRST_PARTY = ("embeddings_local", "embeddings_openai", "models_openai", "prism", "sandbox_docker")


def _distribution_hint(name: str) -> str:
    if name in FIRST_PARTY:
        return "pip install clawcore-" + name.replace("_", "-")
    return "install the package that provides it (no package here has an entry point of that name)"


def get_plugin_manager(
    settings: PluginSettings | None = None,
    *,
    load_entrypoints: bool = True,
    builtins: bool = True,
) -> pluggy.PluginManager:
    """Build a plugin manager with the builtins and the installed plugins.

    :param settings: allow/deny/required/trace switches; default from the
        environment alone.
    :param load_entrypoints: False for a manager with builtins only (tests).
    :param builtins: False for a manager with no plugins at all.
    :raises PluginError: a required plugin is missing, blocked or broken.
    """
    settings = settings or PluginSettings.from_sources()
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in settings.disable:
        # Blocked before anything is imported: a disabled plugin never runs code.
        pm.set_blocked(name)

    if builtins:
        for name, module_name in BUILTIN_PLUGINS.items():
            if pm.is_blocked(name):
                continue
            pm.register(importlib.import_module(module_name), name=name)

    if load_entrypoints:
        _load_entrypoints(pm, settings)
        installed = {ep.name for ep in _entry_points()}
        for name in settings.load or ():
            if name not in installed:  # a typo here turns off every plugin, the monitor included
                close = difflib.get_close_matches(name, installed, n=1)
                warnings.warn(f"plugins.load names {name!r}, which no installed plugin is called"
                              + (f" (did you mean {close[0]!r}?)" if close else ""), RuntimeWarning, stacklevel=2)

    for name in settings.required:
        if pm.get_plugin(name) is None:
            if pm.is_blocked(name):
                raise PluginError(
                    f"required plugin {name!r} is disabled (plugins.disable or "
                    f"CLAWCORE_DISABLE_PLUGINS); remove it from one list or the other"
                )
            if settings.load is not None and name not in settings.load and load_entrypoints and any(
                    ep.name == name for ep in _entry_points()):
                raise PluginError(
                    f"required plugin {name!r} is installed but not in the allowlist (plugins.load or "
                    f"CLAWCORE_LOAD_PLUGINS); add it there"
                )
            raise PluginError(f"required plugin {name!r} is not installed: {_distribution_hint(name)}")

    pm.check_pending()
    if settings.trace:
        pm.add_hookcall_monitoring(_trace_before, _trace_after)
    return pm


def call_plugin(pm: pluggy.PluginManager, name: str, impl: pluggy.HookImpl, **kwargs: Any) -> list[Any]:
    """Call hook ``name`` on ``impl``'s plugin alone, through pluggy: tracing and wrappers still apply.

    Used where each plugin's answer or failure must be handled on its own.
    """
    others = [i.plugin for i in getattr(pm.hook, name).get_hookimpls() if i.plugin is not impl.plugin]
    return pm.subset_hook_caller(name, remove_plugins=others)(**kwargs)  # type: ignore[no-any-return]


def _trace_before(hook_name: str, hook_impls: list[pluggy.HookImpl], kwargs: Mapping[str, object]) -> None:
    names = ", ".join(impl.plugin_name for impl in hook_impls)
    sys.stderr.write(f"clawcore trace: {hook_name} -> [{names}]\n")


def _trace_after(
    outcome: pluggy.Result[object],
    hook_name: str,
    hook_impls: list[pluggy.HookImpl],
    kwargs: Mapping[str, object],
) -> None:
    failed = outcome.exception
    state = f"raised {type(failed).__name__}" if failed is not None else "ok"
    sys.stderr.write(f"clawcore trace: {hook_name} {state}\n")


def _load_entrypoints(pm: pluggy.PluginManager, settings: PluginSettings) -> None:
    for ep in _entry_points():
        if pm.is_blocked(ep.name):
            continue
        if settings.load is not None and ep.name not in settings.load:
            continue
        if pm.get_plugin(ep.name) is not None:
            # A builtin's name: the builtin stays (an outside package cannot replace the policy by naming
            # itself after it), and the package is told why it is not loaded.
            warnings.warn(f"plugin {ep.name!r} ({_dist_label(ep)}) has the name of a builtin plugin; skipped "
                          "(give its entry point another name)", RuntimeWarning, stacklevel=3)
            continue
        step = "failed to import"
        try:
            plugin = ep.load()
            step = "is not a valid plugin"
            pm.register(plugin, name=ep.name)
            # Hooks pluggy does not know (a typo) or with argument names the spec lacks: this plugin's fault.
            _check_hooks(pm, plugin)
        except (Exception, SystemExit) as exc:  # an optional plugin may be broken (or exit on import)
            with contextlib.suppress(ValueError):
                pm.unregister(name=ep.name)
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            # pluggy puts the reason on later lines ("Argument(s) {'extra'} are declared in the hookimpl
            # but can not be found in the hookspec"): fold them into the one line; a duplicate registration's
            # later line is the whole registry, which says nothing more.
            reason = lines[0] if isinstance(exc, ValueError) and lines else "; ".join(lines)
            message = f"plugin {ep.name!r} ({_dist_label(ep)}) {step}: {type(exc).__name__}: {reason}"
            if ep.name in settings.required:
                raise PluginError(message + "; it is required, so start-up stops") from exc
            warnings.warn(message + "; skipped", RuntimeWarning, stacklevel=3)
            continue


def _check_hooks(pm: pluggy.PluginManager, plugin: object) -> None:
    """``check_pending`` for one plugin: raises ``PluginValidationError`` for a hook no spec names."""
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.spec is None:
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin and not impl.optionalhook:
                    raise pluggy.PluginValidationError(plugin, f"unknown hook {caller.name!r}")


def _entry_points() -> Iterable[importlib_metadata.EntryPoint]:
    seen: set[str] = set()
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in seen:  # the same distribution found twice on sys.path
            seen.add(ep.name)
            yield ep


def _dist_label(ep: importlib_metadata.EntryPoint) -> str:
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else ep.value


def plugin_infos(pm: pluggy.PluginManager) -> list[PluginInfo]:
    """Describe every registered plugin: name, distribution, version, hooks."""
    dists = {ep.name: ep.dist for ep in _entry_points()}
    core = importlib_metadata.version("clawcore") if _has_dist("clawcore") else "0+unknown"
    infos = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # blocked
            continue
        hooks = tuple(sorted(caller.name for caller in pm.get_hookcallers(plugin) or ()))
        builtin = name in BUILTIN_PLUGINS and isinstance(plugin, ModuleType) and (
            plugin.__name__ == BUILTIN_PLUGINS[name]
        )
        dist = dists.get(name)
        if builtin:
            infos.append(PluginInfo(name, "clawcore", core, True, hooks))
        elif dist is not None:
            infos.append(PluginInfo(name, dist.name, dist.version, False, hooks))
        else:
            infos.append(PluginInfo(name, "", "", False, hooks))
    return infos


def _has_dist(name: str) -> bool:
    try:
        importlib_metadata.distribution(name)
    except importlib_metadata.PackageNotFoundError:
        return False
    return True
