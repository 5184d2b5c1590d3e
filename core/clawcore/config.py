"""Configuration: ``$CLAWCORE_HOME/clawcore.yaml``, validated with JSON Schema.

The schema is assembled from the ``config_schema`` hook: the core owns only
the ``plugins`` and ``workspace`` keys, every builtin and external plugin
declares its own section. Unknown keys are errors with a "did you mean" hint,
and every problem is reported on one line with its key path.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pluggy
import yaml

from clawcore.errors import ConfigError
from clawcore.plugins import call_plugin

__all__ = [
    "Config",
    "build_schema",
    "clawcore_home",
    "load_config",
    "parse_duration",
    "parse_size",
    "read_config_file",
]

CONFIG_FILE = "clawcore.yaml"

PLUGINS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Which plugins load.",
    "properties": {
        "load": {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "default": None,
            "description": "Allowlist of external plugins; null loads all, [] none.",
        },
        "disable": {"type": "array", "items": {"type": "string"}, "default": []},
        "required": {"type": "array", "items": {"type": "string"}, "default": []},
        "trace": {"type": "boolean", "default": False},
    },
}

ROOT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "plugins": PLUGINS_SCHEMA,
        "workspace": {
            "type": "string",
            "default": "workspace",
            "description": "Memory workspace; relative paths are under $CLAWCORE_HOME, ~/... under your home.",
        },
        "timezone": {
            "type": ["string", "null"],
            "format": "timezone",
            "default": None,
            "description": "IANA zone for daily notes; null uses the machine's zone.",
        },
    },
}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_size(value: str | int) -> int:
    """Bytes in a Docker-style size (``512m``, ``2g``, ``1024``, ``64KiB``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value!r} is negative, not a size like 512m")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size like 512m")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


#: The longest duration any setting takes: beyond it, clocks and waits overflow (``threading.Event.wait(1e12)``).
_LONGEST = 366 * 24 * 3600.0


