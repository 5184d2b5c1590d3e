"""The ``local`` sandbox backend: ``bash -c`` as a subprocess behind whatever isolation the machine has.

Always, on every machine:

* the command runs in its own process group (and session); a timeout kills
  the whole group with SIGKILL, so ``sleep 1000 &`` children die too;
* the environment is rebuilt from a short list (``PATH``, locale, ``TERM``,
  ``TZ``) plus ``sandbox.passEnv``; no key or token of the parent leaks in,
  and ``HOME`` is the working directory;
* stdout and stderr are read concurrently and capped at ``sandbox.maxOutput``
  bytes each; a command that keeps writing past four times the cap is stopped.

Where available, in this order (``sandbox.isolation: auto``):

* **bubblewrap** (``bwrap``): read-only root, the working directory and the
  allowed paths writable, a private ``/tmp``, fresh ``/dev`` and ``/proc``,
  credential stores and the runtime's own files hidden, new PID/IPC/UTS
  namespaces, all capabilities dropped, and no network namespace shared with
  the host unless ``sandbox.network.shell: allow``;
* **unshare** (util-linux): new user (where not root), network, PID, IPC and
  UTS namespaces — no network and no view of other processes, and the host
  filesystem, on which what bubblewrap hides is covered in the command's own
  mount namespace before every capability is dropped (as another user than
  root this needs ``unshare --keep-caps``, util-linux 2.38);
* **none**: process-group and environment hygiene only; :meth:`LocalSandbox.info`
  says so plainly, for the system prompt and ``clawcore sandbox info``.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from clawcore.security.secrets import scan_text
from clawcore.types import ExecResult, ProviderUnavailable

__all__ = ["BASE_ENV_KEYS", "Isolation", "LocalSandbox", "covering", "credential_stores", "detect_isolation",
           "engine_sockets", "make_placeholders", "runtime_entries"]

#: Environment variables every command gets from the parent (nothing secret).
BASE_ENV_KEYS: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LANGUAGE", "TERM", "TZ")

#: Names never passed through, even when ``sandbox.passEnv`` matches them (upper-cased first).
_SECRET_ENV = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASS*", "*_PWD*", "*PW", "*_PW_*", "PW_*", "*CRED*",
               "*AUTH*", "*COOKIE*", "*SESSION*", "*PRIVATE*", "*DSN*", "*SEED*", "*CONN*", "*SALT*",
               "*SIGNING*", "*WEBHOOK*", "*MNEMONIC*", "*LICENSE*", "*JWT*", "*BEARER*")
#: A value that carries a credential the secret scanner has no pattern for: a URL with a user part
#: (``https://KEY@sentry.io/1``, ``postgres://user:pw@db``) or an assignment of one in a connection string
#: (``Server=db;Password=...``, ``user=x pwd=...``).
_SECRET_VALUE = re.compile(r"://[^/\s@]+@|(?i:(pass(word|wd)?|pwd|pw|secret|token|key|auth|credentials?)\s*[=:])")

Isolation = str  # "bwrap" | "unshare" | "none"

#: Home-relative credential stores hidden inside bubblewrap.
_HIDDEN_HOME_DIRS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gcloud", ".config/gh")
_HIDDEN_HOME_FILES = (".netrc", ".npmrc", ".pypirc", ".git-credentials", ".vault-token", ".bash_history",
                      ".zsh_history")


def credential_stores(home: Path) -> list[Path]:
    """The credential stores a home folder may hold (``.ssh``, ``.aws``, ``.netrc`` ...), which sandboxes hide."""
    return [home / rel for rel in (*_HIDDEN_HOME_DIRS, *_HIDDEN_HOME_FILES)]


#: System files and folders hidden the same way.
_HIDDEN_SYSTEM_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
_HIDDEN_SYSTEM_DIRS = ("/etc/sudoers.d", "/run/secrets", "/var/run/secrets", "/root")

#: Where container engines keep their API sockets: a shell that can reach one can start a privileged
#: container, network or no network. System places, places in a user's home (Docker Desktop, Colima, Lima,
#: Rancher Desktop, OrbStack, Podman machines), and in the temporary folder: the folder of
#: ``scripts/podman-service`` and Podman's own fallbacks when ``XDG_RUNTIME_DIR`` is not set.
_ENGINE_SYSTEM = ("/var/run/docker.sock", "/run/docker.sock", "/run/docker", "/var/run/docker", "/run/podman",
                  "/var/run/podman", "/run/containerd", "/var/run/containerd", "/run/crio", "/var/run/crio",
                  "/run/buildkit", "/run/user")
_ENGINE_HOME = (".docker", ".colima", ".lima", ".rd", ".orbstack", ".local/share/containers", ".config/containers")
_ENGINE_TMP = ("clawcore-podman-*", "podman-run-*", "storage-run-*", "containers-user-*")
#: Variables that name an engine's socket (``unix://PATH``) or a folder holding engine sockets.
_ENGINE_URL_VARS = ("DOCKER_HOST", "CONTAINER_HOST")
_ENGINE_DIR_VARS = ("XDG_RUNTIME_DIR", "CLAWCORE_PODMAN_DIR")


def engine_sockets(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The places where a container engine's API socket may be: what every sandbox covers."""
    environ = os.environ if environ is None else environ
    paths = [Path(p) for p in _ENGINE_SYSTEM] + [Path.home() / rel for rel in _ENGINE_HOME]
    for tmp in sorted({"/tmp", "/var/tmp", tempfile.gettempdir()}):
        paths += [Path(p) for pattern in _ENGINE_TMP for p in glob.glob(os.path.join(glob.escape(tmp), pattern))]
    paths += [Path(environ[v].removeprefix("unix://")) for v in _ENGINE_URL_VARS
              if environ.get(v, "").startswith("unix://")]
    paths += [Path(environ[v]) for v in _ENGINE_DIR_VARS if environ.get(v, "").startswith("/")]
    return paths


