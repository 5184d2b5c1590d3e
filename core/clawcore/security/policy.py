"""The tool policy: which tool calls run, which ask first, which never run.

One :class:`ToolPolicy` is built from the ``tools.policy`` config section and
decides every call through the builtin ``decide_tool_call``:

1. the tool's name against the user's ``deny``/``confirm``/``allow`` lists
   (globs and ``group:`` names; deny > confirm > allow), falling back to the
   profile's lists and, for a tool no list names, to ``confirm``;
2. per-tool argument rules (``{tool, argument, match|glob, action}``);
3. what the arguments do: ``bash`` commands through the command analysis
   (:mod:`clawcore.security.commands`), file tools through the filesystem
   policy, ``web_fetch`` through the network policy (static checks; the
   tool re-checks the resolved addresses when it connects).

The strictest answer wins. No profile switches step 3 off: a catastrophic
command is denied even under ``full``, and a risky one still asks.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawcore.config import Config
from clawcore.errors import ConfigError
from clawcore.hooks import strictest
from clawcore.security.commands import analyze, unread_positions
from clawcore.security.shell_vocabulary import FETCHERS, RUNNERS, SHELLS, WRAPPERS
from clawcore.types import Action, Decision, ToolCall

__all__ = ["GROUPS", "PROFILES", "ArgumentRule", "ToolPolicy"]

SOURCE = "policy"

#: Builtin policy groups; a plugin tool joins a group through ``Tool.groups``.
GROUPS: Mapping[str, tuple[str, ...]] = {
    "fs": ("read_file", "write_file", "edit_file"),
    "runtime": ("bash",),
    "web": ("web_fetch",),
    "memory": ("memory_search", "memory_get"),
}

#: Profile -> (allow, confirm, deny) name lists. Tools no list names are confirmed.
PROFILES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # The defaults: reading is allowed, anything that changes state or reaches out asks.
    "minimal": (("read_file", "group:memory"), ("write_file", "edit_file", "bash", "web_fetch"), ()),
    # Work on a code base: files, shell and web run without asking when the arguments look safe.
    "coding": (("group:fs", "group:runtime", "group:web", "group:memory"), (), ()),
    # A chat assistant: memory and reading; no shell at all.
    "messaging": (
        ("read_file", "group:memory"),
        ("write_file", "edit_file", "web_fetch"),
        ("group:runtime",),
    ),
    # Everything runs unless the argument checks object.
    "full": (("*",), (), ()),
}

_URL_IN_TEXT = re.compile(r"\bhttps?://[^\s'\"|;&)<>`\\]+", re.IGNORECASE)
_PATH_TOOLS = {"read_file": "read", "write_file": "write", "edit_file": "write", "memory_get": "read"}

POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Tool policy: which tool calls run, ask first, or never run.",
    "properties": {
        "profile": {
            "type": "string",
            "enum": sorted(PROFILES),
            "default": "minimal",
            "description": "Base lists: minimal (read only without asking), coding, messaging, full.",
        },
        "allow": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Tool-name globs or group:NAME that run without asking.",
        },
        "confirm": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Tool-name globs or group:NAME that ask first.",
        },
        "deny": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Tool-name globs or group:NAME that never run.",
        },
        "rules": {
            "type": "array",
            "default": [],
            "description": "Per-tool argument rules; each matching rule adds its action (strictest wins).",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["tool", "argument", "action"],
                "properties": {
                    "tool": {"type": "string", "description": "Tool-name glob or group:NAME."},
                    "argument": {"type": "string", "description": "Argument name (command, path, url ...)."},
                    "match": {
                        "type": "string",
                        "format": "regex",
                        "description": "Regular expression searched in the argument.",
                    },
                    "glob": {"type": "string", "description": "Glob the whole argument must match."},
                    "negate": {
                        "type": "boolean",
                        "default": False,
                        "description": "Apply the rule when the argument does NOT match.",
                    },
                    "action": {"type": "string", "enum": ["allow", "confirm", "deny"]},
                    "reason": {"type": "string", "default": ""},
                },
            },
        },
    },
}

TOOLS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Tools the agent may call and the policy that guards them.",
    "properties": {"policy": POLICY_SCHEMA},
}


#: Wildcard and rebinding DNS services: ``app.169-254-169-254.nip.io``, ``a9fea9fe.nip.io`` and
#: ``a9fea9fe.7f000001.rbndr.us`` resolve to the addresses they spell.
_WILDCARD_DNS = re.compile(r"^(.+?)[.-](?:nip\.io|sslip\.io|xip\.io|traefik\.me|localtest\.me|1u\.ms|rbndr\.us"
                           r"|rebind\.it|rebind\.network|backname\.io|nip\.direct)\.?$", re.IGNORECASE)
#: An address spelled inside a name: four decimal parts joined by dots or dashes, or eight hex digits.
_SPELLED_ADDRESS = re.compile(r"(?<![0-9])(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})(?![0-9])"
                              r"|(?<![0-9a-f])([0-9a-f]{8})(?![0-9a-f])")
#: Short names the metadata services answer to inside clouds (the long ones are in ``METADATA``).
_METADATA_NAMES = frozenset({"metadata", "instance-data", "instance-data.ec2.internal"})


def _names_metadata(url: str) -> bool:
    """Whether ``url`` names an instance-metadata service, in any spelling of its address.

    Link-local addresses (169.254.0.0/16, fe80::/10, IPv4-mapped too), Alibaba's 100.100.100.200, AWS's
    fd00:ec2::254, the services' host names, and wildcard-DNS names that spell such an address.
    """
    from urllib.parse import urlsplit

    from clawcore.security.network import parse_ip
    from clawcore.security.shell_vocabulary import METADATA

    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host in _METADATA_NAMES or METADATA.match(host):
        return True
    spelled = _WILDCARD_DNS.match(host)
    hosts = [host]
    if spelled:
        hosts += [".".join(m[:4]) if m[0] else str(ipaddress.IPv4Address(int(m[4], 16)))
                  for m in _SPELLED_ADDRESS.findall(spelled.group(1))]
    for name in hosts:
        address = parse_ip(name)
        mapped = getattr(address, "ipv4_mapped", None) or address
        if mapped is not None and (mapped.is_link_local or METADATA.match(str(mapped))):
            return True
    return False


#: Commands that move, delete or re-own what they name: for them the home folder itself is a runtime file.
_MOVERS = frozenset({"mv", "rm", "rmdir", "shred", "unlink", "ln", "chmod", "chown", "chattr", "chgrp", "truncate"})
_DELETERS = frozenset({"rm", "rmdir", "shred", "unlink"})
#: An absolute path written inside a longer word (``--config=/x/clawcore.yaml``, a ``python -c`` string).
_EMBEDDED_PATH = re.compile(r"(?<![\w.~/-])/[\w.@+~-]+(?:/[\w.@+~*?-]+)*")
#: A quoted path inside a word of code (``os.remove('../audit/audit.jsonl')``): one with a slash or a dot-dot,
#: after Perl's open modes too (``open F, "<../x"``).
_QUOTED_PATH = re.compile(r"""['"][<>+|]*\s*((?:\.\.?|~)?/?[\w.@+~-]*/[\w.@+~/*?-]*|\.\.)['"]""")
#: Commands that write into the folders they name (``tar -C ..``, ``cp -r x/. ..``): the home is not one.
_WRITERS = frozenset({"cp", "rsync", "tar", "unzip", "install", "ditto", "7z", "bsdtar"})
#: Commands that read or pack a whole tree (``grep -r x ..``, ``zip -r x.zip ..``): not the home's.
_RECURSIVE = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "zip"})
#: Code that deletes, moves or rewrites what it names: a path in it is as good as one given to ``rm``.
_DESTRUCTIVE_CODE = re.compile(r"rmtree|remove|unlink|rename|rmdir|replace|move|chmod|chown|truncate|"
                               r"write_(?:text|bytes)|open\([^)]*['\"][wa]", re.IGNORECASE)