def parse_duration(value: str | float) -> float:
    """Seconds in a duration (``30s``, ``500ms``, ``2m``, ``1h``, or a number of seconds), at most a year."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value!r} is negative, not a duration like 30s")
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration like 30s")
        unit = match.group(2).lower() if match.group(2) else None
        seconds = float(match.group(1)) * _SECONDS[unit]
    if seconds > _LONGEST:
        raise ValueError(f"{value!r} is longer than a year, the longest duration a setting takes")
    return seconds


_format_checker = jsonschema.FormatChecker()


@_format_checker.checks("size", raises=ValueError)
def _is_size(value: object) -> bool:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        parse_size(value)
    return True


@_format_checker.checks("duration", raises=ValueError)
def _is_duration(value: object) -> bool:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        parse_duration(value)
    return True


@_format_checker.checks("positive-duration", raises=ValueError)
def _is_positive_duration(value: object) -> bool:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and parse_duration(value) <= 0:
        raise ValueError(f"{value!r} is not above 0")
    return True


@_format_checker.checks("timezone", raises=ValueError)
def _is_timezone(value: object) -> bool:
    if isinstance(value, str):
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{value!r} is not a known IANA zone") from exc
    return True


def _ascending(validator: Any, keys: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """``x-ascending``: the listed keys of an object (``true``: the items of an array) must not decrease;
    ``{"keys": [...], "strict": true}``: each must be below the next.

    A key the instance leaves out counts with its schema default, so ``{warn: 5}`` under a default
    ``confirm: 0.8`` is caught. JSON Schema cannot compare two values; plugins use this keyword for
    ladders and ranges so that ``clawcore config check`` catches what start-up would reject.
    """
    strict = isinstance(keys, dict) and bool(keys.get("strict"))
    keys = keys.get("keys") if isinstance(keys, dict) else keys
    if keys is True and validator.is_type(instance, "array"):
        named = [(f"[{i}]", value) for i, value in enumerate(instance)]
    elif isinstance(keys, list) and validator.is_type(instance, "object"):
        properties = schema.get("properties", {})
        # A value that fails its own schema is reported there; comparing it too would say it twice.
        named = [(key, instance.get(key, properties.get(key, {}).get("default"))) for key in keys
                 if validator.evolve(schema=properties.get(key, {})).is_valid(
                     instance.get(key, properties.get(key, {}).get("default")))]
    else:
        return
    named = [(name, value) for name, value in named
             if isinstance(value, (int, float)) and not isinstance(value, bool)]
    for (low_name, low), (high_name, high) in pairwise(named):
        if strict and high <= low:
            yield jsonschema.ValidationError(f"{low_name} ({low}) must be below {high_name} ({high})")
        elif high < low:
            yield jsonschema.ValidationError(
                f"{high_name} ({high}) is below {low_name} ({low}); each must be at least the one before")


def _at_least(validator: Any, minimum: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """``x-at-least``: a size or duration (by the schema's ``format``) no smaller than this one (``6m``, ``1s``).

    A size of 0 means "no limit" to a container engine: a limit written as 0 would turn itself off.
    """
    parse = parse_duration if str(schema.get("format", "")).endswith("duration") else parse_size
    try:
        value, floor = parse(instance), parse(minimum)
    except (TypeError, ValueError):
        return  # the format check names a value that does not parse
    if value < floor:
        yield jsonschema.ValidationError(f"{instance!r} is below the least allowed, {minimum}")


def _whole_number(checker: Any, instance: object) -> bool:
    # JSON Schema counts 1.0 as an integer; a setting that counts things (threads, tokens) is written 1.
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"x-ascending": _ascending, "x-at-least": _at_least},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number))


def clawcore_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CLAWCORE_HOME``, default ``~/.clawcore``."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("CLAWCORE_HOME") or Path.home() / ".clawcore").expanduser()


def home_path(home: Path, value: str | os.PathLike[str]) -> Path:
    """A path from the config: ``~`` expanded, absolute as written, else under the home."""
    return home / Path(value).expanduser()


@dataclass(frozen=True)
class Config:
    """The effective configuration: the user's file with every default filled in."""

    data: Mapping[str, Any]
    home: Path
    path: Path | None = None
    #: The file's contents as written, before defaults (``config show --raw``).
    raw: Mapping[str, Any] = field(default_factory=dict)

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at a dotted key path (``"sandbox.docker.memoryLimit"``)."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def section(self, dotted: str) -> Mapping[str, Any]:
        value = self.get(dotted, {})
        return value if isinstance(value, Mapping) else {}

    @property
    def workspace(self) -> Path:
        return home_path(self.home, str(self.data.get("workspace", "workspace")))


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping (YAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse the YAML file; a missing or empty file is an empty config."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=str(path)) from exc
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}invalid YAML: {problem}", path=str(path)) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"the top level must be a mapping of sections, not {_type_name(data)}",
            path=str(path),
        )
    if problem := _alias_problem(data):
        raise ConfigError(f"invalid YAML: {problem}", path=str(path))
    return data


#: Values a config may expand to through aliases; a real one has a few hundred.
_MAX_VALUES = 100_000


def _alias_problem(data: Any) -> str | None:
    """Aliases that make the config endless (``x: &a [*a]``) or explode it (nested ``*a`` lists)."""
    count = 0
    open_now: set[int] = set()

    def walk(value: Any) -> str | None:
        nonlocal count
        count += 1
        if count > _MAX_VALUES:
            return f"aliases expand it to more than {_MAX_VALUES} values"
        if not isinstance(value, dict | list):
            return None
        if id(value) in open_now:
            return "an alias refers to a value that contains it (a recursive alias)"
        open_now.add(id(value))
        try:
            for item in value.values() if isinstance(value, dict) else value:
                if problem := walk(item):
                    return problem
        finally:
            open_now.discard(id(value))
        return None

    return walk(data)