#: Entries of the home that are files (the others are folders), for :func:`runtime_entries`.
_HOME_FILES = frozenset({"clawcore.yaml", "clawcore.yaml.bak", ".env"})


def runtime_entries(home: Path, config: Any = None) -> dict[Path, bool]:
    """The runtime's named files and folders (real paths), each with whether it is a folder: those the
    sandboxes create empty when missing (:func:`make_placeholders`), so that they can be covered; the
    audit log's with ``config`` (a :class:`clawcore.config.Config`)."""
    from clawcore.security.audit import checkpoints_path_for
    from clawcore.security.audit_plugin import AuditSettings
    from clawcore.security.paths import PROTECTED_HOME_ENTRIES

    entries = {Path(home) / name: name not in _HOME_FILES for name in PROTECTED_HOME_ENTRIES}
    if hasattr(config, "data"):
        audit = AuditSettings.from_config(config.data, Path(home))
        entries |= {audit.path: False, checkpoints_path_for(audit.path): False, audit.keys: True}
    return {Path(os.path.realpath(path)): folder for path, folder in entries.items()}


def make_placeholders(entries: Mapping[Path, bool], writable: Callable[[Path], bool] = lambda path: True) -> None:
    """Create what is missing of ``entries`` where a command could write: empty, a folder (0700) or a file
    (0600), with the folders above it. A missing entry cannot be covered (a mount needs a target): a command
    could create it, or put a link there that the runtime would later write through. An empty config,
    ``.env`` or folder means to the runtime what a missing one does. What cannot be created (no right to)
    is left missing."""
    for path, folder in entries.items():
        if os.path.lexists(path) or not writable(path):
            continue
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder:
                path.mkdir(mode=0o700)
            else:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        except OSError:
            continue