def _reach(cmd: Any) -> list[str]:
    """Per word of ``cmd``, what beyond the runtime's files it may not name.

    ``"holders"``: the home and every folder that holds it (what is deleted or moved away: ``rm``,
    the sources of ``mv``); ``"home"``: the home itself (what is re-owned or linked, the target of
    ``mv``, where ``find -delete`` or ``find -exec rm`` starts, a folder ``cp``, ``tar -C`` or ``unzip -d``
    writes into); ``""``: nothing more.
    """
    count = len(cmd.words)
    if cmd.name in _DELETERS or cmd.name == "ln":  # a link to a folder above the home reaches into it
        return ["holders"] * count
    if cmd.name == "find" and (_find_acts(cmd.args) or cmd.stdout_to is not None and cmd.stdout_to.name == "xargs"):
        # Its start folders, before the first test; the tests choose what goes, so the folders
        # above the home are not all of it.
        starts = next((i for i, arg in enumerate(cmd.args) if arg.startswith(("-", "(", "!"))), len(cmd.args))
        return [""] + ["home"] * starts + [""] * (count - 1 - starts)
    if cmd.name == "mv":
        return ["holders"] * (count - 1) + ["home"]
    if cmd.name in ("rg", "ag", "ack") or cmd.name in _RECURSIVE and _recursive(cmd.args):
        # A whole tree searched: a folder that holds the home takes the home's files along. Not the pattern
        # (`grep -r /`, `grep -e '/.*'`): it names no folder.
        pattern = unread_positions(cmd.name, list(cmd.args))
        values = {i + 1 for i, a in enumerate(cmd.args) if a in ("-e", "--regexp", "-f", "--file")}
        return [""] + ["" if i in pattern | values else "holders" for i in range(count - 1)]
    if cmd.name in ("tar", "bsdtar", "rsync", "7z") or cmd.name == "cp" and _recursive(cmd.args, archive=True):
        return ["holders"] * count  # a whole tree packed or copied
    return ["home" if cmd.name in _MOVERS | _WRITERS | _RECURSIVE else ""] * count


