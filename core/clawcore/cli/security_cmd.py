"""``clawcore security audit``: check the effective deployment against the production checklist.

Each check reads the effective configuration (defaults and environment
included), the files under ``$CLAWCORE_HOME`` and the installed plugins, and
reports findings with a severity and the fix. ``--fix`` applies only the fixes
that cannot break anything: file permissions and adding an installed monitor
to ``plugins.required``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click
import yaml

from clawcore.cli.state import CliState
from clawcore.config import Config, load_config
from clawcore.errors import ClawcoreError
from clawcore.folders import make_folder

__all__ = ["Finding", "command", "run_checks"]

SEVERITIES = ("critical", "high", "medium", "info")


@dataclass(frozen=True)
class Finding:
    """One problem (or notice) about the deployment."""

    check: str
    severity: str
    message: str
    fix: str
    #: True when ``--fix`` can apply the fix safely.
    fixable: bool = False
    path: str = ""


@dataclass
class _Found:
    finding: Finding
    apply: Callable[[], str] | None = field(default=None, repr=False)


class SecurityAuditFailed(ClawcoreError):
    """Critical findings remain."""

    exit_code = 1


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def _gateway(config: Config) -> Iterator[_Found]:
    from clawcore.gateway.auth import is_loopback, weak_secret_reason
    from clawcore.gateway.settings import GatewaySettings

    settings = GatewaySettings.from_config(config.data)
    exposed = not is_loopback(settings.host)
    if exposed and not (settings.token or settings.password):
        yield _Found(
            Finding(
                "gateway.auth",
                "critical",
                f"gateway.host is {settings.host!r} (beyond loopback) and no auth.token or "
                "auth.password is set; the gateway refuses to start like this",
                "set CLAWCORE_GATEWAY_TOKEN to a long random value (e.g. `openssl rand -hex 32`), "
                "or bind 127.0.0.1",
            )
        )
    elif not (settings.token or settings.password):
        yield _Found(
            Finding(
                "gateway.auth",
                "info",
                "the gateway has no secret: on loopback any local process (any user of this "
                "machine) can call it",
                "set CLAWCORE_GATEWAY_TOKEN when others share this machine",
            )
        )
    for kind, secret in (("token", settings.token), ("password", settings.password)):
        reason = weak_secret_reason(secret, kind) if secret else None
        if reason:
            yield _Found(
                Finding(
                    f"gateway.{kind}",
                    "critical" if exposed else "medium",
                    f"weak gateway {kind}: {reason}"
                    + (" while the gateway listens beyond loopback" if exposed else ""),
                    f"use a random {kind} of 32+ characters (`openssl rand -hex 32`)",
                )
            )


def _walk(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path, value
            yield from _walk(value, path)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _walk(value, f"{prefix}[{index}]")


def _plain_secrets(config: Config) -> Iterator[_Found]:
    from clawcore.security.secrets import is_secret_key, scan_text

    if config.path is None or not config.path.exists():
        return
    flagged: set[str] = set()
    for path, value in _walk(config.raw):
        last = path.rsplit(".", 1)[-1]
        if isinstance(value, str) and value and is_secret_key(last):
            flagged.add(path)
    env_hint = {"auth.token": "CLAWCORE_GATEWAY_TOKEN", "auth.password": "CLAWCORE_GATEWAY_PASSWORD"}
    for path in sorted(flagged):
        where = env_hint.get(path, "an environment variable (the plugin's *Env setting)")
        yield _Found(
            Finding(
                "secrets.config",
                "high",
                f"{path} holds a secret in plain text in {config.path.name}",
                f"remove it from the file and set {where} instead",
                path=str(config.path),
            )
        )
    try:
        text = config.path.read_text(encoding="utf-8")
    except OSError:
        return
    # Credentials elsewhere in the file (in a URL, a header), beside those under credential-named keys above.
    rows = text.splitlines()
    lines = {f.line for f in scan_text(text)
             if not (flagged and 0 < f.line <= len(rows)
                     and is_secret_key(rows[f.line - 1].split(":", 1)[0].strip(" -'\"")))}
    if lines:
        yield _Found(
            Finding(
                "secrets.config",
                "high",
                f"{config.path.name} contains what looks like a credential on line(s) "
                f"{', '.join(str(n) for n in sorted(lines))}",
                "move credentials to environment variables",
                path=str(config.path),
            )
        )


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:  # missing, or behind something that is not a folder
        return None


_NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _open_beneath(anchor: Path, path: Path, folder: bool) -> int:
    """A descriptor on ``path``, reached from ``anchor`` without following any link below the anchor.

    The anchor (the home, the audit folder) is the user's choice and may itself be a link; nothing under it
    may be: a link there could lead the fix to a file clawcore does not own.
    """
    last = os.O_RDONLY | _NOFOLLOW | (os.O_DIRECTORY if folder else 0)
    parts = path.relative_to(anchor).parts
    try:
        if not parts:
            return os.open(path, last)
        fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
            return os.open(parts[-1], last, dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(f"{path} is a symbolic link or lies behind one; --fix follows no link") from exc
        raise


def _behind_link(anchor: Path, path: Path) -> bool:
    """True when a link lies between ``anchor`` (excluded) and ``path`` (included)."""
    current = anchor
    for part in path.relative_to(anchor).parts:
        current = current / part
        if current.is_symlink():
            return True
    return anchor == path and path.is_symlink()


def _chmod_fix(anchor: Path, path: Path, keep: int, *, folder: bool) -> Callable[[], str]:
    """Clear the mode bits outside ``keep`` on ``path`` itself: no link is followed, no other bit is set."""

    def apply() -> str:
        fd = _open_beneath(anchor, path, folder)
        try:
            info = os.fstat(fd)
            if not (stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)):
                raise OSError(f"{path} is not a {'folder' if folder else 'regular file'}")
            if not folder and info.st_nlink > 1:  # another name, maybe outside the home, shares its mode
                raise OSError(f"{path} has {info.st_nlink} hard links; change its mode yourself")
            before = stat.S_IMODE(info.st_mode)
            os.fchmod(fd, before & keep)
        finally:
            os.close(fd)
        return f"chmod {before & keep:o} {path} (was {before:o})"

    return apply


def _anchor(path: Path, anchors: list[Path]) -> Path:
    """The folder a fix of ``path`` starts from: the first anchor holding it, else its own folder."""
    return next((a for a in anchors if path == a or a in path.parents), path.parent)


def _check(path: Path, anchors: list[Path], *, folder: bool = False, secret: bool = False,
           public: bool = False, link_ok: bool = False) -> _Found | None:
    """One permission finding about ``path``, or None when it is private enough (or missing)."""
    info = _lstat(path)
    if info is None:
        return None
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            return _Found(Finding("permissions", "medium",
                                  f"{path} is a link to {target}, which cannot be read",
                                  f"replace the link with the {'folder' if folder else 'file'} itself", False, str(path)))
    elif stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode):
        mode = stat.S_IMODE(info.st_mode)
    else:
        return None
    link = stat.S_ISLNK(info.st_mode)
    where = f"{path} is a link to {target}, which" if link else str(path)
    keep = 0o7755 if public else 0o700
    if mode & 0o022:
        severity = "critical"
        message = f"{where} is writable by group or others (mode {mode:o})"
        if public:
            message += ": a replaced key would be trusted"
    elif not public and mode & (0o077 if folder else 0o044):
        severity = "medium" if folder else "critical" if secret else "high"
        message = f"{where} is readable by group or others (mode {mode:o})"
    elif link and not link_ok:
        return _Found(Finding(
            "permissions", "info" if folder else "medium",
            f"{path} is a link to {target}" if folder
            else f"{path} is a link to {target}: the file lives outside its private folder",
            "nothing to do if the link is intended" if folder else "replace the link with the file itself",
            False, str(path)))
    else:
        return None
    fix = f"chmod {mode & keep:o}"
    anchor = _anchor(path, anchors)
    if link or _behind_link(anchor, path):
        return _Found(Finding("permissions", severity, message,
                              f"{fix} {target if link else path} yourself (--fix follows no link)", False, str(path)))
    return _Found(Finding("permissions", severity, message, fix, True, str(path)),
                  _chmod_fix(anchor, path, keep, folder=folder))


def _contents(folder: Path) -> list[Path]:
    """Every file and link under ``folder``, found without following links (and without recursion)."""
    found: list[Path] = []
    stack = [folder] if _lstat(folder) is not None and folder.is_dir() else []
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                found.append(Path(entry.path))
    return found


def _permissions(config: Config, audit_paths: list[Path], key_dir: Path) -> Iterator[_Found]:
    home = config.home
    anchors = [home, *dict.fromkeys(p.parent for p in audit_paths), key_dir]
    private_dirs = [home, key_dir, home / "sessions", home / "credentials", home / "index"]
    private_dirs += sorted({p.parent for p in audit_paths})
    seen: set[Path] = set()
    checks: list[tuple[Path, dict[str, bool]]] = [(folder, {"folder": True}) for folder in private_dirs]
    if config.path is not None:  # a linked config is usual (dotfiles): judged by the file it leads to
        checks.append((config.path, {"link_ok": True}))
    checks += [(path, {}) for path in audit_paths]
    for folder in (key_dir, home / "credentials"):
        checks += [(path, {"secret": True, "public": path.name.endswith(".pub")}) for path in _contents(folder)]
    checks += [(home / ".env", {"secret": True}), (home / "index" / "memory.sqlite", {})]
    if (home / "sessions").is_dir():  # transcripts hold whole conversations
        checks += [(path, {}) for path in sorted((home / "sessions").glob("*.jsonl"))]
    for path, options in checks:
        if path in seen:
            continue
        seen.add(path)
        found = _check(path, anchors, **options)
        if found is not None:
            yield found


def _set_required(config: Config, name: str) -> Callable[[], str]:
    def apply() -> str:
        path = config.path or config.home / "clawcore.yaml"
        raw: dict[str, Any] = dict(config.raw)
        plugins = dict(raw.get("plugins") or {})
        required = list(plugins.get("required") or [])
        if name not in required:
            required.append(name)
        plugins["required"] = required
        raw["plugins"] = plugins
        note = ""
        if path.exists():
            backup = path.with_name(path.name + ".bak")
            shutil.copy2(path, backup)
            note = f"; the previous file is {backup.name} (comments are not kept)"
        make_folder(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(raw, handle, sort_keys=False, default_flow_style=False)
        return f"added {name!r} to plugins.required in {path}{note}"

    return apply


def _monitor(config: Config, state: CliState) -> Iterator[_Found]:
    pm = state.plugin_manager
    required = list(config.get("plugins.required") or [])
    if pm.get_plugin("prism") is None:
        yield _Found(
            Finding(
                "prism",
                "high",
                "the PRISM runtime monitor is not installed (or disabled)",
                "pip install clawcore-prism, then add prism to plugins.required",
            )
        )
    elif "prism" not in required:
        yield _Found(
            Finding(
                "prism",
                "medium",
                "PRISM is installed but not in plugins.required: if it fails to import, "
                "clawcore starts without it",
                "add prism to plugins.required",
                True,
            ),
            _set_required(config, "prism"),
        )


#: Builtins whose absence removes a defence layer.
_DEFENCE_BUILTINS = {
    "policy": "the tool policy (every tool call would run unchecked by it)",
    "redaction": "secret redaction of tool results, transcripts and outbound messages",
    "audit": "the audit log",
    "sandbox-local": "the local sandbox backend",
}


def _builtins(state: CliState) -> Iterator[_Found]:
    pm = state.plugin_manager
    for name, what in _DEFENCE_BUILTINS.items():
        if pm.get_plugin(name) is None:
            yield _Found(
                Finding(
                    "plugins",
                    "critical",
                    f"the builtin plugin {name!r} is disabled: {what} is off",
                    f"remove {name} from plugins.disable and CLAWCORE_DISABLE_PLUGINS",
                )
            )


def _sandbox(config: Config) -> Iterator[_Found]:
    sandbox = config.section("sandbox")
    if sandbox.get("isolation") == "none":
        yield _Found(
            Finding(
                "sandbox",
                "high",
                "sandbox.isolation is none: shell commands run unisolated on the host",
                "set sandbox.isolation to auto (or use the docker backend)",
            )
        )
    network = sandbox.get("network") if isinstance(sandbox.get("network"), Mapping) else {}
    assert isinstance(network, Mapping)
    if network.get("shell") == "allow":
        yield _Found(
            Finding(
                "sandbox",
                "medium",
                "sandbox.network.shell is allow: shell commands reach the network",
                "set sandbox.network.shell to deny",
            )
        )
    if network.get("privateNetwork") is True:
        yield _Found(
            Finding(
                "sandbox",
                "medium",
                "sandbox.network.privateNetwork is true: web_fetch may reach loopback and the LAN",
                "list only the private hosts needed, or set false",
            )
        )
    docker = config.section("sandbox.docker")
    if docker and (sandbox.get("backend") == "docker" or docker.get("enabled")):
        if docker.get("networkMode") not in (None, "none"):
            yield _Found(
                Finding(
                    "sandbox.docker",
                    "high",
                    f"sandbox.docker.networkMode is {docker.get('networkMode')!r}: containers have a network",
                    "set sandbox.docker.networkMode to none",
                )
            )
        if docker.get("readOnlyRoot") is False:
            yield _Found(
                Finding(
                    "sandbox.docker",
                    "high",
                    "sandbox.docker.readOnlyRoot is false",
                    "set sandbox.docker.readOnlyRoot to true",
                )
            )
        if docker.get("user") in ("0", "root", "0:0", "root:root"):
            yield _Found(
                Finding(
                    "sandbox.docker",
                    "critical",
                    "sandbox.docker.user runs commands as root",
                    "set sandbox.docker.user to auto",
                )
            )
        if docker.get("fallback") == "local":
            yield _Found(
                Finding(
                    "sandbox.docker",
                    "medium",
                    "sandbox.docker.fallback is local: without the engine, commands run on the host",
                    "set sandbox.docker.fallback to fail-closed",
                )
            )
        if docker.get("workspaceAccess") == "rw":
            yield _Found(
                Finding(
                    "sandbox.docker",
                    "info",
                    "containers can write the workspace (workspaceAccess rw)",
                    "use ro unless commands must write there",
                )
            )
        for key, limit in (("pidsLimit", 4096), ("cpuLimit", 8)):
            value = docker.get(key)
            if isinstance(value, (int, float)) and value > limit:
                yield _Found(
                    Finding(
                        "sandbox.docker",
                        "medium",
                        f"sandbox.docker.{key} is {value} (weak limit)",
                        f"keep it at or below {limit}",
                    )
                )


def _audit_log(config: Config) -> Iterator[_Found]:
    from clawcore.security.audit import FailureKind, verify_log
    from clawcore.security.audit_plugin import AuditSettings

    settings = AuditSettings.from_config(config.data, config.home)
    if not settings.enabled:
        yield _Found(
            Finding(
                "audit", "high", "audit.enabled is false: nothing is recorded", "set audit.enabled to true"
            )
        )
        return
    report = verify_log(settings.path, keys=settings.keys, require_mac=settings.hmac)
    if not settings.path.exists() and report.failure is None:  # no log and no checkpoint of one: a new home
        yield _Found(Finding("audit", "info", f"no audit log yet at {settings.path}", "nothing to do"))
        return
    if report.failure is not None:
        torn = report.failure.kind is FailureKind.TORN
        yield _Found(
            Finding(
                "audit.chain",
                "high" if torn else "critical",
                f"audit log: {report.failure}",
                "clawcore audit verify --repair"
                if torn
                else "keep the damaged log as evidence (move it aside), investigate who changed it, "
                "and compare with "
                "your exported checkpoints",
                path=str(settings.path),
            )
        )
    elif report.checkpoints == 0:
        yield _Found(
            Finding(
                "audit.chain",
                "medium",
                f"no signed checkpoint covers the audit log's {report.records} record(s): a rewrite of the "
                "whole chain would not show",
                "clawcore audit checkpoint --export FILE, and keep FILE on another machine",
            )
        )


def _tool_policy(state: CliState) -> Iterator[_Found]:
    from clawcore.runtime import Runtime
    from clawcore.security.policy import GROUPS
    from clawcore.types import Action, ToolCall

    with Runtime(state.home, plugin_manager=state.plugin_manager) as runtime:
        decision = runtime.hooks.decide_tool_call(
            ToolCall("bash", {"command": "ls"}, "security-audit"), runtime.context("security-audit")
        )
        known = set(GROUPS) | {group for tool in runtime.tools.values() for group in tool.groups}
        section = runtime.config.section("tools.policy")
    # A group no tool belongs to matches nothing: a typo in deny or confirm quietly lets everything through.
    for action in ("deny", "confirm", "allow"):
        for pattern in section.get(action, ()) or ():
            if isinstance(pattern, str) and pattern.startswith("group:") and pattern[6:] not in known:
                yield _Found(Finding(
                    "tools.policy", "high" if action != "allow" else "info",
                    f"tools.policy.{action} names {pattern}, which no tool belongs to, so it matches nothing",
                    f"use one of {', '.join('group:' + g for g in sorted(known))}"))
    if decision.action is Action.ALLOW:
        # A coding agent runs its shell unasked on purpose; that is a choice to note, and a danger
        # only when nothing isolates the commands either.
        isolated = runtime.config.get("sandbox.isolation", "auto") != "none"
        yield _Found(
            Finding(
                "tools.policy",
                "medium" if isolated else "high",
                "the tool policy runs bash without confirmation (checked with `ls`): commands are checked "
                + ("and sandboxed" if isolated else "but run unisolated on the host")
                + ", and no person sees them first",
                "if that is not intended, add group:runtime to tools.policy.confirm "
                "(and take bash out of tools.policy.allow)",
            )
        )


def run_checks(state: CliState) -> list[_Found]:
    """Every finding for the deployment at ``state.home``."""
    config = load_config(state.home, pm=state.plugin_manager)
    from clawcore.security.audit_plugin import AuditSettings

    audit = AuditSettings.from_config(config.data, config.home)
    from clawcore.security.audit import checkpoints_path_for

    audit_paths = [audit.path, checkpoints_path_for(audit.path)]
    found: list[_Found] = []
    found += _gateway(config)
    found += _plain_secrets(config)
    found += _permissions(config, audit_paths, audit.keys)
    found += _builtins(state)
    found += _monitor(config, state)
    found += _sandbox(config)
    found += _audit_log(config)
    found += _tool_policy(state)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(found, key=lambda f: order.get(f.finding.severity, len(order)))


# --------------------------------------------------------------------------
# Command
# --------------------------------------------------------------------------


@click.group("security")
def command() -> None:
    """Check the deployment's security settings."""


