"""The filesystem policy: which paths the builtin file tools may read and write.

A path is judged on the real file it names, never on its spelling. Before a
decision the path is

* refused outright if it holds a NUL byte or a control character, or names a
  Windows drive or UNC share;
* expanded into every reading an attacker could count on: percent-encoding
  (repeated, ``%%32%65`` double encoding), IIS ``%u002e``, overlong UTF-8
  (``%c0%ae``), Unicode compatibility forms (fullwidth ``．．／``), backslashes
  as separators, ``~``/``~user`` and ``$HOME``/``${VAR}``;
* resolved, for every reading, against the workspace when relative, with
  ``..`` and symlinks followed to the real path (``/proc/self/root/etc`` is
  ``/etc``).

Every reading must land inside an allowed root and outside every denied
location, and never on the runtime's own configuration, audit log,
transcripts or index; one reading that fails denies the call (deny on doubt).
Denied wins over allowed.

The check alone cannot stop a symlink swapped in after it. :meth:`PathPolicy.open`
therefore opens the checked real path component by component from ``/``
with ``O_NOFOLLOW`` on directory file descriptors (an ``openat`` walk): a
symlink anywhere on the way at open time fails the open instead of
redirecting it.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import secrets
import stat
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import unquote, unquote_to_bytes

from clawcore.errors import PathDenied
from clawcore.types import Decision

__all__ = [
    "DEFAULT_ALLOWED_PATHS",
    "DEFAULT_DENIED_PATHS",
    "DEFAULT_READ_ONLY_PATHS",
    "PROTECTED_HOME_ENTRIES",
    "PathPolicy",
    "path_variants",
    "runtime_paths",
]

Op = Literal["read", "write"]

#: ``{workspace}`` is the memory workspace, ``{tmp}`` the system temp dir, ``{home}`` $CLAWCORE_HOME.
DEFAULT_ALLOWED_PATHS: tuple[str, ...] = ("{workspace}", "{tmp}")

#: Credential stores, system configuration and kernel interfaces (read and write).
#: An entry starting with ``!`` is an exception to the others (``!**/.env.example``).
DEFAULT_DENIED_PATHS: tuple[str, ...] = (
    "/etc/",
    "~/.ssh/",
    "~/.aws/",
    "~/.gnupg/",
    "~/.kube/",
    "~/.docker/",
    "~/.azure/",
    "~/.config/gcloud/",
    "~/.config/gh/",
    "~/.netrc",
    "~/.npmrc",
    "~/.pypirc",
    "~/.git-credentials",
    "~/.vault-token",
    "~/.bash_history",
    "~/.zsh_history",
    "/root/",
    "/proc/",
    "/sys/",
    "/dev/",
    "/boot/",
    "/run/secrets/",
    "/var/run/secrets/",
    "**/.ssh/**",
    "**/.aws/**",
    "**/.gnupg/**",
    "**/.kube/**",
    "**/.azure/**",
    "**/.config/gcloud/**",
    "**/.config/gh/hosts.yml",
    "**/.docker/config.json",
    "**/.pgpass",
    "**/.my.cnf",
    "**/.vault-token",
    "**/.htpasswd",
    "**/credentials.tfrc.json",
    "**/*.keystore",
    "**/*.jks",
    "**/.env",
    "**/.env.*",
    "!**/.env.example",
    "!**/.env.sample",
    "!**/.env.template",
    "!**/.env.dist",
    "**/.envrc",
    "**/.netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.git-credentials",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/service-account*.json",
    "**/service_account*.json",
    "**/client_secret*.json",
    "**/*.tfstate",
    "**/*.tfstate.backup",
    "**/.cargo/credentials*",
    "**/.kaggle/kaggle.json",
    "**/.config/containers/auth.json",
    "**/.m2/settings-security.xml",
    "**/huggingface/token",
    "**/.claude/.credentials.json",
    "**/.codex/auth.json",
    "**/.config/sops/age/keys.txt",
    "/tmp/krb5cc_*",
    "/tmp/ssh-*/**",
)

#: Readable but never written: files whose change runs code later (git hooks, shell start-up files).
DEFAULT_READ_ONLY_PATHS: tuple[str, ...] = (
    "**/.git/hooks/**",
    "**/.git/config",
    "**/.gitmodules",
    "**/.bashrc",
    "**/.bash_profile",
    "**/.profile",
    "**/.zshrc",
    "**/.zprofile",
    "**/.bash_logout",
)

#: Entries of $CLAWCORE_HOME that no tool may touch, whether they exist yet or not: the config and its
#: backup, the audit log, transcripts, index, monitor state, models and credentials. Every other entry
#: of the home is protected too, except the folder that holds the workspace (see :func:`runtime_paths`).
PROTECTED_HOME_ENTRIES: tuple[str, ...] = ("clawcore.yaml", "clawcore.yaml.bak", "audit", "sessions", "index",
                                           "prism", "models", "credentials", ".env")
#: File names only the runtime uses, by the entry that holds them: ``$X/<name>`` is taken to mean them.
_RUNTIME_NAMES: Mapping[str, str] = {"clawcore.yaml": "clawcore.yaml", "audit.jsonl": "audit",
                                     "audit.checkpoints.jsonl": "audit", "memory.sqlite": "index"}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WINDOWS = re.compile(r"^(?:[A-Za-z]:[\\/]|[A-Za-z]:$|\\\\|//\?/|//\./)")
_IIS_UNICODE = re.compile(r"%u([0-9a-fA-F]{4})")
#: Characters that best-fit decoders (Windows, some servers) read as a slash or dot.
_LOOKALIKES = str.maketrans({"\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u2216": "/", "\u29f9": "/",
                             "\uff0f": "/", "\uff3c": "/", "\ufe68": "/", "\u2024": ".", "\uff0e": ".",
                             "\u3002": "."})
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2}|[uU][0-9A-Fa-f]{4})")
_GLOB = re.compile(r"[*?\[]")
_MAX_LEN = 4096
_MAX_VARIANTS = 48


# --------------------------------------------------------------------------
# Readings of a path
# --------------------------------------------------------------------------


def _decode_overlong(raw: bytes) -> str:
    """Bytes to text, reading overlong UTF-8 forms (``c0 ae`` = ``.``) as the character they spell."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b in (0xC0, 0xC1) and i + 1 < len(raw) and 0x80 <= raw[i + 1] <= 0xBF:
            out.append(chr(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F)))
            i += 2
        elif b == 0xE0 and i + 2 < len(raw) and 0x80 <= raw[i + 1] <= 0x9F and 0x80 <= raw[i + 2] <= 0xBF:
            out.append(chr(((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F)))
            i += 3
        elif b == 0xF0 and i + 3 < len(raw) and 0x80 <= raw[i + 1] <= 0x8F:
            out.append(chr(((raw[i + 2] & 0x3F) << 6) | (raw[i + 3] & 0x3F)))
            i += 4
        else:
            chunk_end = i + 1
            while chunk_end < len(raw) and raw[chunk_end] not in (0xC0, 0xC1, 0xE0, 0xF0):
                chunk_end += 1
            out.append(raw[i:chunk_end].decode("utf-8", errors="replace"))
            i = chunk_end
    return "".join(out)


def _transforms(value: str, environ: Mapping[str, str]) -> Iterable[str]:
    if "%" in value:
        yield unquote(value, errors="surrogateescape")
        yield _STRAY_PERCENT.sub("", value)
        yield _decode_overlong(unquote_to_bytes(value))
        if "%u" in value or "%U" in value:
            yield _IIS_UNICODE.sub(lambda m: chr(int(m.group(1), 16)), value)
    if not value.isascii():
        yield unicodedata.normalize("NFKC", value)
        yield value.translate(_LOOKALIKES)
    if "\\" in value:
        yield value.replace("\\", "/")
        yield re.sub(r"\\(.)", r"\1", value)  # shell-style escapes: `.\./` is `../`
    if "$" in value:
        yield _expand_vars(value, environ)
    if ";" in value:
        yield re.sub(r";[^/\\]*", "", value)  # path parameters: `..;/` is `../` to some servers
    if "...." in value or ".../" in value:
        yield re.sub(r"\.\.\.\.//|\.\.\./\./|\.\.\.\.\\\\", "../", value)  # `....//` after a naive `../` filter
    if value[:7].lower() == "file://":
        yield re.sub(r"(?i)^file://(?:localhost)?", "", value)


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand_vars(value: str, environ: Mapping[str, str]) -> str:
    def sub(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return environ.get(name, match.group(0))

    return _VAR.sub(sub, value)


def path_variants(path: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every reading of ``path`` an attacker could count on, ``path`` itself first.

    Decodings are applied repeatedly and in every order until nothing new
    appears (bounded), so double encodings and mixes are covered.
    """
    environ = os.environ if environ is None else environ
    seen = [path]
    queue = [path]
    while queue and len(seen) < _MAX_VARIANTS:
        current = queue.pop()
        for variant in _transforms(current, environ):
            if variant not in seen:
                seen.append(variant)
                queue.append(variant)
    return seen


# --------------------------------------------------------------------------
# Path patterns
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Location:
    """One allowed root or denied entry: a real directory/file prefix or a glob."""

    spec: str
    prefix: str | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, real: str) -> bool:
        if self.pattern is not None:
            return bool(self.pattern.match(real))
        assert self.prefix is not None
        return _inside(real, self.prefix)


def _glob_regex(glob: str, *, fold: bool = False) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    body = "".join(out)
    if not glob.startswith("/"):
        body = "(?:.*/)?" + body
    return re.compile(body + "$", re.IGNORECASE if fold else 0)


def runtime_paths(home: Path, workspace: Path, config: Any = None) -> tuple[str, ...]:
    """The runtime's own files, which no tool may touch: every entry of the home (those of
    :data:`PROTECTED_HOME_ENTRIES` whether they exist or not) except the folder that holds the
    workspace — only those named ones when the workspace is the home itself — and the audit log, its
    checkpoints and its keys wherever ``config`` puts them."""
    home, workspace = Path(os.path.realpath(home)), Path(os.path.realpath(workspace))
    names = set(PROTECTED_HOME_ENTRIES)
    if workspace != home:  # `workspace: .` makes the home a project: only the runtime's own names are its
        with contextlib.suppress(OSError):
            names.update(os.listdir(home))
    if _inside(str(workspace), str(home)) and workspace != home:
        names.discard(workspace.relative_to(home).parts[0])
    paths = {str(home / name) for name in names if not _inside(str(workspace), str(home / name))}
    if hasattr(config, "data"):
        # Where the audit plugin writes, read as it reads it: one reading of `audit.path` and `audit.keys`.
        from clawcore.security.audit import checkpoints_path_for
        from clawcore.security.audit_plugin import AuditSettings

        audit = AuditSettings.from_config(config.data, home)
        paths |= {os.path.realpath(p) for p in (audit.path, checkpoints_path_for(audit.path), audit.keys)}
    return tuple(sorted(paths))


# --------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PathPolicy:
    """Decides and opens paths for the builtin file tools.

    Build it with :meth:`from_config`; the constructor takes the raw lists
    (``{workspace}``, ``{tmp}``, ``{home}``, ``~`` are expanded).
    """

    workspace: Path
    home: Path
    allowed: Sequence[str] = DEFAULT_ALLOWED_PATHS
    denied: Sequence[str] = DEFAULT_DENIED_PATHS
    read_only: Sequence[str] = DEFAULT_READ_ONLY_PATHS
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)
    #: The runtime's own files (absolute); default :func:`runtime_paths` of the home and workspace.
    protected: Sequence[str] = ()
    _allowed: tuple[_Location, ...] = field(init=False, repr=False, compare=False)
    _denied: tuple[_Location, ...] = field(init=False, repr=False, compare=False)
    _read_only: tuple[_Location, ...] = field(init=False, repr=False, compare=False)
    _exceptions: tuple[_Location, ...] = field(init=False, repr=False, compare=False)
    _protected: tuple[_Location, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "workspace", Path(os.path.realpath(self.workspace)))
        object.__setattr__(self, "home", Path(os.path.realpath(self.home)))
        object.__setattr__(self, "_allowed", tuple(self._location(s) for s in self.allowed))
        # Denied entries ignore case: `server.KEY` or `.ENV` holds the same secrets as the lower-case names.
        object.__setattr__(self, "_denied", tuple(self._location(s, fold=True) for s in self.denied
                                                  if not s.startswith("!")))
        object.__setattr__(self, "_exceptions", tuple(self._location(s[1:]) for s in self.denied if s.startswith("!")))
        # Read-only entries ignore case too: on a case-insensitive disk `.git/HOOKS` is `.git/hooks`.
        object.__setattr__(self, "_read_only", tuple(self._location(s, fold=True) for s in self.read_only))
        if not self.protected:
            object.__setattr__(self, "protected", runtime_paths(self.home, self.workspace))
        object.__setattr__(self, "_protected", tuple(self._location(path) for path in self.protected))

    @classmethod
    def from_config(cls, config: Any) -> PathPolicy:
        """The policy of a :class:`clawcore.config.Config` (``sandbox.allowedPaths`` / ``deniedPaths``)."""
        section = config.section("sandbox") if hasattr(config, "section") else {}
        return cls(
            workspace=config.workspace,
            home=config.home,
            allowed=tuple(section.get("allowedPaths", DEFAULT_ALLOWED_PATHS)),
            denied=tuple(section.get("deniedPaths", DEFAULT_DENIED_PATHS)),
            read_only=tuple(section.get("readOnlyPaths", DEFAULT_READ_ONLY_PATHS)),
            protected=runtime_paths(config.home, config.workspace, config),
        )

    # -- building ------------------------------------------------------------

    def _expand_spec(self, spec: str) -> str:
        user_home = self.environ.get("HOME") or str(Path.home())
        value = (
            spec.replace("{workspace}", str(self.workspace))
            .replace("{home}", str(self.home))
            .replace("{tmp}", tempfile.gettempdir())
        )
        if value == "~" or value.startswith("~/"):
            value = user_home + value[1:]
        return value

    def _location(self, spec: str, *, fold: bool = False) -> _Location:
        value = self._expand_spec(spec)
        if _GLOB.search(value):
            if value.startswith("/"):
                # Resolve the literal directories before the first wildcard (/tmp may be a symlink).
                first = _GLOB.search(value)
                base = value[: first.start() if first else len(value)].rsplit("/", 1)[0]
                if base:
                    value = os.path.realpath(base) + value[len(base):]
            return _Location(spec, pattern=_glob_regex(value, fold=fold))
        if not value.startswith("/"):
            value = str(self.workspace / value)
        return _Location(spec, prefix=os.path.realpath(value))

    # -- deciding -------------------------------------------------------------

    def _real(self, reading: str) -> str | None:
        """The real absolute path of one reading, or None when it cannot be a local path."""
        value = reading
        if value.startswith("~"):
            head, sep, rest = value.partition("/")
            expanded = os.path.expanduser(head) if head != "~" else (self.environ.get("HOME") or str(Path.home()))
            if expanded.startswith("~"):
                return None  # ~user that does not exist: no safe reading
            value = expanded + sep + rest
        if not value.startswith("/"):
            value = str(self.workspace / value)
        return os.path.realpath(value)

    def check(self, path: str, op: Op = "read") -> Decision:
        """Allow or deny ``op`` on ``path``; the reasons say which rule decided.

        Relative paths are relative to the workspace. Never raises for a bad
        path: a path that cannot be read safely is denied.
        """
        problem = self._problem(path, op)
        if problem is not None:
            rule, reason = problem
            return Decision.deny(reason, rules=(rule,), source="paths")
        return Decision.allow(f"{op} {path!r} is inside the allowed paths", rules=("path-allowed",), source="paths")

    def resolve(self, path: str, op: Op = "read") -> Path:
        """The real path ``path`` names, after :meth:`check`.

        :raises PathDenied: the policy denies it (the message says why).
        """
        problem = self._problem(path, op)
        if problem is not None:
            raise PathDenied(problem[1])
        real = self._real(path)
        assert real is not None
        return Path(real)

    def _problem(self, path: str, op: Op) -> tuple[str, str] | None:
        if op not in ("read", "write"):
            return "path-op", f"unknown operation {op!r} (read or write)"
        if not isinstance(path, str) or not path.strip():
            return "path-empty", "empty path"
        if len(path) > _MAX_LEN:
            return "path-too-long", f"path longer than {_MAX_LEN} characters"
        variants = path_variants(path, self.environ)
        for variant in variants:
            if "\x00" in variant:
                return "path-nul", f"path {path!r} contains a NUL byte (after decoding)"
            if _CONTROL.search(variant):
                return "path-control", f"path {path!r} contains control characters (after decoding)"
            if _WINDOWS.match(variant):
                return "path-windows", f"path {path!r} is a Windows drive or UNC path; use a workspace path"
        for variant in variants:
            real = self._real(variant)
            shown = path if variant == path else f"{path!r} (read as {variant!r})"
            if real is None:
                return "path-unresolvable", f"path {shown} starts with an unknown ~user"
            if not variant.startswith(("/", "~")):
                lexical = os.path.normpath(os.path.join(self.workspace, variant))
                if not _inside(lexical, str(self.workspace)):
                    return "path-traversal", (
                        f"relative path {shown} climbs out of the workspace to {lexical}; "
                        "relative paths stay in the workspace (give an absolute path for other allowed places)"
                    )
            for location in self._protected:
                if location.matches(real):
                    return "path-protected", (
                        f"path {shown} is the runtime's own {location.spec.rsplit('/', 1)[-1]} "
                        f"({real}); tools may not touch it"
                    )
            for location in self._denied:
                if location.matches(real) and not any(e.matches(real) for e in self._exceptions):
                    return "path-denied", f"path {shown} resolves to {real}, denied by sandbox.deniedPaths {location.spec!r}"
            if op == "write":
                for location in self._read_only:
                    if location.matches(real):
                        return "path-read-only", (
                            f"path {shown} resolves to {real}, read-only by sandbox.readOnlyPaths {location.spec!r}"
                        )
            if not any(location.matches(real) for location in self._allowed):
                roots = ", ".join(loc.prefix or loc.spec for loc in self._allowed) or "none"
                return "path-outside", f"path {shown} resolves to {real}, outside the allowed paths ({roots})"
        return None

    def runtime_file(self, word: str, bases: Sequence[Path], *, home_too: bool = False,
                     holders_too: bool = False) -> str | None:
        """The runtime file (config, audit log, transcripts, index) a shell word names.

        For the words of a ``bash`` command, which the file tools' checks never see: relative words are
        read from each of ``bases``, ``~`` as both the user's home and the sandbox's (the working
        directory), and a glob matches when it could name an entry or anything inside it. A word with a
        part only known at run time (``\\x00`` from :mod:`clawcore.security.shell`) is checked when its
        known part names an entry; one that begins with such a part (``$X/clawcore.yaml``) when its
        known part holds a name only the runtime uses. ``home_too``: the home folder itself counts too
        (for commands that move or re-own what they name); ``holders_too``: so does every folder that
        holds it (for commands that delete what they name). Returns the entry's path, or None.
        """
        from clawcore.security.shell import DYNAMIC

        if word.startswith(DYNAMIC):
            return self._runtime_name(word.rsplit(DYNAMIC, 1)[1])
        if DYNAMIC in word and not any(Path(path).name in word for path in (*self.protected, self.home)):
            return None
        # The shell's own view of where it is: /proc/self/cwd (or its own pid's, `$$`) is the folder the
        # command runs in, and /proc/…/root the filesystem's root.
        alias = re.match(rf"^/proc/(?:self|thread-self|\d+|[{DYNAMIC}]+)/(cwd|root)(?=/|$)", word)
        if alias:
            word = ((str(self.workspace) if alias.group(1) == "cwd" else "") + word[alias.end():]) or "/"
        if word.startswith(("~-", "~+")):  # OLDPWD and PWD: any folder the line may be in
            candidates = [str(base) + word[2:] for base in bases]
        elif word.startswith("~"):
            candidates = self.tilde(word)
        elif word.startswith("/"):
            candidates = [word]
        else:
            candidates = [str(base / word) for base in bases]
        entries = list(self.protected)
        home = str(self.home)
        for candidate in candidates:
            if _GLOB.search(candidate) or DYNAMIC in candidate:
                parts = os.path.normpath(candidate.replace(DYNAMIC, "*")).split("/")
                for target in entries:
                    depth = target.count("/") + 1  # the pattern's parts that would name the target itself
                    if len(parts) >= depth and fnmatch.fnmatchcase(target, "/".join(parts[:depth])):
                        return target
                depth = home.count("/") + 1
                if (home_too and len(parts) == depth or holders_too and len(parts) <= depth) and \
                        fnmatch.fnmatchcase("/".join(home.split("/")[:len(parts)]), "/".join(parts)):
                    return home
                continue
            try:
                readings = {os.path.normpath(candidate), os.path.realpath(candidate)}
            except OSError:  # a link it may not follow (/proc/1/ns/...): the spelling alone is judged
                readings = {os.path.normpath(candidate)}
            for real in readings:
                if home_too and real == home or holders_too and _inside(home, real):
                    return home
                for entry in entries:
                    if _inside(real, entry):
                        return entry
        return None

    def tilde(self, word: str) -> list[str]:
        """``~``/``~/x`` read both ways: from the user's home, and from the sandbox's (its working directory)."""
        rest = word[1:]
        return [(self.environ.get("HOME") or str(Path.home())) + rest, str(self.workspace) + rest]

    def _runtime_name(self, known: str) -> str | None:
        """The runtime entry that the known tail of ``$X/...`` names by a name only the runtime uses."""
        parts = [part for part in os.path.normpath(known).split("/") if part not in ("", ".")]
        for index, part in enumerate(parts):
            named = next((name for name in _RUNTIME_NAMES if fnmatch.fnmatchcase(name, part)), None)
            # The name itself, or a glob that begins like it and spells most of it (c*.yaml; not * or *.jsonl).
            if named is not None and (part == named or not _GLOB.match(part)
                                      and len(_GLOB.sub("", part)) >= 3):
                return str(self.home / _RUNTIME_NAMES[named])
            if part == self.home.name and index + 1 < len(parts) and \
                    str(self.home / parts[index + 1]) in self.protected:
                return str(self.home / parts[index + 1])
        return None

    # -- opening ---------------------------------------------------------------

    def open(
        self,
        path: str,
        op: Op = "read",
        mode: str = "r",
        *,
        encoding: str | None = "utf-8",
        create_parents: bool = False,
    ) -> IO[Any]:
        """Check ``path`` and open the checked real file without following any symlink.

        ``mode`` is an :func:`open` mode (``r``, ``rb``, ``w``, ``a``, ``x`` ...);
        a writing mode needs ``op="write"``. Only regular files are opened.

        :raises PathDenied: the policy denies the path, or it changed into a
            symlink (or something other than a regular file) after the check.
        :raises FileNotFoundError: reading a file that does not exist.
        """
        writing = any(c in mode for c in "wax+")
        if writing and op != "write":
            raise PathDenied(f"mode {mode!r} writes; open {path!r} with op='write'")
        real = self.resolve(path, op)
        fd = _open_nofollow(real, mode, create_parents=create_parents)
        binary = "b" in mode
        return os.fdopen(fd, mode, encoding=None if binary else encoding)

    def replace(self, path: str, data: bytes, *, create_parents: bool = False) -> Path:
        """Check ``path`` for writing and replace its content atomically (write beside, then rename).

        Readers never see a half-written file and a failed write loses nothing.

        :raises PathDenied: the policy denies the path, or a symlink appeared at it after the check.
        """
        real = self.resolve(path, "write")
        _replace_atomic(real, data, create_parents=create_parents)
        return real


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _flags(mode: str) -> int:
    base = mode.replace("b", "").replace("t", "")
    plus = "+" in base
    kind = base.replace("+", "")
    if kind == "r":
        flags = os.O_RDWR if plus else os.O_RDONLY
    elif kind == "w":
        flags = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_TRUNC
    elif kind == "a":
        flags = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_APPEND
    elif kind == "x":
        flags = (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT | os.O_EXCL
    else:
        raise ValueError(f"unsupported mode {mode!r}")
    return flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _walk_to_parent(real: Path, *, create_parents: bool) -> int:
    """A file descriptor of ``real``'s folder, reached from ``/`` with ``O_NOFOLLOW`` at every step."""
    parts = real.parts
    if len(parts) < 2:
        raise PathDenied(f"{real} is not a file")
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for name in parts[1:-1]:
            try:
                try:
                    next_fd = os.open(name, dir_flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create_parents:
                        raise
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                    next_fd = os.open(name, dir_flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathDenied(
                        f"{real}: a component changed into a symlink or file after the policy check; refused"
                    ) from exc
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_nofollow(real: Path, mode: str, *, create_parents: bool) -> int:
    """Open ``real`` walking from ``/`` with ``O_NOFOLLOW`` directory fds; return the file's fd."""
    fd = _walk_to_parent(real, create_parents=create_parents)
    try:
        flags = _flags(mode) | os.O_NONBLOCK
        try:
            file_fd = os.open(real.name, flags, 0o644, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathDenied(f"{real} is a symlink (created after the policy check?); refused") from exc
            raise
    finally:
        os.close(fd)
    try:
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathDenied(f"{real} is not a regular file")
        os.set_blocking(file_fd, True)
    except BaseException:
        os.close(file_fd)
        raise
    return file_fd


def _replace_atomic(real: Path, data: bytes, *, create_parents: bool) -> None:
    """Write ``data`` to a new file beside ``real`` and rename it over ``real`` (same folder fd).

    A failure at any point leaves the old file as it was; the old file's
    permission bits are kept; a symlink at ``real`` is refused, not replaced.
    """
    fd = _walk_to_parent(real, create_parents=create_parents)
    temp = f".{real.name}.clawcore-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        try:
            old = os.stat(real.name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            mode = 0o644
        else:
            if not stat.S_ISREG(old.st_mode):
                raise PathDenied(f"{real} is not a regular file (a symlink created after the policy check?)")
            mode = stat.S_IMODE(old.st_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        file_fd = os.open(temp, flags, mode, dir_fd=fd)
        try:
            with os.fdopen(file_fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(temp, real.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=fd)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)