def _starts_here(cmd: Any) -> bool:
    """A recursive search or a find that names no folder: it starts in the working directory."""
    operands = [a for a in cmd.args if not a.startswith("-")]
    if cmd.name == "find":
        return not cmd.args or cmd.args[0].startswith(("-", "(", "!"))
    if cmd.name in ("rg", "ag", "ack"):
        return len(operands) <= 1
    return cmd.name in ("grep", "egrep", "fgrep") and _recursive(cmd.args) and len(operands) <= 1


def _recursive(args: Sequence[str], *, archive: bool = False) -> bool:
    """``-r``/``-R``/``--recursive`` among ``args`` (and ``-a``/``--archive`` for ``cp``)."""
    flags = "rRa" if archive else "rR"
    return any(re.fullmatch(rf"-[A-Za-z]*[{flags}][A-Za-z]*", a) or a in ("--recursive", "--dereference-recursive")
               or archive and a == "--archive" for a in args)


def _every_command(command: str, env: Mapping[str, str] | None = None) -> list[Any]:
    """Every command ``command`` runs: its own, those of its substitutions, and those of text it runs as shell."""
    from clawcore.security import shell

    commands = list(shell.parse(command, env=env).commands)
    for cmd in commands:  # grows as it goes
        commands.extend(c for c in cmd.substitutions if c not in commands)
        if cmd.depth < 3:
            for text in _shell_text(cmd):
                commands.extend(shell.parse(text, env=env, depth=cmd.depth + 1).commands)
    return commands


#: A host written without a scheme, as fetchers take it (``curl evil.example/x``).
_SCHEMELESS = re.compile(r"(?:[a-z0-9-]+\.)+[a-z]{2,63}\.?(?::\d{1,5})?(?:[/?#].*)?", re.IGNORECASE)
#: Fetcher options whose value is no address (a file, a header, data, a user).
_FETCHER_VALUES = frozenset({
    "-o", "--output", "-O", "--output-document", "-d", "--data", "--data-binary", "--data-raw", "--data-urlencode",
    "-H", "--header", "-T", "--upload-file", "-u", "--user", "-A", "--user-agent", "-b", "--cookie", "-c",
    "--cookie-jar", "-K", "--config", "-w", "--write-out", "--cert", "--key", "--cacert", "-P",
    "--directory-prefix", "-i", "--input-file", "-a", "--append-output", "--post-file", "--body-file", "-F",
    "--form", "-D", "--dump-header", "--resolve", "--connect-to", "-x", "--proxy",
})
#: What a word written like a host more likely is: a file.
_FILE_SUFFIX = re.compile(r"\.(?:html?|txt|json|xml|ya?ml|csv|tsv|md|log|conf|cfg|ini|sh|py|js|tar|gz|tgz|bz2|xz|zip"
                          r"|deb|rpm|whl|pdf|png|jpe?g|gif|svg|bin|iso|img|out|tmp|bak)$", re.IGNORECASE)