def build_schema(pm: pluggy.PluginManager | None) -> dict[str, Any]:
    """The whole schema: the core's keys plus every plugin's section."""
    schema = copy.deepcopy(ROOT_SCHEMA)
    owners: dict[str, str] = dict.fromkeys(ROOT_SCHEMA["properties"], "clawcore")
    sections: list[tuple[str, str, Any]] = []
    if pm is None:
        return schema
    for impl in pm.hook.config_schema.get_hookimpls():
        try:
            answers = call_plugin(pm, "config_schema", impl)
        except Exception as exc:  # a plugin whose settings cannot be checked does not run unchecked
            first_line = (str(exc).splitlines() or [""])[0]
            raise ConfigError(
                f"plugin {impl.plugin_name!r} failed to declare its config section ({type(exc).__name__}: "
                f"{first_line}); fix or uninstall it, or block it with CLAWCORE_DISABLE_PLUGINS={impl.plugin_name}"
            ) from exc
        fragments = answers[0] if answers else None
        if not fragments:
            continue
        if not isinstance(fragments, Mapping):
            raise ConfigError(f"plugin {impl.plugin_name!r} declared its config sections as "
                              f"{_type_name(fragments)}, not a mapping of section paths to schemas")
        for dotted, fragment in fragments.items():
            plugin = impl.plugin_name
            if not isinstance(dotted, str) or not re.fullmatch(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*", dotted):
                raise ConfigError(f"plugin {plugin!r} declared a config section named {dotted!r}, "
                                  "not a dotted path like 'myplugin' or 'sandbox.mybackend'")
            if not isinstance(fragment, Mapping):
                raise ConfigError(f"plugin {plugin!r} declared its config section {dotted!r} as "
                                  f"{_type_name(fragment)}, not a JSON Schema object")
            try:
                _Validator.check_schema(fragment)
            except jsonschema.SchemaError as exc:
                raise ConfigError(f"plugin {plugin!r} declared its config section {dotted!r} with an invalid "
                                  f"schema: {exc.message}") from None
            if dotted in owners:
                raise ConfigError(f"config section {dotted!r} is declared by both {owners[dotted]!r} and {plugin!r}")
            owners[dotted] = plugin
            sections.append((dotted, plugin, _closed(fragment)))
    # Parents before children, whatever order the plugins came in: a section may only go where its parent
    # takes plugin sections (``sandbox.docker``), never inside or over another's (``tools.policy``).
    for dotted, plugin, fragment in sorted(sections, key=lambda entry: entry[0].count(".")):
        _graft(schema, dotted, fragment, plugin, owners)
    return schema


def _closed(fragment: Any) -> Any:
    """``fragment`` with ``additionalProperties: false`` wherever an object lists its ``properties`` and says
    nothing of others: an unknown key in a section is an error (a typo would otherwise be ignored)."""
    if isinstance(fragment, list):
        return [_closed(item) for item in fragment]
    if not isinstance(fragment, Mapping):
        return fragment
    closed = {key: _closed(value) if key in _SUBSCHEMA_KEYS else value for key, value in fragment.items()}
    if isinstance(closed.get("properties"), Mapping):
        closed["properties"] = {key: _closed(value) for key, value in closed["properties"].items()}
        if not _OPEN_KEYWORDS & closed.keys():
            closed["additionalProperties"] = False
    return closed


#: Keywords with which a schema says itself what other keys an object takes (or composes its keys from
#: several schemas): ``_closed`` leaves such an object as its author wrote it.
_OPEN_KEYWORDS = {"additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf",
                  "if", "then", "else", "not", "dependentSchemas", "$ref", "$dynamicRef"}


#: Keywords whose values are schemas that ``_closed`` walks into. Not ``anyOf``, ``if`` and the like: their
#: ``properties`` often constrain a few keys of an object that has others.
_SUBSCHEMA_KEYS = {"items", "additionalProperties"}


def _graft(schema: dict[str, Any], dotted: str, fragment: Mapping[str, Any], plugin: str,
           owners: Mapping[str, str]) -> None:
    """Put ``plugin``'s section at ``dotted``: under the root, or where its parent takes plugin sections."""
    node = schema
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault("properties", {}).setdefault(part, {"type": "object", "additionalProperties": False})
    inside = next((".".join(parts[:depth]) for depth in range(len(parts) - 1, 0, -1)
                   if ".".join(parts[:depth]) in owners), None)
    if inside is not None and node.get("x-plugin-sections") is not True:
        raise ConfigError(f"plugin {plugin!r} may not declare {dotted!r}: it is inside {inside!r}, "
                          f"the section of {owners[inside]!r}")
    if inside is not None and parts[-1] in node.get("properties", {}):
        raise ConfigError(f"plugin {plugin!r} may not declare {dotted!r}: {inside!r} ({owners[inside]!r}) "
                          f"already has a key {parts[-1]!r}")
    node.setdefault("properties", {})[parts[-1]] = copy.deepcopy(dict(fragment))


def load_config(
    home: Path | None = None,
    *,
    path: Path | None = None,
    data: Mapping[str, Any] | None = None,
    pm: pluggy.PluginManager | None = None,
) -> Config:
    """Read, validate and complete the configuration.

    :param home: ``$CLAWCORE_HOME``; default from the environment.
    :param path: the YAML file; default ``home/clawcore.yaml``.
    :param data: an already-parsed config (the Python API); wins over ``path``.
    :param pm: the plugin manager whose plugins contribute schema sections.
    :raises ConfigError: with every problem, one line each, key path first.
    """
    home = home or clawcore_home()
    if data is None:
        path = path or home / CONFIG_FILE
        raw = read_config_file(path)
    else:
        raw = copy.deepcopy(dict(data))
    schema = build_schema(pm)
    checked = _without_orphans(raw, schema)
    problems = validate(checked, schema)
    if problems:
        raise ConfigError(problems, path=str(path) if path else "")
    effective = copy.deepcopy(checked)
    fill_defaults(effective, schema)
    if os.path.isdir(home / "~"):
        # Earlier versions put a setting written `~/x` at `$CLAWCORE_HOME/~/x`; it now means the user's home.
        warnings.warn(f"{home / '~'} is a folder named ~: settings written ~/... (workspace, audit.path, "
                      "audit.keys) now mean your home directory; move what it holds there", RuntimeWarning,
                      stacklevel=2)
    return Config(effective, home, path, raw)


def _without_orphans(data: Mapping[str, Any], schema: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """``data`` less the sections of plugins that are not there (uninstalled or disabled), each with a warning.

    A section is a mapping under a key the schema does not know. One that looks like a known key
    (``memroy``) is a typo and stays, for ``validate`` to name; a setting that is not a mapping stays too.
    """
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or schema.get("additionalProperties") is not False:
        return dict(data)
    # Only where a plugin's section can stand: at the top, and in sections that take them (`sandbox.docker`,
    # `memory.embeddings.local`). Anywhere else an unknown key is a mistake for `validate` to name.
    takes_sections = not where or schema.get("x-plugin-sections") is True
    kept: dict[str, Any] = {}
    for key, value in data.items():
        if key in properties:
            kept[key] = _without_orphans(value, properties[key], f"{where}{key}.") \
                if isinstance(value, Mapping) else value
        elif takes_sections and isinstance(value, Mapping) and \
                not difflib.get_close_matches(str(key), list(properties), n=1):
            warnings.warn(f"{where}{key}: a section no installed or enabled plugin declares; ignored "
                          "(remove it, or install or enable its plugin)", RuntimeWarning, stacklevel=3)
        else:
            kept[key] = value
    return kept


def validate(data: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Every problem with ``data``, one line each, sorted by key path."""
    validator = _Validator(schema, format_checker=_format_checker)
    lines: list[str] = []
    nonfinite: set[tuple[Any, ...]] = set()
    for path, value in _leaves(data):
        # NaN (YAML ``.nan``): JSON Schema counts it a number, and every comparison with it is false,
        # so a threshold of NaN would never be reached; an infinity turns the sums it enters into NaN.
        if isinstance(value, float) and not math.isfinite(value):
            nonfinite.add(tuple(path))
            written = ".nan is not a number" if math.isnan(value) else f"{'-' if value < 0 else ''}.inf is not a finite number"
            lines.append(f"{_key_path(iter(path))}: {written}")
        elif isinstance(value, str) and (placeholder := _PLACEHOLDER.fullmatch(value.strip())):
            # Named, not quoted: a default after ``:-`` may be the secret itself.
            lines.append(f"{_key_path(iter(path))}: ${{{placeholder['name']}}} would be used as written: the config expands no "
                         "environment variables; for a secret, leave it out and set the variable its setting "
                         "reads (apiKeyEnv, CLAWCORE_GATEWAY_TOKEN)")
    for error in validator.iter_errors(data):
        if tuple(error.absolute_path) not in nonfinite:  # said once, above
            lines.extend(_describe(error))
    return sorted(dict.fromkeys(lines))


#: A shell-style ``${NAME}`` (or ``${NAME:-default}``) written to be expanded, which the config does
#: not do: an API key would be sent as the text ``${OPENAI_API_KEY}``.
_PLACEHOLDER = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}")


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every value that is not a mapping or a list, with its key path."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path, value


def _key_path(parts: Iterator[Any] | Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _describe(error: jsonschema.ValidationError) -> list[str]:
    where = _key_path(error.absolute_path)
    prefix = "" if where == "(top level)" else where + "."
    from clawcore.security.secrets import is_secret_key

    # A value under a credential-named key (the names `config show` masks) is described, never shown.
    if error.validator != "additionalProperties" and any(is_secret_key(str(p)) for p in error.absolute_path):
        if error.validator == "type":
            expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            return [f"{where}: expected {' or '.join(expected)}, got {_type_name(error.instance)} (a secret: not shown)"]
        return [f"{where}: the value fails the {error.validator!r} check (a secret: not shown)"]
    if isinstance(error.schema, Mapping) and isinstance(error.schema.get("x-error"), str):
        # A schema's own wording for its failures (``x-error``) says more than a regular expression;
        # ``x-conceal`` keeps the value out of it (a key pasted where a variable name belongs).
        shown = "the value (not shown: it may be a secret)" if error.schema.get("x-conceal") else _short(error.instance)
        return [f"{where}: {shown} {error.schema['x-error']}"]
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extras = [key for key in error.instance if key not in known]
        lines = []
        for key in extras:
            hint = difflib.get_close_matches(str(key), known, n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else (
                f" (known keys: {', '.join(known)})" if known else ""
            )
            lines.append(f"{prefix}{key}: unknown key{suggestion}")
        return lines
    if error.validator == "format":
        kind = error.validator_value
        if "longer than a year" in str(error.cause or ""):
            return [f"{where}: {error.cause}"]
        example = {"size": "a size like 512m", "duration": "a duration like 30s",
                   "positive-duration": "a duration above 0 like 30s",
                   "timezone": "a known IANA zone like Europe/Berlin"}.get(
            kind, f"a valid {kind}"
        )
        return [f"{where}: {error.instance!r} is not {example}"]
    if error.validator == "type":
        expected = error.validator_value
        names = expected if isinstance(expected, list) else [expected]
        got = "nothing (the key has no value)" if error.instance is None else \
            f"{_type_name(error.instance)} {_short(error.instance)}"
        return [f"{where}: expected {' or '.join(names)}, got {got}"]
    if error.validator == "enum":
        choices = ", ".join(repr(c) for c in error.validator_value)
        return [f"{where}: {_short(error.instance)} is not one of {choices}"]
    bound = {"minimum": "at least", "exclusiveMinimum": "above", "maximum": "at most",
             "exclusiveMaximum": "below"}.get(str(error.validator))
    if bound is not None:
        return [f"{where}: {_short(error.instance)} is out of range: it must be {bound} {error.validator_value}"]
    return [f"{where}: {error.message}"]


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "null"
    return type(value).__name__


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fill_defaults(data: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Fill missing keys from ``default`` values, descending into sub-objects."""
    for key, sub in schema.get("properties", {}).items():
        if key not in data:
            if "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            elif sub.get("type") == "object" and "properties" in sub:
                data[key] = {}
        if isinstance(data.get(key), dict) and "properties" in sub:
            fill_defaults(data[key], sub)