def _probe(argv: Sequence[str]) -> bool:
    try:
        done = subprocess.run(
            [*argv, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=10, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


#: Where the programs that set a sandbox up are looked for: never the inherited PATH, in which a command
#: could have planted its own ``mount`` or ``setpriv`` (``~/.local/bin``) to run before the capabilities go.
_SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


@functools.lru_cache(maxsize=16)
def _tool(name: str) -> str:
    """The absolute path of a system program (``name`` itself when it is not there: the call then fails)."""
    return shutil.which(name, path=_SYSTEM_PATH) or name


def _unshare_argv(*, masking: bool = False) -> list[str]:
    """unshare's arguments; ``masking`` keeps a non-root user's namespace capabilities for the mounts."""
    argv = [_tool("unshare"), "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        argv[1:1] = ["--user", "--map-current-user"] + (["--keep-caps"] if masking else [])
    return argv


def _drop_caps() -> str:
    """Shell that runs the command after the mounts with no capability left (umount needs CAP_SYS_ADMIN)."""
    return _as_child(f'{_tool("setpriv")} --bounding-set -all --inh-caps -all --ambient-caps -all '
                     f'{_tool("bash")} --noprofile --norc -c "$0"')


def _as_child(line: str) -> str:
    """Shell, for the first process of a new PID namespace, that runs ``line`` as its child and exits with
    its status (128+n when a signal killed it). The first process of a PID namespace ignores every signal
    it has no handler for, SIGKILL from inside included: the command must not be that process, or
    ``kill -9 $$`` would do nothing. Not ``exec``, not ``&`` (which would take stdin and SIGINT away); the
    waiting shell's own stderr goes nowhere, so its report of a killed child is not the command's output."""
    return f"{{ exec 3>&2 2>/dev/null; {line} 2>&3 3>&-; exit $?; }}"


@functools.lru_cache(maxsize=1)
def _can_mask() -> bool:
    """Whether a command under unshare can mount over files and then drop every capability.

    As root it can; as another user it needs a user namespace that keeps its capabilities
    (``unshare --keep-caps``, util-linux 2.38 and later).
    """
    setpriv, mount = shutil.which("setpriv", path=_SYSTEM_PATH), shutil.which("mount", path=_SYSTEM_PATH)
    return bool(setpriv and mount) and _probe(
        [*_unshare_argv(masking=True), _tool("bash"), "--noprofile", "--norc", "-c",
         f"{_tool('mount')} --bind /dev/null /dev/null && {_drop_caps()}"])


@functools.lru_cache(maxsize=8)
def detect_isolation(preference: str = "auto") -> Isolation:
    """The strongest isolation that works on this machine (probed once per process).

    :param preference: ``auto``, or a specific ``bwrap``/``unshare``/``none``.
    :raises ProviderUnavailable: a specific isolation was asked for and does not work here.
    """
    bwrap = shutil.which("bwrap", path=_SYSTEM_PATH)
    unshare = shutil.which("unshare", path=_SYSTEM_PATH)
    bwrap_ok = bool(bwrap) and _probe([bwrap or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                       "--unshare-net", "--unshare-pid", "--die-with-parent"])
    if preference == "bwrap" or (preference == "auto" and bwrap_ok):
        if not bwrap_ok:
            raise ProviderUnavailable(
                "sandbox.isolation is 'bwrap' but bubblewrap is missing or cannot create namespaces here; "
                "install it (apt-get install bubblewrap) or set sandbox.isolation: auto"
            )
        return "bwrap"
    unshare_ok = bool(unshare) and _probe(_unshare_argv())
    if preference == "unshare" or (preference == "auto" and unshare_ok):
        if not unshare_ok:
            raise ProviderUnavailable(
                "sandbox.isolation is 'unshare' but unshare(1) cannot create namespaces here "
                "(user namespaces disabled?); set sandbox.isolation: auto"
            )
        return "unshare"
    return "none"


@dataclass(frozen=True)
class _Streams:
    stdout: bytes
    stderr: bytes
    truncated: bool
    flooded: bool


class LocalSandbox:
    """Runs commands on this machine; see the module docstring for the boundary.

    :param timeout_s: default timeout when a caller passes none.
    :param max_output: bytes kept per stream.
    :param network: True lets commands use the host network (``sandbox.network.shell: allow``).
    :param isolation: ``auto``, ``bwrap``, ``unshare`` or ``none``.
    :param writable: extra writable paths inside bubblewrap (the allowed paths).
    :param hidden: paths hidden inside bubblewrap (the runtime's own files).
    :param pass_env: glob patterns of parent variables to pass through.
    :param home: ``$CLAWCORE_HOME``: under ``unshare`` read-only but for the writable paths inside it, so
        that no command renames it or plants a config, transcript or index there.
    :param placeholders: the runtime's entries (path: is a folder) created empty when missing, so that
        they can be covered (:func:`runtime_entries`).
    """

    name = "local"

    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        max_output: int = 256 * 1024,
        network: bool = False,
        isolation: str = "auto",
        writable: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        pass_env: Sequence[str] = (),
        home: Path | None = None,
        placeholders: Mapping[Path, bool] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.max_output = max_output
        self.network = network
        self.isolation = detect_isolation(isolation)
        self.writable = tuple(Path(p) for p in writable)
        self.hidden = tuple(Path(p) for p in hidden)
        self.pass_env = tuple(pass_env)
        self._withheld: set[str] = set()
        self.home = Path(home) if home is not None else None
        self.placeholders = dict(placeholders or {})
        self._live: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Any) -> LocalSandbox:
        """The backend for a :class:`clawcore.config.Config` (``sandbox`` section)."""
        from clawcore.config import parse_duration, parse_size
        from clawcore.security.paths import runtime_paths

        section = config.section("sandbox")
        network = config.section("sandbox.network")
        writable = [config.workspace]
        for spec in section.get("allowedPaths", ()):
            value = (str(spec).replace("{workspace}", str(config.workspace)).replace("{home}", str(config.home))
                     .replace("{tmp}", tempfile.gettempdir()))
            if value.startswith("~"):
                value = os.path.expanduser(value)
            if value.startswith("/") and not any(c in value for c in "*?["):
                writable.append(Path(value))
        hidden = [Path(path) for path in runtime_paths(config.home, config.workspace, config)]
        hidden_set = {os.path.realpath(path) for path in hidden}
        placeholders = {path: folder for path, folder in runtime_entries(config.home, config).items() if str(path) in hidden_set}
        return cls(
            timeout_s=parse_duration(section.get("timeout", "30s")),
            max_output=parse_size(section.get("maxOutput", "256k")),
            network=network.get("shell", "deny") == "allow",
            isolation=str(section.get("isolation", "auto")),
            writable=writable,
            hidden=hidden,
            home=Path(config.home),
            placeholders=placeholders,
            pass_env=tuple(section.get("passEnv", ())),
        )

    # -- description ---------------------------------------------------------

    def info(self) -> str:
        """One paragraph describing the boundary, for the system prompt."""
        net = "has network access" if self.network else "has no network access"
        if self.isolation == "bwrap":
            boundary = (
                "Shell commands run with bash inside bubblewrap: the filesystem is read-only except the "
                "working directory and the allowed paths, /tmp is private, credential stores are hidden, "
                "other processes are invisible, and the shell " + net + "."
            )
        elif self.isolation == "unshare":
            boundary = (
                "Shell commands run with bash in new Linux namespaces (unshare): other processes are invisible "
                "and the shell " + ("has network access" if self.network else "has no network access (own empty "
                                    "network namespace)") + "; the filesystem is the host's, limited by file permissions"
                + (" (credential stores and the runtime's own files are covered)" if _can_mask() else "") + "."
            )
        else:
            boundary = (
                "Shell commands run with bash as a plain subprocess WITHOUT OS-level isolation "
                "(no bubblewrap or unshare on this machine): the filesystem and network are the host's"
                + ("" if self.network else "; network isolation for the shell could NOT be applied") + "."
            )
        return (
            f"{boundary} Each command gets a scrubbed environment (no API keys or tokens), runs in its own "
            f"process group, is killed after its timeout (default {self.timeout_s:g}s), and its output is cut "
            f"at {self.max_output} bytes per stream. [backend local, isolation {self.isolation}]"
        )

    # -- running ---------------------------------------------------------------

    def environment(self, cwd: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The scrubbed environment a command gets."""
        env = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
        for key, value in os.environ.items():
            if not any(fnmatchcase(key, pattern) for pattern in self.pass_env):
                continue
            # A credential under an innocent name (GH_PAT, DATABASE_URL, DB_CONN) stays out too.
            if not any(fnmatchcase(key.upper(), pattern) for pattern in _SECRET_ENV) \
                    and not _SECRET_VALUE.search(value) and not scan_text(value):
                env[key] = value
            elif key in self.pass_env and key not in self._withheld:
                # Named outright, and said once: a script that needs it must not just break in silence.
                self._withheld.add(key)
                warnings.warn(f"sandbox.passEnv names {key}, which is not passed to commands: its name or value "
                              "looks like a credential", RuntimeWarning, stacklevel=2)
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.setdefault("LANG", "C.UTF-8")
        env["HOME"] = str(cwd)
        env["PWD"] = str(cwd)
        env["CLAWCORE_SANDBOX"] = f"local:{self.isolation}"
        if extra:
            env.update({str(k): str(v) for k, v in extra.items()})
        return env

    def argv(self, command: str, cwd: Path) -> list[str]:
        """The full argument vector that runs ``command`` (isolation wrapper included)."""
        shell = [_tool("bash"), "--noprofile", "--norc", "-c", command]
        if self.isolation == "bwrap":
            return [*self._bwrap_prefix(cwd), *shell]
        if self.isolation == "unshare":
            masking = _can_mask()
            argv = _unshare_argv(masking=masking)
            if self.network:
                argv.remove("--net")
            if masking:
                # The host's filesystem is in view: in the command's own mount namespace, cover what
                # bubblewrap hides, then drop every capability so the command cannot uncover it.
                make_placeholders(self.placeholders, functools.partial(self._writable_under_unshare, cwd))
                dirs, files = self._masked([cwd])
                prelude = self._pinned(cwd, [*map(Path, dirs), *map(Path, files)]) + _kernel_read_only()
                prelude += "".join(f"{_tool('mount')} -t tmpfs -o size=4k,mode=000 clawcore-hidden {shlex.quote(d)} && "
                                   for d in dirs)
                prelude += "".join(f"{_tool('mount')} --bind /dev/null {shlex.quote(f)} && " for f in files)
                # The working directory was entered before the mounts: enter it again through them, or
                # `..` from it would walk the tree as it was.
                prelude += f"cd {shlex.quote(os.path.realpath(cwd))} && "
                refuse = "{ echo 'sandbox: could not hide the protected files; not running' >&2; exit 126; }"
                return [*argv, _tool("bash"), "--noprofile", "--norc", "-c", f"{prelude}{_drop_caps()} || {refuse}",
                        command]
            return [*argv, _tool("bash"), "--noprofile", "--norc", "-c",
                    _as_child(f'{_tool("bash")} --noprofile --norc -c "$0"'), command]
        return shell

    def _writable_under_unshare(self, cwd: Path, path: Path) -> bool:
        """Whether a command under ``unshare`` could create ``path``: not in the read-only home (outside the
        writable paths in it), and where the user may write (as root: anywhere)."""
        real = Path(os.path.realpath(path))
        if self.home is not None and os.path.isdir(self.home):
            home = Path(os.path.realpath(self.home))
            writable = [Path(os.path.realpath(p)) for p in (cwd, *self.writable)]
            inside = [w for w in writable if _contains(home, w)]  # a writable folder above the home does not count
            if home not in writable and _contains(home, real) and not any(_contains(w, real) for w in inside):
                return False
        existing = next(p for p in (real, *real.parents) if os.path.lexists(p))
        return os.access(existing, os.W_OK)

    def _pinned(self, cwd: Path, covered: Sequence[Path]) -> str:
        """Shell that, in the command's mount namespace, makes the home and every folder above it or above a
        covered path a mount point, which cannot be renamed (EBUSY): no command can move the home, the
        audit log's folder or a credential store's away with its parent and read, or put another in its
        place. The home is then read-only but for the working directory and the writable paths inside it,
        unless it is itself writable (``{home}`` in ``allowedPaths``, ``workspace: .``)."""
        mount = _tool("mount")
        home = Path(os.path.realpath(self.home)) if self.home is not None and os.path.isdir(self.home) else None
        pins = _pins([*covered, *([home] if home else [])])
        if home:
            pins.add(home)
        inner = {p for p in pins if home and p != home and _contains(home, p)}
        line = "".join(f"{mount} --rbind {shlex.quote(str(p))} {shlex.quote(str(p))} && "
                       for p in _shallow_first(pins - inner))
        writable = [Path(os.path.realpath(p)) for p in (cwd, *self.writable)]
        if home and home not in writable:
            line += f"{mount} -o remount,bind,ro {shlex.quote(str(home))} && "
            for path in _shallow_first({p for p in writable if _contains(home, p) and os.path.isdir(p)}):
                quoted = shlex.quote(str(path))
                line += f"{mount} --bind {quoted} {quoted} && {mount} -o remount,bind,rw {quoted} && "
        # Inside the home after its read-only remount: a bind keeps the flags of the mount it is made in.
        line += "".join(f"{mount} --rbind {shlex.quote(str(p))} {shlex.quote(str(p))} && "
                        for p in _shallow_first(inner))
        return line

    def _masked(self, keep: Sequence[Path]) -> tuple[list[str], list[str]]:
        """The folders and files a command must not see: credential stores and the runtime's own files.

        A folder that holds one of ``keep`` (the working directory, a writable path) is left visible:
        covering it would hide what the command works on.
        """
        user_home = Path.home()
        candidates = [*credential_stores(user_home), *map(Path, _HIDDEN_SYSTEM_DIRS), *map(Path, _HIDDEN_SYSTEM_FILES)]
        candidates += [*self.hidden, *engine_sockets()]
        dirs, files = covering(candidates, keep)
        return [str(d) for d in dirs], [str(f) for f in files]

    def _bwrap_prefix(self, cwd: Path) -> list[str]:
        argv = [_tool("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
        if not self.network:
            argv.append("--unshare-net")
        if os.geteuid() == 0:
            argv += ["--cap-drop", "ALL"]
        binds: list[Path] = []
        private_tmp = Path(os.path.realpath(tempfile.gettempdir()))
        for path in (*self.writable, cwd):
            real = Path(os.path.realpath(path))
            if real == private_tmp and real != Path(os.path.realpath(cwd)):
                continue  # the shell gets its own /tmp; the host's stays out of reach
            if os.path.isdir(real) and real not in binds:
                binds.append(real)
        make_placeholders(self.placeholders, lambda path: any(_contains(b, path) for b in binds))
        dirs, files = self._masked(binds)
        # Inside the writable folders, the home and every folder above it or above a covered path are bound
        # onto themselves: mount points, which no command can rename to read what they hold or swap.
        home = [Path(os.path.realpath(self.home))] if self.home is not None and os.path.isdir(self.home) else []
        pins = {p for p in _pins([*map(Path, dirs), *map(Path, files), *home]) | set(home)
                if any(_contains(b, p) for b in binds)}
        for real in _shallow_first(pins | set(binds)):
            argv += ["--bind", str(real), str(real)]
        # After the binds, so that what is hidden inside a writable folder stays hidden.
        for folder in dirs:
            argv += ["--tmpfs", folder]
        for file in files:
            argv += ["--ro-bind", "/dev/null", file]
        argv += ["--chdir", str(Path(os.path.realpath(cwd)))]
        return argv

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in ``cwd``; never raises for a failing command."""
        timeout = self.timeout_s if timeout_s is None else float(timeout_s)
        cwd = Path(cwd)
        started = time.monotonic()
        argv, arm = self.argv(command, cwd), None
        if self.isolation != "bwrap":  # bwrap dies with its parent on its own (--die-with-parent)
            # Tied to the runtime by setpriv where it is there: a preexec function would cost a full fork.
            setpriv = shutil.which("setpriv", path=_SYSTEM_PATH)
            argv, arm = ([setpriv, "--pdeathsig", "KILL", "--", *argv], None) if setpriv else (
                argv, _die_with_parent(os.getpid()))
        try:
            proc = subprocess.Popen(
                argv,
                cwd=str(cwd),
                env=self.environment(cwd, env),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                preexec_fn=arm,  # noqa: PLW1509 -- two system calls, no lock taken
            )
        except OSError as exc:
            return ExecResult(127, "", f"cannot start the command: {exc}", duration_s=0.0, backend=self.name)
        with self._lock:
            self._live.add(proc)
        try:
            if stdin is not None:
                threading.Thread(target=_feed, args=(proc, stdin.encode("utf-8")), daemon=True).start()
            deadline = started + timeout
            streams, timed_out = self._collect(proc, deadline)
            if not (timed_out or streams.flooded):
                # Its output is closed, not necessarily ended (`exec >log 2>&1`): it has the rest of its time.
                try:
                    proc.wait(timeout=max(deadline - time.monotonic(), 0))
                except subprocess.TimeoutExpired:
                    timed_out = True
            if timed_out or streams.flooded:
                _kill_group(proc)
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                code = proc.wait()
        finally:
            with self._lock:
                self._live.discard(proc)
        stderr = streams.stderr.decode("utf-8", errors="replace")
        if timed_out:
            code = 124
            stderr += f"\n[clawcore: killed after the {timeout:g}s timeout]"
        elif streams.flooded:
            stderr += f"\n[clawcore: stopped after writing more than {4 * self.max_output} bytes]"
        if code < 0:
            code = 128 - code
        return ExecResult(
            exit_code=code,
            stdout=streams.stdout.decode("utf-8", errors="replace"),
            stderr=stderr,
            timed_out=timed_out,
            truncated=streams.truncated,
            duration_s=round(time.monotonic() - started, 4),
            backend=self.name,
        )

    def _collect(self, proc: subprocess.Popen[bytes], deadline: float) -> tuple[_Streams, bool]:
        assert proc.stdout is not None and proc.stderr is not None
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        buffers = {out_fd: bytearray(), err_fd: bytearray()}
        seen = dict.fromkeys(buffers, 0)
        selector = selectors.DefaultSelector()
        for stream in (proc.stdout, proc.stderr):
            os.set_blocking(stream.fileno(), False)
            selector.register(stream.fileno(), selectors.EVENT_READ)
        timed_out = flooded = truncated = False
        try:
            open_fds = set(buffers)
            while open_fds:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in selector.select(timeout=min(remaining, 0.5)):
                    fd = int(key.fd)
                    try:
                        chunk = os.read(fd, 65536)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        selector.unregister(fd)
                        open_fds.discard(fd)
                        continue
                    seen[fd] += len(chunk)
                    room = self.max_output - len(buffers[fd])
                    if room > 0:
                        buffers[fd] += chunk[:room]
                    if len(chunk) > max(room, 0):
                        truncated = True
                    if seen[fd] > 4 * self.max_output:
                        flooded = True
                if flooded:
                    break
        finally:
            selector.close()
            proc.stdout.close()
            proc.stderr.close()
        return _Streams(bytes(buffers[out_fd]), bytes(buffers[err_fd]), truncated, flooded), timed_out

    def close(self) -> None:
        """Kill anything still running; idempotent."""
        with self._lock:
            live = list(self._live)
            self._live.clear()
        for proc in live:
            _kill_group(proc)


def covering(paths: Iterable[Path], keep: Sequence[Path] = ()) -> tuple[list[Path], list[Path]]:
    """What to cover so that ``paths`` cannot be seen: the folders and the files, real paths, shallowest
    first, none inside a folder already covered, none missing.

    A folder that holds one of ``keep`` (the working directory, a writable path) is left visible:
    covering it would hide what the command works on.
    """
    kept = [Path(os.path.realpath(path)) for path in keep]
    dirs: list[Path] = []
    files: list[Path] = []
    for real in sorted({Path(os.path.realpath(path)) for path in paths}, key=lambda p: len(p.parts)):
        if any(_contains(d, real) for d in dirs):
            continue  # already under a covered folder
        try:
            mode = real.stat().st_mode
        except OSError:
            continue  # missing, or out of this user's reach: the command cannot reach it either
        if stat.S_ISDIR(mode):
            if not any(_contains(real, k) for k in kept):
                dirs.append(real)
        else:  # a file, or a socket
            files.append(real)
    return dirs, files


def _kernel_read_only() -> str:
    """Shell that, as root, makes the kernel's settings read-only in the command's mount namespace:
    ``/proc/sys`` (``core_pattern`` would run a program as root outside every namespace), ``/sys``
    (``uevent_helper``; bound without what is mounted below it, such as cgroups), ``/proc/sysrq-trigger``.
    As another user they are not writable."""
    if os.geteuid() != 0:
        return ""
    mount = _tool("mount")
    line = (f"{mount} --bind /proc/sys /proc/sys && {mount} -o remount,bind,ro /proc/sys && "
            f"{mount} --bind /sys /sys && {mount} -o remount,bind,ro,nosuid,nodev,noexec /sys && ")
    if os.path.exists("/proc/sysrq-trigger"):
        line += f"{mount} --bind /dev/null /proc/sysrq-trigger && "
    return line


def _pins(paths: Iterable[Path]) -> set[Path]:
    """Every folder above one of ``paths``, but ``/``."""
    return {parent for path in paths for parent in Path(os.path.realpath(path)).parents if parent != parent.parent}


def _shallow_first(paths: Iterable[Path]) -> list[Path]:
    return sorted(set(paths), key=lambda p: (len(p.parts), str(p)))


def _contains(root: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


def _die_with_parent(parent: int) -> Callable[[], None]:
    """What runs in the child before ``exec``: SIGKILL when the runtime dies (``PR_SET_PDEATHSIG``, kept
    across ``exec``), so that a runtime killed with SIGKILL leaves no command running past its timeout;
    ``unshare --kill-child`` and ``bwrap --die-with-parent`` then take the command's namespace with it."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it

    def arm() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(126)  # cannot be tied to the runtime, or the runtime is already gone: do not run

    return arm


#: ``prctl`` option (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except (ProcessLookupError, OSError):
        pass