def _urls_of(command: str, commands: Sequence[Any]) -> list[str]:
    """The URLs a shell line names: as written, as the shell reads them (``https://web''hook.site``,
    ``webhook\\.site``), and hosts a fetcher is given without a scheme (``curl webhook.site/x``)."""
    from clawcore.security.commands import _effective

    urls = _URL_IN_TEXT.findall(command)
    for cmd in commands:
        urls += [url for arg in cmd.args for url in _URL_IN_TEXT.findall(arg)]
        name, *args = _effective(cmd) or [""]  # `timeout 5 curl host/x`: the fetcher behind the wrapper
        if name.rsplit("/", 1)[-1] not in FETCHERS:
            continue
        for index, arg in enumerate(args):
            # A word with a `/` is a host and a path (`host/x.json`); a bare `out.html` is more likely a file.
            if (not arg.startswith("-") and "://" not in arg and (index == 0 or args[index - 1] not in _FETCHER_VALUES)
                    and _SCHEMELESS.fullmatch(arg) and ("/" in arg or not _FILE_SUFFIX.search(arg))):
                urls.append("http://" + arg)
    return list(dict.fromkeys(urls))


def _shell_text(cmd: Any) -> list[str]:
    """Text ``cmd`` runs as shell: ``bash -c TEXT`` (``-xc`` and runners like ``env`` included), ``eval TEXT``,
    ``echo TEXT | sh``, ``sh <<EOF`` and ``sh <<< TEXT``."""
    name, args = cmd.name, list(cmd.args)
    if name in WRAPPERS | RUNNERS:  # env, timeout, uv run, tmux …: the first argument that is a shell starts it
        start = next((i for i, arg in enumerate(args) if arg.rsplit("/", 1)[-1] in SHELLS), None)
        if start is None:
            # `tmux new -d 'rm -rf x'`, `screen -dm …`: a word holding spaces may be a command line of its own
            return [arg for arg in args if " " in arg.strip()] if name in RUNNERS else []
        name, args = args[start].rsplit("/", 1)[-1], args[start + 1:]
    if name == "eval":
        return [" ".join(args)]
    if name not in SHELLS:
        return []
    options = [arg for arg in args if arg.startswith("-") and not arg.startswith("--")]
    if any("c" in option for option in options):  # -c, -xc, -ec: the first word that is not an option
        script = next((arg for arg in args if not arg.startswith("-")), None)
        return [script] if script is not None else []
    if any(not arg.startswith("-") for arg in args):
        return []  # runs a script file
    fed = [r.target for r in cmd.redirects if r.op in ("<<", "<<<", "<<-")]
    feeder = cmd.stdin_from
    if feeder is not None and feeder.name in ("echo", "printf"):
        fed.append(" ".join(feeder.args))
    return fed


def _find_acts(args: Sequence[str]) -> bool:
    """Whether ``find`` does something to what it finds (``-delete``, ``-exec``, ``-ok``), not only list it."""
    return any(arg in ("-delete", "-exec", "-execdir", "-ok", "-okdir") for arg in args)


def _directories(targets: Sequence[str], bases: Sequence[Path], policy: Any) -> list[Path]:
    """Where ``cd TARGET`` may land, read from each of ``bases`` (``~`` as both homes); none when unknowable."""
    from clawcore.security.shell import DYNAMIC

    found: list[Path] = []
    for target in targets:
        if DYNAMIC in target or target == "-":
            continue
        if target.startswith("~"):
            found += [Path(os.path.normpath(path)) for path in policy.tilde(target)]
        elif target.startswith("/"):
            found.append(Path(os.path.normpath(target)))
        else:
            found += [Path(os.path.normpath(base / target)) for base in bases]
    return found