@command.command("audit")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option(
    "--fix", is_flag=True, help="Apply the safe fixes (permissions, required plugins) and say what changed."
)
@click.pass_obj
def audit(state: CliState, as_json: bool, fix: bool) -> None:
    """Check gateway exposure, secrets, permissions, monitor, sandbox, audit chain and tool policy.

    Exit status 1 when any critical finding remains.
    """
    found = run_checks(state)
    changes: list[str] = []
    if fix:
        for item in found:
            if item.apply is not None:
                try:
                    changes.append(item.apply())
                except OSError as exc:
                    changes.append(f"could not fix {item.finding.path or item.finding.check}: {exc}")
        if changes:
            found = run_checks(state)
    findings = [item.finding for item in found]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "findings": [asdict(f) for f in findings],
                    "fixed": changes,
                    "critical": sum(f.severity == "critical" for f in findings),
                },
                indent=2,
            )
        )
    else:
        for change in changes:
            click.echo(f"fixed: {change}")
        _print_table(findings)
    critical = [f for f in findings if f.severity == "critical"]
    if critical:
        raise SecurityAuditFailed(f"{len(critical)} critical finding(s)")


def _print_table(findings: list[Finding]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=max(120, shutil.get_terminal_size().columns))
    if not findings:
        console.print("no findings")
        return
    colours = {"critical": "bold red", "high": "red", "medium": "yellow", "info": "dim"}
    table = Table("severity", "check", "finding", "fix", show_lines=False)
    for f in findings:
        fix = escape(f.fix + (" [--fix]" if f.fixable else ""))
        table.add_row(
            f"[{colours.get(f.severity, '')}]{f.severity}[/]", escape(f.check), escape(f.message), fix
        )
    console.print(table)