@dataclass(frozen=True)
class ArgumentRule:
    """One ``tools.policy.rules`` entry, compiled."""

    tool: str
    argument: str
    action: Action
    pattern: re.Pattern[str] | None = None
    glob: str | None = None
    negate: bool = False
    reason: str = ""

    def applies(self, value: str) -> bool:
        hit = True
        if self.pattern is not None:
            hit = self.pattern.search(value) is not None
        if self.glob is not None:
            hit = hit and fnmatch.fnmatchcase(value, self.glob)
        return hit != self.negate


@dataclass(frozen=True)
class ToolPolicy:
    """Decides tool calls; build it with :meth:`from_config`.

    ``groups`` maps group names to tool names (the builtin groups); ``declared``
    maps tool names to the groups they declare (``Tool.groups``). A declared
    group only makes a tool stricter: it counts where a group denies or asks,
    and for the checks of what the arguments do, never where one allows — a
    plugin cannot let its tool run unasked by naming a group the profile allows.
    """

    profile: str = "minimal"
    allow: tuple[str, ...] = ()
    confirm: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    rules: tuple[ArgumentRule, ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(GROUPS))
    config: Config | None = field(default=None, repr=False, compare=False)
    declared: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The filesystem and network policies, built on first use.
    _paths: Any = field(default=None, init=False, repr=False, compare=False)
    _network: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_config(
        cls,
        config: Config | Mapping[str, Any],
        *,
        home: Path | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
        declared: Mapping[str, Sequence[str]] | None = None,
    ) -> ToolPolicy:
        """The policy of the effective config (``tools.policy``).

        :raises ConfigError: a rule's regular expression does not compile.
        """
        if not isinstance(config, Config):
            config = Config(dict(config), home or Path.home() / ".clawcore")
        section = config.section("tools.policy")
        rules = []
        for index, raw in enumerate(section.get("rules", ()) or ()):
            pattern = None
            if raw.get("match"):
                try:
                    pattern = re.compile(raw["match"])
                except re.error as exc:
                    raise ConfigError(
                        f"tools.policy.rules[{index}].match: not a valid regular expression "
                        f"({exc}): {raw['match']!r}"
                    ) from exc
            rules.append(
                ArgumentRule(
                    raw["tool"],
                    raw["argument"],
                    Action(raw["action"]),
                    pattern,
                    raw.get("glob"),
                    bool(raw.get("negate", False)),
                    raw.get("reason", ""),
                )
            )
        merged = {k: tuple(v) for k, v in GROUPS.items()}
        for name, members in (groups or {}).items():
            merged[name] = tuple(dict.fromkeys(merged.get(name, ()) + tuple(members)))
        profile = str(section.get("profile", "minimal"))
        if profile not in PROFILES:
            raise ConfigError(
                f"tools.policy.profile: {profile!r} is not one of {', '.join(sorted(PROFILES))}"
            )
        return cls(
            profile,
            tuple(section.get("allow", ())),
            tuple(section.get("confirm", ())),
            tuple(section.get("deny", ())),
            tuple(rules),
            merged,
            config,
            {tool: tuple(names) for tool, names in (declared or {}).items()},
        )

    # -- matching -----------------------------------------------------------

    def _matches(self, tool: str, patterns: Sequence[str], *, declared: bool = False) -> str | None:
        """The first pattern naming ``tool``; with ``declared``, groups the tool declares count too."""
        for pattern in patterns:
            if pattern.startswith("group:"):
                if tool in self.groups.get(pattern[6:], ()) or declared and pattern[6:] in self.declared.get(tool, ()):
                    return pattern
            elif fnmatch.fnmatchcase(tool, pattern):
                return pattern
        return None

    def name_decision(self, tool: str) -> Decision:
        """The decision on the tool's name alone: the user's lists, then the profile's."""
        for action, patterns, origin in (
            (Action.DENY, self.deny, "tools.policy.deny"),
            (Action.CONFIRM, self.confirm, "tools.policy.confirm"),
            (Action.ALLOW, self.allow, "tools.policy.allow"),
        ):
            hit = self._matches(tool, patterns, declared=action is not Action.ALLOW)
            if hit:
                return Decision(
                    action, (f"{tool} matches {hit!r} in {origin}",), (f"name-{action.value}",), SOURCE
                )
        allow, confirm, deny = PROFILES[self.profile]
        for action, patterns in ((Action.DENY, deny), (Action.CONFIRM, confirm), (Action.ALLOW, allow)):
            hit = self._matches(tool, patterns, declared=action is not Action.ALLOW)
            if hit:
                return Decision(
                    action,
                    (f"{tool} is {action.value} in the {self.profile!r} profile",),
                    (f"profile-{action.value}",),
                    SOURCE,
                )
        return Decision.confirm(
            f"{tool} is not named by the {self.profile!r} profile or tools.policy lists",
            rules=("unlisted-tool",),
            source=SOURCE,
        )

    # -- deciding -------------------------------------------------------------

    def decide(self, call: ToolCall) -> Decision:
        """The policy's decision on one call: name, argument rules and argument checks, strictest wins."""
        decisions = [self.name_decision(call.name)]
        if decisions[0].action is Action.DENY:
            return decisions[0]
        args = call.arguments if isinstance(call.arguments, Mapping) else {}
        for rule in self.rules:
            if self._matches(call.name, (rule.tool,), declared=True) and rule.argument in args:
                if rule.applies(str(args[rule.argument])):
                    how = "does not match" if rule.negate else "matches"
                    reason = rule.reason or f"{call.name}.{rule.argument} {how} a tools.policy rule"
                    decisions.append(Decision(rule.action, (reason,), ("argument-rule",), SOURCE))
        decisions.extend(self.argument_checks(call, args))
        return strictest(decisions)

    def argument_checks(self, call: ToolCall, args: Mapping[str, Any]) -> list[Decision]:
        """What the arguments would do: shell analysis, filesystem and network policy."""
        out: list[Decision] = []
        if call.name == "bash" or "runtime" in self._groups_of(call.name) and "command" in args:
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                return [
                    Decision.deny(
                        "bash needs a non-empty command string", rules=("bad-arguments",), source=SOURCE
                    )
                ]
            analysis = analyze(command)
            if analysis.action is not Action.ALLOW:
                out.append(
                    Decision(
                        analysis.action,
                        analysis.reasons,
                        tuple(f"command:{r}" for r in analysis.rules),
                        SOURCE,
                    )
                )
            policy = self._path_policy()
            # Parsed once, as the sandbox's shell would see it: the working directory, HOME (the workspace).
            env = {"CLAWCORE_HOME": str(policy.home), "PWD": str(policy.workspace), "HOME": str(policy.workspace)}
            commands = _every_command(command, env)
            out.extend(self._command_urls(command, commands))
            out.extend(self._command_runtime_files(commands))
        op = _PATH_TOOLS.get(call.name)
        if op is None and "fs" in self._groups_of(call.name) and "path" in args:
            op = "write" if any(k in args for k in ("content", "new")) else "read"
        if op is not None:
            path = args.get("path")
            if not isinstance(path, str) or not path:
                return out + [
                    Decision.deny(f"{call.name} needs a path string", rules=("bad-arguments",), source=SOURCE)
                ]
            if call.name != "memory_get":
                out.append(self._path_policy().check(path, op))  # type: ignore[arg-type]
        if call.name == "web_fetch" or ("web" in self._groups_of(call.name) and "url" in args):
            url = args.get("url")
            if not isinstance(url, str) or not url:
                return out + [
                    Decision.deny(f"{call.name} needs a url string", rules=("bad-arguments",), source=SOURCE)
                ]
            out.append(self._network_policy().check_url(url, resolve=False))
        return out

    def _command_urls(self, command: str, commands: Sequence[Any]) -> list[Decision]:
        """URLs written in a shell command pass the network policy's blocklists.

        Only the rules about where data may go apply (exfiltration endpoints,
        ``sandbox.network.block``, credentials in the URL, a configured
        allowlist): a shell command reaching a local development server is
        ordinary, so the private-network guard is left to ``web_fetch``.
        """
        out = []
        for url in _urls_of(command, commands):
            if _names_metadata(url):
                out.append(Decision.deny(f"reaches the cloud instance-metadata service ({url}), where credentials live",
                                         rules=("command:cloud-credentials",), source=SOURCE))
                continue
            decision = self._network_policy().check_url(url, resolve=False)
            if decision.action is Action.DENY and set(decision.rules) & {
                "url-exfiltration",
                "url-blocked",
                "url-secret",
            }:
                out.append(
                    Decision.deny(
                        *decision.reasons, rules=tuple(f"command:{r}" for r in decision.rules), source=SOURCE
                    )
                )
            elif decision.action is Action.DENY and "url-not-allowed" in decision.rules:
                out.append(
                    Decision.confirm(*decision.reasons, rules=("command:url-not-allowed",), source=SOURCE)
                )
        return out

    def _command_runtime_files(self, commands: Sequence[Any]) -> list[Decision]:
        """A shell command may not name the runtime's own files: config, audit log, transcripts, index.

        The file tools refuse them by path; a shell reaches them by any spelling (``../clawcore.yaml``
        from the workspace, ``sed -i`` on the config, ``mv`` of the audit folder, a path inside a
        ``python -c`` string), so every word of the line — and of text it runs as shell — is resolved as
        a path and checked: arguments, redirect targets, assigned values, paths written inside them; from
        the workspace and each folder the line changes to (the home too when that cannot be known). What
        moves, deletes or writes into what it names may not name the home either (see :func:`_reach`).
        """
        from clawcore.security import shell

        policy = self._path_policy()
        known = [policy.workspace]  # the folders the line may be in
        doubt = False  # and somewhere it cannot be known: the home, for all we know
        for cmd in commands:
            if cmd.name in ("cd", "pushd"):
                landed = _directories([word.text for word in cmd.words[1:]][-1:] or ["~"], known, policy)
                known = list(dict.fromkeys([*known, *landed]))
                doubt = doubt or not landed
        bases = [*known, policy.home] if doubt else known
        words = [(w.text, reach) for cmd in commands for w, reach in zip(cmd.words, _reach(cmd), strict=True)]
        # `find -delete`, `grep -r x`, `rg x`: with no folder named, the one the line is in.
        words += [(".", (_reach(cmd) or [""])[-1] or "home") for cmd in commands if _starts_here(cmd)]
        # `--directory=..`, `--from-file=../x`, `if=../x`: a path after an option's `=`.
        words += [(text.split("=", 1)[1], reach) for text, reach in list(words)
                  if re.match(r"^-{0,2}[\w-]+=[.~/]", text)]
        words += [(r.target, "") for cmd in commands for r in cmd.redirects]
        words += [(value, "") for cmd in commands for value in cmd.assignments.values()]
        # Paths written inside a longer word: absolute ones anywhere, quoted ones in code (``python -c``);
        # code that deletes or moves what it names (``shutil.rmtree("/x/.clawcore")``) is as good as ``rm``.
        words += [(path, reach or ("home" if _DESTRUCTIVE_CODE.search(word) else ""))
                  for word, reach in list(words) for path in _EMBEDDED_PATH.findall(word) if path != word]
        words += [(path, "home" if _DESTRUCTIVE_CODE.search(word) else "")
                  for word, _ in list(words) for path in _QUOTED_PATH.findall(word) if path != word]
        for word, reach in dict.fromkeys(w for w in words if w[0].strip(shell.DYNAMIC)):
            # The home as a place the line may be in names the runtime's files, never the home itself.
            target = policy.runtime_file(word, bases) or (
                policy.runtime_file(word, known, home_too=True, holders_too=reach == "holders") if reach else None)
            if target is not None:
                what = "home" if target == str(policy.home) else Path(target).name
                return [Decision.deny(f"the command names the runtime's own {what} ({target}); "
                                      "no tool may touch the config, audit log, transcripts or index",
                                      rules=("command:runtime-files",), source=SOURCE)]
        return []

    def _groups_of(self, tool: str) -> set[str]:
        return {name for name, members in self.groups.items() if tool in members} | set(self.declared.get(tool, ()))

    def _path_policy(self) -> Any:
        if self._paths is None:
            from clawcore.security.paths import PathPolicy

            object.__setattr__(self, "_paths", PathPolicy.from_config(self._config()))
        return self._paths

    def _network_policy(self) -> Any:
        if self._network is None:
            from clawcore.security.network import NetworkPolicy

            object.__setattr__(self, "_network", NetworkPolicy.from_config(self._config()))
        return self._network

    def _config(self) -> Config:
        return self.config if self.config is not None else Config({}, Path.home() / ".clawcore")
