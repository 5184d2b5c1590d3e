"""Command analysis for the ``bash`` tool: judge what a command line would do.

The line is read statically by :mod:`clawcore.security.shell` (pipelines,
``;``/``&&``/``||``, substitutions, ``bash -c`` strings, ``eval``, quote and
backslash obfuscation, ``$IFS``, brace expansion), payloads that are decoded
and fed to a shell (base64, hex, ``printf`` escapes, rot13) are decoded and
read in turn, and every command that would run is judged by its behaviour:

* **deny** — catastrophic or plainly hostile: destructive deletes of system or
  home roots, disk wipes, remote code piped into a shell, reverse shells,
  fork bombs, credential theft and exfiltration, persistence carrying a
  payload, disabling security controls, tampering with logs, container escape;
* **confirm** — risky or sensitive but often legitimate: ``sudo``, recursive
  deletes and permission changes, ``dd``, ``kill -9``, shutdown, writes to
  start-up files or system configuration, malformed lines, commands whose
  name is only known at run time, injection-shaped chains of host probes;
* **allow** — everything else. Pipes, redirections and chains are ordinary
  shell and are never a reason on their own.

The verdict is the strictest of all findings. Nothing is executed. What
programs, paths and code patterns mean lives in
:mod:`clawcore.security.shell_vocabulary`; the static decoders in
:mod:`clawcore.security.payloads`.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from clawcore.security import shell
from clawcore.security.payloads import decode_base64, decode_hex, is_letter_cipher, transform
from clawcore.security.shell import SimpleCommand
from clawcore.security.shell_vocabulary import (
    AUDIT,
    CODE_DESTROY,
    CODE_EVAL,
    CODE_FETCH,
    CODE_FORK,
    CODE_REVERSE_SHELL,
    CODE_ROOTISH,
    CODE_SPAWN,
    CODE_STRING,
    CRITICAL_FILES,
    ESSENTIAL_FILES,
    FETCHERS,
    INTERPRETERS,
    LOGS,
    METADATA,
    MINER,
    NAME_TAKERS,
    OFFENSIVE,
    PERSISTENCE,
    PROBES,
    READERS,
    REMOTE_SPEC,
    RUNNERS,
    SECURITY_SERVICES,
    SENDERS,
    SETUID_MODE,
    SHELLS,
    SHELLSHOCK,
    SOCKET_TOOLS,
    SYSTEM_PREFIXES,
    TUNNELS,
    URL,
    WEBSHELL,
    WRAPPERS,
    is_credential,
    is_device,
    is_root_target,
    is_strong_credential,
    norm_path,
)
from clawcore.types import Action

__all__ = ["CommandAnalysis", "Finding", "analyze"]

_MAX_DEPTH = 6
_PERCENT_SEPARATOR = re.compile(r"%(0[aAdD]|3[bB]|26|7[cC]|60)")


@dataclass(frozen=True)
class Finding:
    """One behaviour the analysis recognised: a stable rule id, its action and a sentence."""

    rule: str
    action: Action
    reason: str


@dataclass(frozen=True)
class CommandAnalysis:
    """The verdict on a command line: the strictest finding's action and every reason."""

    command: str
    action: Action
    findings: tuple[Finding, ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        top = [f for f in self.findings if f.action is self.action]
        return tuple(dict.fromkeys(f.reason for f in top))

    @property
    def rules(self) -> tuple[str, ...]:
        top = [f for f in self.findings if f.action is self.action]
        return tuple(dict.fromkeys(f.rule for f in top))


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def analyze(command: str) -> CommandAnalysis:
    """Judge a command line for the ``bash`` tool.

    Called by the builtin policy before every ``bash`` call and by
    ``clawcore scan``. Returns the strictest action over every finding; an
    empty command is allowed.
    """
    if not isinstance(command, str):
        return CommandAnalysis(
            str(command), Action.DENY, (Finding("not-text", Action.DENY, "the command is not text"),)
        )
    return _analyze(command)


@functools.lru_cache(maxsize=2048)
def _analyze(command: str) -> CommandAnalysis:
    # Agents repeat commands (`git status`, `ls`); the verdict is a pure function of the text.
    findings = _Judge(0).line(command)
    # A literal "\n" outside quotes reads as the letter n in bash, but an interface that
    # unescapes the text would run two commands: judge that reading too (deny on doubt).
    if re.search(r"(?<!\\)\\n", command) and "'" not in command and '"' not in command:
        findings += _Judge(0).line(command.replace("\\n", "\n"))
    elif re.search(r"\\n(?=[/a-z])", command):
        findings += _Judge(0).line(re.sub(r"\\n(?=[/a-z])", "\n", command))
    if _PERCENT_SEPARATOR.search(command):
        # URL-encoded separators (`%0a`, `%3b`, `%26`, `%7c`): judge the decoded reading too
        findings += _Judge(0).line(urllib.parse.unquote(command))
    findings = list(dict.fromkeys(findings))
    action = max((f.action for f in findings), key=lambda a: a.rank, default=Action.ALLOW)
    return CommandAnalysis(command, action, tuple(findings))


# --------------------------------------------------------------------------
# The judge
# --------------------------------------------------------------------------


class _Judge:
    """Collects findings for one line and everything it runs, down to ``_MAX_DEPTH``."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.found: list[Finding] = []

    def add(self, rule: str, action: Action, reason: str) -> None:
        # A reason may quote a word with a part only known at run time: show that part as "$…".
        self.found.append(Finding(rule, action, reason.replace(shell.DYNAMIC, "$…")))

    def deny(self, rule: str, reason: str) -> None:
        self.add(rule, Action.DENY, reason)

    def confirm(self, rule: str, reason: str) -> None:
        self.add(rule, Action.CONFIRM, reason)

    def nested(self, text: str, why: str) -> list[Finding]:
        """Judge text that the line would run as shell (``bash -c``, ``eval``, piped to ``sh``)."""
        if self.depth >= _MAX_DEPTH:
            return [Finding("too-deep", Action.CONFIRM, f"{why} nests too deeply to judge")]
        return _Judge(self.depth + 1).line(text, nested=True)

    # -- the line ------------------------------------------------------------

    def line(self, text: str, *, nested: bool = False) -> list[Finding]:
        if SHELLSHOCK.search(text):
            self.deny("shellshock", "defines a function the Shellshock way (`() { :;};`): an exploit probe")
        if len(text) > 20000:
            self.confirm("oversized", "the command is longer than 20000 characters")
        if re.search(r"\bztcp\b", text) and re.search(r"\b(ba|z|da|k)?sh\b[^|;&]*[<>]&", text):
            self.deny("reverse-shell", "connects a shell to a zsh TCP socket")
        if (
            CODE_REVERSE_SHELL.search(text)
            and CODE_SPAWN.search(text)
            and re.search(r"\d+\.\d+\.\d+\.\d+|connect\s*\(", text)
        ):
            self.deny("reverse-shell", "carries code that connects a shell to a remote host")
        script = shell.parse(text)
        if script.errors:
            self.confirm(
                "malformed",
                "the command line is malformed ("
                + "; ".join(script.errors[:2])
                + "): what it would run cannot be judged",
            )
        self._fork_bombs(script)
        for cmd in script.commands:
            self.command(cmd, script)
        self._download_and_run(script)
        self._decoded_substitutions(script)
        self._injection_shape(script)
        self._push_to_new_remote(script)
        self._relative_after_cd(script)
        return self.found

    def _fork_bombs(self, script: shell.Script) -> None:
        for name, body in script.functions.items():
            recursive = [c for c in body if c.name == name]
            if recursive and (any(c.background or c.stdout_to or c.stdin_from for c in recursive)):
                self.deny("fork-bomb", f"function {name!r} starts copies of itself: a fork bomb")
        if script.endless_loop and any(c.background and c.in_loop for c in script.commands):
            self.deny("fork-bomb", "an endless loop starts background processes: it exhausts the machine")
        if (
            script.endless_loop
            and self.depth == 0
            and not any(
                c.name
                in (
                    "sleep",
                    "read",
                    "break",
                    "exit",
                    "return",
                    "wait",
                    "inotifywait",
                    "tail",
                    "nc",
                    "ncat",
                    "select",
                    "timeout",
                    "watch",
                )
                or c.name.startswith("read")
                for c in script.commands
            )
        ):
            self.confirm("endless-loop", "loops forever without pausing")
        busy = [
            c
            for c in script.commands
            if c.background and c.name in ("yes", "cat", "dd", "sha1sum", "md5sum", "openssl", "stress")
        ]
        if len(busy) >= 3:
            self.confirm("resource-exhaustion", "starts several CPU-burning background processes")

    def _download_and_run(self, script: shell.Script) -> None:
        fetched: set[str] = set()
        fetching = False
        for cmd in script.commands:
            argv = _effective(cmd)
            if not argv:
                continue
            name, args = argv[0], argv[1:]
            upstream = _upstream(cmd)
            if any(_is_decoder(c) for c in upstream) or any(
                (_effective(c)[:1] or [""])[0] in FETCHERS for c in upstream[1:]
            ):
                fetching = True
                fetched.update(norm_path(r.target) for r in cmd.redirects if r.op in (">", ">>"))
            if name in FETCHERS or (name in SOCKET_TOOLS and cmd.stdout_to is not None):
                fetching = True
                for flag in ("-o", "--output", "-O", "--output-document"):
                    if flag in args and args.index(flag) + 1 < len(args):
                        fetched.add(norm_path(args[args.index(flag) + 1]))
                for arg in args:
                    if arg.startswith(("--output=", "--output-document=", "-O")) and len(arg) > 2:
                        fetched.add(norm_path(arg.split("=", 1)[-1].removeprefix("-O")))
                    if URL.match(arg) and name == "wget" and "-O" not in args:
                        fetched.add(norm_path(arg.rstrip("/").rsplit("/", 1)[-1]))
                for r in cmd.redirects:
                    if r.op in (">", ">>"):
                        fetched.add(norm_path(r.target))
            if not fetching:
                continue
            program = cmd.words[0].value if cmd.words else ""
            runs = [program] if program else []
            if name in SHELLS | set(INTERPRETERS) and args:
                runs.append(args[-1])
            if name == "chmod" and any("x" in a or "+s" in a for a in args if not a.startswith("/")):
                runs.extend(args[1:])
            for run in runs:
                p = norm_path(run)
                if p in fetched or (p.startswith(("/tmp/", "/dev/shm/", "/var/tmp/", "./.")) and "/" in p):
                    self.deny("download-and-run", f"downloads a program and runs it ({run})")
                    return

    def _decoded_substitutions(self, script: shell.Script) -> None:
        """``eval $(... | base64 -d)``, ``bash -c "$(...)"``, ``X=$(...); $X``: decoded text that runs."""
        runners = [
            c
            for c in script.commands
            if (c.words and c.words[0].dynamic and not c.words[0].value.strip())
            or c.name in ("eval", "source", ".")
            or (c.name in SHELLS and "-c" in c.args)
        ]
        if not runners:
            return
        for cmd in script.commands:
            for sub in cmd.substitutions:
                if sub.stdout_to is not None:
                    continue
                chain = _upstream(sub)
                if not any(_is_decoder(c) for c in chain):
                    continue
                payload = _static_payload(chain)
                if payload is None:
                    self.deny("decode-and-run", "runs text it decodes at run time")
                    continue
                self.confirm("decode-and-run", "runs text it decodes from an encoded payload")
                for finding in self.nested(payload[0], "a decoded payload"):
                    self.found.append(finding)
                    if finding.action is Action.DENY:
                        self.deny("decode-and-run", f"decodes and runs: {finding.reason}")

    def _relative_after_cd(self, script: shell.Script) -> None:
        """``cd / && rm -rf *``: a relative recursive delete after moving into a root."""
        cwd = ""
        for cmd in script.commands:
            argv = _effective(cmd)
            if not argv:
                continue
            if argv[0] in ("cd", "pushd"):
                target = next((a for a in argv[1:] if not a.startswith("-")), "~")
                cwd = norm_path(target) if target.startswith(("/", "~")) else cwd
                continue
            # `sudo -D / rm -rf .`: sudo's own change of folder, for this command only
            chdir = _leading_value(cmd.argv[1:], ("-D", "--chdir"), _WRAPPER_OPTIONS["sudo"][0]) \
                if cmd.argv[:1] == ["sudo"] else None
            chdir = chdir or next((a.split("=", 1)[1] for a in cmd.argv[1:] if a.startswith("--chdir=")), None)
            here = norm_path(chdir) if chdir and chdir.startswith(("/", "~")) else cwd
            if argv[0] == "rm" and here and is_root_target(here):
                flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))
                targets = [a for a in argv[1:] if not a.startswith("-")]
                if ("r" in flags.lower() or "--recursive" in argv) and any(
                    norm_path(t) in ("*", ".", ".*", "./*") for t in targets
                ):
                    self.deny("destructive-delete", f"moves into {here} and deletes everything there")

    def _push_to_new_remote(self, script: shell.Script) -> None:
        added = set()
        for cmd in script.commands:
            args = cmd.args
            if cmd.name == "git" and args[:2] == ["remote", "add"] and len(args) >= 3:
                added.add(args[2])
            elif cmd.name == "git" and args[:1] == ["push"] and set(args[1:]) & added:
                self.confirm("exfiltration", "pushes the repository to a remote the same command just added")

    def _injection_shape(self, script: shell.Script) -> None:
        """Host discovery appended to an unrelated command: the shape of a command injection.

        An agent's command that chains (``;``, ``&&``, ``|``, ``&``, a newline) a
        probe — who am I, what system, which network tools, a timing delay,
        a listing of system folders, a fetch — onto another command, passes a
        command name as a file argument, or splices a probe's output into an
        argument, is what injected text looks like; a person asks first.
        """
        if self.depth > 0:
            return
        top = [c for c in script.commands if c.depth == 0 and c.origin == ""]
        previous: SimpleCommand | None = None
        for cmd in top:
            argv = _effective(cmd)
            before, previous = previous, cmd
            if not argv or not re.match(r"^[\w./-]+$", argv[0]):
                continue
            if (
                cmd.chain_index > 0
                and before is not None
                and before.chain_index == cmd.chain_index - 1
                and (
                    (cmd.name == "pwd" and before.name not in ("cd", "pushd", "popd", "mkdir"))
                    or (
                        cmd.name == "sleep"
                        and not before.background
                        and not cmd.in_loop
                        and before.name != "sleep"
                    )
                )
            ):
                self.confirm(
                    "injection-probe",
                    f"appends {cmd.name!r} to an unrelated command, the shape of a command injection probe",
                )
                return
            chained = cmd.chain_index > 0 or cmd.stdin_from is not None
            # a probe after another probe is someone surveying the machine on purpose, not an injection
            after_probe = before is not None and (
                before.name in PROBES | {"lsb_release", "hostnamectl"} and cmd.stdin_from is None
            )
            # `cd dist && curl -O ...`: a fetch after setting up where it goes is ordinary
            after_setup = (
                argv[0] in FETCHERS | {"ls", "tree", "du", "find"}
                and not cmd.argv[0].startswith("/")
                and (
                    (before is not None and before.name in _SETUP_COMMANDS)
                    or any(
                        re.match(r"^(https?://)?(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)([:/]|$)", a)
                        for a in argv[1:]
                    )
                )
            )
            if chained and not after_probe and not after_setup and _is_discovery(cmd, argv):
                self.confirm(
                    "injection-probe",
                    f"chains {' '.join(argv)[:40]!r} (host discovery) onto another "
                    "command, the shape of a command injection",
                )
                return
            if (argv[0] not in NAME_TAKERS and argv[0] not in _SUBCOMMAND_CLIS) or argv[
                0
            ] in _FIRST_ARG_IS_NOT_A_FILE:
                words = [a for a in argv[1:] if not a.startswith("-")]
                if argv[0] in _FIRST_ARG_IS_NOT_A_FILE and "-e" not in argv:
                    words = words[1:]
                hits = [a for a in words if a in _INJECTED_NAMES]
                if hits:
                    self.confirm(
                        "injection-probe",
                        f"passes the command name {hits[0]!r} as an argument of "
                        f"{argv[0]!r}, the shape of a command injection",
                    )
                    return
        for cmd in top:
            if not cmd.words or cmd.name in ("local", "export", "declare", "readonly", "typeset"):
                continue
            glued = any(_GLUED_SUBSTITUTION.match(w.raw) for w in cmd.words)
            for sub in cmd.substitutions:
                if sub.name not in _SPLICED_PROBES or sub.depth != 1 or sub.origin != "$()":
                    continue
                bare_id = sub.name == "id" and not sub.args and cmd.name not in ("echo", "printf")
                if (
                    glued
                    or bare_id
                    or (
                        cmd.chain_index > 0
                        and sub.name in ("id", "uname", "ifconfig", "env", "printenv", "cat", "ping", "sleep")
                    )
                ):
                    if sub.name == "cat" and not any(_SYSTEM_LISTING.match(norm_path(a)) for a in sub.args):
                        continue
                    self.confirm(
                        "injection-probe", f"splices the output of {sub.name!r} into a command's arguments"
                    )
                    return

    # -- one command ------------------------------------------------------------

    def command(self, cmd: SimpleCommand, script: shell.Script) -> None:
        argv = _effective(cmd)
        self._assignments(cmd)
        self._redirects(cmd, argv)
        self._any_words(cmd)
        if not cmd.words:
            return
        if cmd.words[0].value and re.search(r"^[^\[].*[?*\[]|[?*]", cmd.words[0].value):
            self.confirm("glob-command", f"spells the command name as a glob ({cmd.words[0].value})")
        if cmd.words[0].dynamic and not cmd.words[0].value.strip() and cmd.depth > 0 and cmd.substitutions:
            self.confirm("dynamic-command", "runs another command's output as a command")
        elif "$" in cmd.words[0].raw and (cmd.words[0].dynamic or _sets_ifs(script)):
            # `$c`, `"$@"`, `${a[@]}`, `$(…)`: what runs is decided when the line runs (by `set --`, `read`,
            # an array, or word splitting on a changed IFS), which a static reading cannot follow.
            self.confirm("dynamic-command", f"the command's name is only known at run time ({cmd.words[0].raw})")
        self._what_may_run(cmd, argv)
        if not argv:
            return
        name, args = argv[0], argv[1:]
        _entry_point_copy(self, cmd, name, args)
        _copies_out(self, cmd, name, args)
        elevated = _elevated(cmd)
        if elevated:
            self.confirm("sudo", "runs with elevated privileges (sudo/doas/su)")
        if name in SHELLS:
            self._shell(cmd, name, args)
        elif name in INTERPRETERS or re.fullmatch(
            r"python\d[\d.]*|perl\d*|ruby\d[\d.]*|php\d*|node\d*", name
        ):
            self._interpreter(cmd, name, args)
        elif name == "eval" or name in ("source", "."):
            self._eval(cmd, name, args)
        handler = _HANDLERS.get(name) or (
            _secrets_tool if name.startswith(("docker-credential-", "git-credential-")) else None)
        if handler is not None:
            # handlers see the command with its wrappers (sudo, env, timeout...) peeled off
            view = replace(cmd, words=[shell.Word(a, a) for a in argv]) if argv != cmd.argv else cmd
            texts = _effective_texts(cmd)
            # handlers see unknown parts of words (`"$DIR"/*`): a path that is not known is not a known root
            handler(self, view, texts[1:] if len(texts) == len(argv) else args)
        for target in _edited_in_place(name, args):
            self._write_target(cmd, target, append=False, via=f"{name} -i")
        for target, replaces in _unpacked_into(name, args):
            if not target.strip(shell.DYNAMIC):
                continue  # only known when the line runs (`rsync $SRC $DEST`)
            if norm_path(target) in _CORE_SYSTEM or replaces and is_root_target(target) and \
                    not norm_path(target).startswith("~"):
                # Over `/`, `/usr` or `/etc` an archive can replace any system file; `rsync --delete` empties them.
                self.deny("system-delete", f"{name} {'replaces what is in' if replaces else 'unpacks into'} {target}")
            else:
                self._write_target(cmd, target, append=False, via=name)
        if name.startswith("mkfs") or name in (
            "mke2fs",
            "mkswap",
            "wipefs",
            "blkdiscard",
            "fdisk",
            "sfdisk",
            "parted",
            "sgdisk",
            "gdisk",
            "cfdisk",
            "hdparm",
            "nvme",
            "badblocks",
            "cryptsetup",
            "zpool",
            "mdadm",
            "pvcreate",
            "lvremove",
            "vgremove",
        ):
            self._disk_tool(name, args)
        if name in SENDERS:
            self._sender(cmd, name, args)
        if name in READERS or (name in SENDERS and name not in ("ssh",)):
            values = set() if name in _PATTERN_FIRST else {  # grep's -e, -i, -E, -F are no file options
                args[k + 1]
                for k in range(len(args) - 1)
                if args[k]
                in (
                    "-e",
                    "-i",
                    "-F",
                    "--rsh",
                    "-o",
                    "--cert",
                    "--key",
                    "-E",
                    "--cacert",
                    "-keyout",
                    "-out",
                    "--output",
                    "-O",
                    "--output-document",
                )
            }
            not_read = unread_positions(name, args)
            for index, arg in enumerate(args):
                if index in not_read:
                    continue
                if arg not in values and is_credential(_strip_at(arg)):
                    self._credential_read(cmd, name, arg)
                elif (
                    norm_path(arg) in ("/etc/passwd", "/etc/group", "/etc/master.passwd")
                    and name not in SENDERS
                ):
                    self.confirm("account-list", f"{name} reads the machine's account list ({arg})")
        self._programs(cmd, name, args)
        self._stdin_into_shell(cmd, name, args)
        for text, why in _embedded_commands(name, args):
            if name in ("alias", "trap"):
                self._payload(text, why)  # runs later: only what is hostile counts now
            else:
                self.found.extend(self.nested(text, why))

    def _what_may_run(self, cmd: SimpleCommand, peeled: list[str]) -> None:
        """Every tail of a wrapper's or runner's words that starts with an operand, judged as a command.

        Their option grammars come from manuals, and one misread option (a flag taken to need a value)
        would hide the command that runs behind it; a word holding spaces is judged as shell text too
        (``tmux run-shell 'rm -rf /'``). Only denials count from these readings: most tails are not
        commands at all, and what a tail would merely ask about is noise. The cost is a deny for
        ``timeout 5 echo rm -rf /``.
        """
        words = cmd.words
        if not words or (words[0].value.rsplit("/", 1)[-1] not in WRAPPERS | RUNNERS):
            return
        name = words[0].value.rsplit("/", 1)[-1]
        texts = []
        for index in range(1, len(words)):
            word = words[index]
            # `--command='rm -rf /'`: the value of a long option
            text = word.value.split("=", 1)[1] if word.value.startswith("--") and "=" in word.value else word.value
            if " " in text.strip():
                texts.append(text.replace(shell.DYNAMIC, ""))
            tail = words[index:]
            if [w.value for w in tail] != peeled and not word.value.startswith("-") and not word.dynamic:
                texts.append(" ".join(w.raw for w in tail))
        # Where a runner's grammar is known (`uv run X`, `npx X`, `tmux new 'X'`), what it runs is judged whole.
        start = _runner_start(name, [w.value for w in words])
        exact = {" ".join(w.raw for w in words[start:])} if start is not None else set()
        if name in ("tmux", "screen"):
            exact |= {w.value.replace(shell.DYNAMIC, "") for w in words[1:] if " " in w.value.strip()}
        for text in dict.fromkeys([*texts, *exact]):
            self.found.extend(f for f in self.nested(text, f"what {name} may run")
                              if text in exact or f.action is Action.DENY)

    # -- categories -------------------------------------------------------------

    def _programs(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        """Programs judged by their name and arguments alone: searches, miners, scanners, tunnels, awk."""
        if (
            name in ("grep", "egrep", "rg", "ag", "ack", "find", "locate")
            and re.search(
                r"PRIVATE KEY|aws_secret|secret_access|api[_-]?key\b|id_rsa|\.pem\b|password\s*=",
                " ".join(args),
                re.IGNORECASE,
            )
            and any(norm_path(a) in ("/", "~", "/home", "/root", "/etc", "/Users") for a in args)
        ):
            self.confirm("credential-search", f"{name} searches the machine for credentials")
        if MINER.search(" ".join([name, *args])):
            self.deny("crypto-miner", "runs or fetches a cryptocurrency miner")
        if name in SENDERS and any(METADATA.search(a) for a in args):
            self.deny(
                "cloud-credentials", f"{name} queries the cloud instance metadata service (credentials)"
            )
        if any("docker.sock" in a or "containerd.sock" in a for a in args) and name not in ("ls", "stat"):
            self.confirm(
                "container-escape", f"{name} talks to the container engine's socket (root on the host)"
            )
        if name in OFFENSIVE:
            self.confirm("offensive-tool", f"{name} is an attack or scanning tool")
        if name in TUNNELS or (
            name == "ssh" and any(re.fullmatch(r"-[a-zA-Z]*[RD]", a) for a in _leading_options(args))
        ):
            self.confirm("tunnel", f"{name} opens a tunnel that exposes this machine or routes traffic out")
        if name in ("awk", "gawk", "nawk", "mawk", "busybox") and args:
            program = next((a for a in args if not a.startswith("-") and ("{" in a or "(" in a)), "")
            for called in re.findall(r"system\s*\(\s*\"((?:[^\"\\]|\\.)*)\"", program):
                self.found.extend(self.nested(called, f"{name} system()"))
            if re.search(r"\|\s*getline|system\s*\(\s*[^\"\s)]", program):
                self.confirm("dynamic-code", f"{name} runs commands built at run time")

    def _assignments(self, cmd: SimpleCommand) -> None:
        for key, value in cmd.assignments.items():
            if key in ("PROMPT_COMMAND", "BASH_ENV", "ENV", "PAGER", "EDITOR", "GIT_SSH_COMMAND", "LESSOPEN"):
                self._payload(value.replace(shell.DYNAMIC, ""), f"the command in {key}")
            if key in ("HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL") and (
                value in ("0", "/dev/null", "", "ignoreboth:erasedups") or key == "HISTFILE"
            ):
                self.confirm("anti-forensics", f"changes shell history ({key}={value or 'empty'})")
            if key == "LD_PRELOAD" or (key == "PATH" and value.startswith(("/tmp", ".", "/dev/shm"))):
                self.confirm("hijack-env", f"sets {key} to load or prefer untrusted code")

    def _redirects(self, cmd: SimpleCommand, argv: list[str]) -> None:
        for r in cmd.redirects:
            target = r.target.replace(shell.DYNAMIC, "")
            if re.match(r"/dev/(tcp|udp)/", target):
                self.deny(
                    "reverse-shell", f"connects the shell's input/output to a network socket ({target})"
                )
                continue
            if r.op in (">", ">>", "&>", ">|", "<>", "&>>", ">&") and not target.isdigit() and target != "-":
                self._write_target(cmd, target, append=r.op in (">>", "&>>"), via="redirect")
            elif (
                r.op == "<"
                and is_credential(target)
                and (cmd.stdout_to or cmd.name in SENDERS | READERS | {"tr"})
            ):
                self._credential_read(cmd, cmd.name or "<", target)
            if r.op in ("<<<", "<<", "<<-") and argv and argv[0] in ("crontab", "tee"):
                self._payload(r.target, "text written to a start-up location")

    def _any_words(self, cmd: SimpleCommand) -> None:
        for w in cmd.words:
            v = w.value if not w.dynamic else w.raw
            if "/dev/tcp/" in v or "/dev/udp/" in v or "/inet/tcp/" in v or "/inet/udp/" in v:
                self.deny("reverse-shell", f"refers to a raw network socket ({v[:60]})")
            if WEBSHELL.search(v):
                self.deny("webshell", "writes server code that runs commands from web requests (a web shell)")
            if (
                CODE_REVERSE_SHELL.search(v)
                and CODE_SPAWN.search(v)
                and re.search(r"\d+\.\d+\.\d+\.\d+|connect", v)
            ):
                self.deny("reverse-shell", "carries code that connects a shell to a remote host")
            if URL.search(w.raw) and (re.search(r"`|\$\(", w.raw)):
                self.confirm("exfiltration", "puts a command's output into a URL")

    def _write_target(self, cmd: SimpleCommand, target: str, *, append: bool, via: str) -> None:
        p = norm_path(target)
        if p in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or p.startswith("/dev/fd/"):
            return
        if is_device(p):
            self.deny("disk-wipe", f"writes directly to the block device {p}")
            return
        if AUDIT.search(p):
            self.deny("audit-tamper", f"writes to the clawcore audit trail or configuration ({p})")
            return
        if LOGS.search(p) and not append and _empties(cmd):
            self.deny("log-tamper", f"empties the log or history file {p}")
            return
        if CRITICAL_FILES.match(p):
            self.deny("system-accounts", f"writes to {p}, which controls accounts and privileges")
            return
        if ESSENTIAL_FILES.search(p):
            self.deny("system-delete", f"{via} replaces the system file {p}")
            return
        if PERSISTENCE.search(p):
            self.confirm("persistence", f"writes to {p}, which runs automatically (start-up, cron, keys)")
            content = _written_content(cmd)
            if content:
                self._payload(content, f"text written to {p}")
            return
        if p.endswith(("/release_agent", "/notify_on_release")) or p.startswith("/sys/fs/cgroup"):
            self.deny("container-escape", f"writes to the cgroup control file {p} (a container escape)")
            return
        if p == "/proc/sysrq-trigger":
            self.deny("shutdown", "writes to /proc/sysrq-trigger (instant reboot, crash or power-off)")
            return
        if re.match(
            r"^/proc/sys/kernel/(randomize_va_space|yama|kptr_restrict|dmesg_restrict|modules_disabled|"
            r"core_pattern|sysrq)",
            p,
        ):
            self.deny("defense-evasion", f"weakens a kernel protection ({p})")
            return
        if (p.rstrip("/") + "/").startswith(SYSTEM_PREFIXES):
            self.confirm("system-write", f"writes to the system location {p}")

    def _removes(self, cmd: SimpleCommand, target: str, *, via: str) -> None:
        """A file deleted, moved away, emptied or linked over: judged as a write to it, and worse
        where the machine cannot run or log in without it."""
        p = norm_path(target)
        if CRITICAL_FILES.match(p) or ESSENTIAL_FILES.search(p):
            self.deny("system-delete", f"{via} removes or replaces the system file {p}")
        elif p not in ("~", "/") and is_root_target(p) and not p.startswith("~"):
            self.deny("destructive-delete", f"{via} removes {p}" + (" and everything in it" if "*" in p else ""))
        else:
            self._write_target(cmd, target, append=False, via=via)

    def _payload(self, text: str, where: str) -> None:
        """Judge text that will later run as shell (cron lines, rc files, piped scripts)."""
        lines = []
        for line in text.splitlines() or [text]:
            stripped = line.strip()
            cron = re.match(r"^(@\w+|([\d*/,-]+\s+){5}(\w+\s+)?)(.*)$", stripped)
            lines.append(cron.group(4) if cron else stripped)
        for finding in self.nested("\n".join(lines), where):
            if finding.action is Action.DENY:
                self.deny(finding.rule, f"{where} would later run: {finding.reason}")

    def _shell(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        if any((_effective(c)[:1] or [""])[0] in FETCHERS for c in cmd.substitutions):
            self.deny("remote-code", f"{name} runs code downloaded from the network")
        code = _option_value(args, ("-c",))
        if code is not None:
            if shell.DYNAMIC in code:
                sub_fetch = [
                    c for c in cmd.substitutions if _effective(c)[:1] and _effective(c)[0] in FETCHERS
                ]
                if sub_fetch:
                    self.deny("remote-code", 'runs code downloaded from the network (sh -c "$(curl ...)")')
                else:
                    self.confirm("dynamic-code", f"{name} -c runs text computed at run time")
            self.found.extend(self.nested(code.replace(shell.DYNAMIC, ""), f"{name} -c"))
            return
        if "-i" in args and any(r.target.startswith("/dev/") for r in cmd.redirects):
            self.confirm("interactive-shell", "starts an interactive shell wired to other files")

    def _interpreter(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        module = _option_value(args, ("-m",)) or ""
        script = next((a for a in args if not a.startswith("-")), "") if not module else ""
        if module.split(".")[0] == "clawcore" or script.rsplit("/", 1)[-1] == "clawcore":
            _runtime_cli(self, cmd, args)  # `python -m clawcore…`, `python3 .venv/bin/clawcore …`
        flag = INTERPRETERS.get(re.sub(r"[\d.]+$", "", name) if name not in INTERPRETERS else name, "-e")
        code = None
        for i, arg in enumerate(args):
            if arg in (flag, "-e", "-E", "-c", "-r", "--eval", "-x") and i + 1 < len(args):
                code = args[i + 1]
                break
            if re.match(r"^-[A-Za-z]*[ce]$", arg) and i + 1 < len(args) and not arg.startswith("--"):
                code = args[i + 1]
                break
        if code is not None:
            self._code(code, name)

    def _code(self, code: str, lang: str) -> None:
        """Judge a one-liner for an interpreter by what it calls."""
        if re.search(r"\b(?:from|import)\s+clawcore\b|import_module\(\s*['\"]clawcore|__import__\(\s*['\"]clawcore",
                     code):
            self.deny("runtime-cli", f"{lang} code imports clawcore: the agent may not operate its own runtime")
        if CODE_REVERSE_SHELL.search(code) and CODE_SPAWN.search(code):
            self.deny("reverse-shell", f"{lang} code opens a socket and attaches a shell or process to it")
        if CODE_FETCH.search(code) and CODE_EVAL.search(code):
            self.deny("remote-code", f"{lang} code downloads code and runs it")
        if re.search(
            r"pty\.spawn|exec\w*\s*\(?\s*['\"]/bin/(ba|z|da)?sh|system\s*\(?\s*['\"]/bin/(ba|z|da)?sh", code
        ):
            self.confirm("spawns-shell", f"{lang} code starts an interactive shell")
        if CODE_FORK.search(code):
            self.deny("fork-bomb", f"{lang} code forks without end")
        literals = [a or b for a, b in CODE_STRING.findall(code)]
        if CODE_DESTROY.search(code) and (CODE_ROOTISH.search(code) or any(map(is_root_target, literals))):
            self.deny("destructive-delete", f"{lang} code deletes the home folder or the filesystem root")
        if CODE_DESTROY.search(code) or re.search(r"open\s*\([^)]*['\"][wa+]", code):
            for literal in literals:
                if CRITICAL_FILES.match(norm_path(literal)) or ESSENTIAL_FILES.search(norm_path(literal)):
                    self.deny("system-delete", f"{lang} code removes the system file {literal}")
                elif norm_path(literal).startswith(SYSTEM_PREFIXES):
                    self.confirm("system-write", f"{lang} code removes from the system location {literal}")
        decodes = re.search(
            r"b64decode|decode_base64|base64_decode|Base64\.decode|atob\(|fromhex|unhexlify|"
            r"FromBase64String|Buffer\.from\(",
            code,
        )
        if lang in ("tclsh", "wish", "expect"):  # Tcl runs programs with `exec`, expect with `spawn`
            for text in re.findall(r"(?:^|[\[;{\s])(?:spawn|exec)\s+([^\]\n;}]+)", code):
                self.found.extend(self.nested(text, f"a command run by {lang} code"))
        runs = CODE_SPAWN.search(code) or CODE_EVAL.search(code)
        if runs:
            # What the code hands a shell or exec: `…` and qx(…), and argument lists (['rm', '-rf', '/']).
            spawned = ["".join(groups) for groups in re.findall(
                r"`([^`]+)`|\bqx\s*\(([^)]*)\)|\bqx\s*\{([^}]*)\}|\bqx\s*\[([^\]]*)\]|\bqx\s*\|([^|]*)\|", code)]
            spawned += [" ".join(a or b for a, b in CODE_STRING.findall(items))
                        for items in re.findall(r"\(\s*(?:['\"][^'\"]*['\"]\s*,\s*)?[\[{]([^\]}]*)[\]}]", code)]
            for text in spawned:
                if text.strip():
                    self.found.extend(self.nested(text, f"a command run by {lang} code"))
        for literal in literals:
            text = literal.replace("\\n", "\n")
            if is_credential(text.strip()):
                self.deny("credential-read", f"{lang} code reads a credential file ({text.strip()})")
            if decodes:
                decoded = decode_base64(text) or decode_hex(text)
                if decoded is not None:
                    if runs:
                        self.deny("decode-and-run", f"{lang} code decodes a hidden payload and runs it")
                    self.found.extend(self.nested(decoded, f"a payload decoded by {lang} code"))
            if runs and re.search(
                r"\b(system|popen|exec\w*|spawn\w*|call|run|check_output|Popen|passthru|"
                r"shell_exec)\s*\(\s*$",
                code[: code.find(literal)].rstrip("'\"[ (b") + "(",
            ):
                for finding in self.nested(text, f"a command run by {lang} code"):
                    self.found.append(finding)

    def _eval(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        if name == "eval":
            text = " ".join(w.text for w in cmd.words[1:])
            if shell.DYNAMIC in text:
                if any(_effective(c)[:1] and _effective(c)[0] in FETCHERS for c in cmd.substitutions):
                    self.deny("remote-code", "evaluates code downloaded from the network")
                else:
                    self.confirm("dynamic-code", "eval runs text computed at run time")
            self.found.extend(self.nested(text.replace(shell.DYNAMIC, ""), "eval"))
            return
        target = " ".join(w.text for w in cmd.words[1:2])
        if any(_effective(c)[:1] and _effective(c)[0] in FETCHERS for c in cmd.substitutions):
            self.deny("remote-code", f"{name} runs a script downloaded from the network")
        elif shell.DYNAMIC in target and not cmd.substitutions:
            pass
        elif norm_path(target).startswith(("/tmp/", "/dev/shm/")) or is_credential(target):
            self.confirm("source-untrusted", f"{name} runs a script from {target}")

    def _stdin_into_shell(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        """A shell or interpreter reading its program from a pipe or here-string."""
        is_shell = name in SHELLS and _option_value(args, ("-c",)) is None and not _script_arg(args)
        is_interp = (
            (
                name in INTERPRETERS
                or re.fullmatch(r"python\d[\d.]*|perl\d*|ruby\d[\d.]*|php\d*|node\d*", name)
            )
            and not _script_arg(args)
            and not any(re.match(r"^-[A-Za-z]*[ceErmVhnpl]", a) or a in ("--version", "--help") for a in args)
        )
        if not (is_shell or is_interp):
            return
        here = [r.target for r in cmd.redirects if r.op in ("<<<", "<<", "<<-")]
        stdin_file = [r.target for r in cmd.redirects if r.op == "<"]
        source = cmd.stdin_from
        if here:
            text = "\n".join(here)
            if is_shell:
                self.found.extend(self.nested(text, f"the text fed to {name}"))
            else:
                self._code(text, name)
            return
        if stdin_file:
            if norm_path(stdin_file[0]).startswith(("/tmp/", "/dev/shm/")):
                self.confirm("pipe-to-shell", f"{name} runs a script from {stdin_file[0]}")
            return
        if source is None:
            return
        chain = _upstream(source)
        producers = {(_effective(c)[:1] or [""])[0] for c in chain}
        if producers & (FETCHERS | SOCKET_TOOLS):
            self.deny("remote-code", f"pipes code from the network into {name}")
            return
        payload = _static_payload(chain)
        if payload is not None:
            decoded, transformed = payload
            if transformed:
                self.confirm("decode-and-run", f"decodes a hidden payload and pipes it into {name}")
            if is_shell:
                for finding in self.nested(decoded, f"the payload piped into {name}"):
                    self.found.append(finding)
                    if transformed and finding.action is Action.DENY:
                        self.deny("decode-and-run", f"decodes and runs: {finding.reason}")
            else:
                self._code(decoded, name)
            return
        decoders = [c for c in chain if _is_decoder(c)]
        if decoders:
            self.deny("decode-and-run", f"decodes a payload it cannot show and pipes it into {name}")
        else:
            self.confirm("pipe-to-shell", f"pipes generated text into {name}")

    def _sender(self, cmd: SimpleCommand, name: str, args: list[str]) -> None:
        joined = " ".join(args)
        if name in ("nc", "ncat", "netcat", "cryptcat", "pwncat", "sbd"):
            program = _option_value(args, ("-e", "-c", "--exec", "--sh-exec", "--lua-exec"))
            glued = re.search(r"(^|\s)-[a-zA-Z]*e(/\S+)", joined)
            program = program or (glued.group(2) if glued else None)
            if program is not None:
                first = program.split()[0].rsplit("/", 1)[-1] if program.split() else ""
                if first in SHELLS or first in INTERPRETERS or "--sh-exec" in args or "--lua-exec" in args:
                    self.deny("reverse-shell", f"{name} hands a shell to a network peer")
                else:
                    self.confirm("listener", f"{name} runs {first or 'a program'} for network peers")
            elif re.search(r"(^|\s)-[a-zA-Z]*l", joined):
                self.confirm("listener", f"{name} listens for incoming connections")
        if name == "socat" and re.search(r"\b(EXEC|SYSTEM):", joined, re.IGNORECASE):
            self.deny("reverse-shell", "socat attaches a program to a network connection")
        if name == "openssl" and "s_client" in args and cmd.stdout_to and cmd.stdout_to.name in SHELLS:
            self.deny("reverse-shell", "openssl s_client feeds a shell")
        if name == "telnet" and (cmd.stdout_to and cmd.stdout_to.name in SHELLS):
            self.deny("reverse-shell", "telnet feeds a shell")
        # what leaves the machine
        uploads: list[tuple[str, bool]] = []  # (the value, whether it names a file whatever its spelling)
        if name == "curl":
            args = _curl_words(args)
        for i, arg in enumerate(args):
            if arg in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "--json",
                       "-H", "--header", "--post-data", "--body-data") and i + 1 < len(args):
                value = args[i + 1]
                if arg == "--data-urlencode" and re.match(r"^[\w.-]*@", value):
                    value = "@" + value.split("@", 1)[1]  # `name@file`: the file's content, encoded
                uploads.append((value, False))
            elif (arg in ("-T", "--upload-file") and name == "curl"
                  or arg in ("--post-file", "--body-file") and name == "wget") and i + 1 < len(args):
                uploads.append((args[i + 1], True))
            elif arg.startswith(("--post-file=", "--body-file=", "--upload-file=")):
                uploads.append((arg.split("=", 1)[1], True))
            elif arg.startswith(("--data-binary=", "--data=", "--form=", "--json=", "--post-data=", "--body-data=")):
                uploads.append((arg.split("=", 1)[1], False))
            elif name in ("http", "https", "httpie", "xh", "xhs") and re.match(r"^(@|[\w.-]+(=@|@|<))", arg):
                uploads.append((re.sub(r"^[\w.-]+(=@|@|<)", "@", arg), False))  # httpie: @file, field@file
        local = _only_loopback(args)  # a local test server: nothing leaves the machine
        has_stdin = cmd.stdin_from is not None or any(r.op in ("<", "<<<", "<<") for r in cmd.redirects)
        for up, named in uploads:
            # curl's form fields name a file as `field=@path` or `field=<path` (its content as the value)
            form = re.match(r"^[\w.\[\]-]*=([@<])(.+)$", up)
            path = form.group(2).split(";")[0] if form else _strip_at(up)
            is_file = named or up.startswith("@") or form is not None
            if up == "" and cmd.substitutions:  # `-d "$(cat notes.txt)"`: known only when the line runs
                if not local:
                    self.confirm("upload", f"{name} uploads a command's output")
            elif path in ("-", "@-") or up.endswith(("@-", "<-")) or path == "":
                self._stdin_exfil(cmd, name)
                if has_stdin and not local:
                    self.confirm("upload", f"{name} uploads what it reads from its input")
            elif is_credential(path):
                self.deny("exfiltration", f"{name} uploads the credential file {path}")
            elif path and is_file and not local:
                self.confirm("upload", f"{name} uploads the local file {path}")
        secret_subs = [c for c in cmd.substitutions if _reads_secret(c)]
        if secret_subs:
            self.deny("exfiltration", f"{name} sends the contents of a credential or the environment")
        elif (
            any(
                _GLUED_SUBSTITUTION.match(w.raw) or re.search(r"(\$\(|`)[^`)]*[`)]\.[\w-]+\.", w.raw)
                for w in cmd.words[1:]
            )
            and cmd.substitutions
        ):
            self.confirm("exfiltration", f"{name} puts a command's output into a network destination")
        if name in ("scp", "rsync", "sftp", "rclone") and any(REMOTE_SPEC.match(a) for a in args):
            values = {
                args[k + 1] for k in range(len(args) - 1) if args[k] in ("-e", "-i", "-F", "--rsh", "-o")
            }
            if any(is_strong_credential(a) for a in args if not REMOTE_SPEC.match(a) and a not in values):
                self.deny("exfiltration", f"{name} copies credentials to a remote host")
        if (name in SOCKET_TOOLS and name != "openssl" and cmd.stdin_from is not None or name in SOCKET_TOOLS | {
                "http", "https", "httpie", "xh", "xhs"} and any(r.op == "<" and r.target != "/dev/null"
                                                                for r in cmd.redirects)) and not local:
            self.confirm("upload", f"{name} sends local data to a network peer")
        if name == "socat" and re.search(r"\b(FILE|OPEN|GOPEN|CREATE):", joined, re.IGNORECASE) and not local:
            self.confirm("upload", "socat connects a local file to a network peer")
        if cmd.stdin_from is not None and name not in ("ping",):
            self._stdin_exfil(cmd, name)
            if name in SOCKET_TOOLS and any(
                (_effective(c)[:1] or [""])[0] in SHELLS
                and _option_value(_effective(c)[1:], ("-c",)) is None
                and not _script_arg(_effective(c)[1:])
                for c in _upstream(cmd.stdin_from)
            ):
                self.deny("reverse-shell", f"pipes a shell's output to {name}")
        remote = any(REMOTE_SPEC.match(a) or re.match(r"^(s3|gs|az|https?)://", a) for a in args)
        if (
            name in ("scp", "rsync", "rclone", "gsutil", "aws", "azcopy", "sftp")
            and remote
            and any(
                is_root_target(a)
                for a in args
                if not a.startswith("-") and not REMOTE_SPEC.match(a) and "://" not in a
            )
        ):
            self.confirm("exfiltration", f"{name} copies a whole home or system folder to a remote host")

    def _stdin_exfil(self, cmd: SimpleCommand, name: str) -> None:
        for up in _upstream(cmd.stdin_from) if cmd.stdin_from else []:
            if _reads_secret(up):
                self.deny("exfiltration", f"pipes credentials or the environment into {name}")
                return

    def _credential_read(self, cmd: SimpleCommand, name: str, path: str) -> None:
        if name in ("chmod", "chown", "ls", "stat", "ssh-keygen", "ssh-add", "ssh", "mkdir", "touch"):
            return
        verb = "links to" if name in ("ln", "link") else "reads"
        if is_strong_credential(_strip_at(path)):
            self.deny("credential-read", f"{name} {verb} the credential file {_strip_at(path)}")
        else:
            self.confirm("secrets-file", f"{name} {verb} the secrets file {_strip_at(path)}")

    def _disk_tool(self, name: str, args: list[str]) -> None:
        devices = [a for a in args if is_device(a)]
        if devices and (
            name.startswith("mkfs")
            or name in ("mke2fs", "wipefs", "blkdiscard", "mkswap", "sgdisk", "cryptsetup", "pvcreate")
        ):
            if name in ("wipefs", "sgdisk") and not any(
                a.startswith(("-a", "--all", "-Z", "--zap")) for a in args
            ):
                self.confirm("disk-tool", f"{name} changes the disk layout of {devices[0]}")
                return
            self.deny("disk-wipe", f"{name} erases the device {devices[0]}")
        else:
            self.confirm("disk-tool", f"{name} changes disks or filesystems")


_INJECTED_NAMES = (PROBES - {"w", "last", "route", "arp", "groups", "ver", "hostname"}) | {
    "ls",
    "cat",
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "perl",
    "python",
    "python3",
    "bash",
    "sh",
    "ping",
    "echo",
    "ifconfig",
    "netstat",
}
_SYSTEM_LISTING = re.compile(
    r"^(/|/etc|/home|/root|/var|/var/www|/tmp|/usr|/proc|/opt|/srv|/boot|/dev|/mnt)"
    r"(/\*|/\.\*)?/?$|^/home/\*|^/var/www/|^/etc/|^/proc/"
)


#: Plain text immediately followed by a substitution (``notes.txt`id` ``, ``docs$(nslookup x)``).
_GLUED_SUBSTITUTION = re.compile(r"^[\w.,:+-]*[\w](\$\(|`)")
#: Probes whose output spliced into another command's arguments is an injection signature.
_SPLICED_PROBES = {
    "id",
    "whoami",
    "uname",
    "hostname",
    "ifconfig",
    "netstat",
    "env",
    "printenv",
    "ping",
    "sleep",
    "nslookup",
    "dig",
    "host",
    "curl",
    "wget",
    "cat",
}
#: Command-line tools whose words are subcommands (``aws s3 ls``), never file names.
_SUBCOMMAND_CLIS = {
    "aws",
    "gcloud",
    "az",
    "gsutil",
    "kubectl",
    "helm",
    "docker",
    "podman",
    "npm",
    "yarn",
    "pnpm",
    "cargo",
    "go",
    "terraform",
    "systemctl",
    "brew",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "snap",
    "flatpak",
    "gh",
    "glab",
    "heroku",
    "fly",
    "vercel",
    "conda",
    "poetry",
    "uv",
    "pipx",
    "nix",
    "make",
    "just",
    "task",
    "tmux",
    "screen",
    "busybox",
    "toolbox",
    "openssl",
    "mvn",
    "gradle",
}
#: Commands that prepare where the next one works or what it sees.
_SETUP_COMMANDS = {
    "cd",
    "pushd",
    "popd",
    "mkdir",
    "export",
    "source",
    ".",
    "set",
    "umask",
    "touch",
    "rm",
    "mv",
    "cp",
    "true",
    "unset",
    "ulimit",
    "trap",
    "mktemp",
    "install",
    "sleep",
}
#: Commands whose first positional word is a subcommand or pattern rather than a file.
_FIRST_ARG_IS_NOT_A_FILE = {"git", "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "sed", "awk", "redis-cli"}
#: Commands that ignore their standard input: a pipe into one is a sign of injected text.
_IGNORES_STDIN = {
    "ls",
    "pwd",
    "id",
    "whoami",
    "uname",
    "ifconfig",
    "netstat",
    "hostname",
    "sleep",
    "which",
    "ping",
    "nslookup",
    "dig",
}


def _is_discovery(cmd: SimpleCommand, argv: list[str]) -> bool:
    name, args = argv[0], argv[1:]
    plain = [a for a in args if not a.startswith("-")]
    if cmd.name in ("xargs", "parallel"):
        return False
    if cmd.stdin_from is not None and cmd.name in _IGNORES_STDIN:
        return True
    if cmd.words[0].value.startswith(("/bin/", "/usr/bin/", "/sbin/")) and name in PROBES | {"ls", "cat"}:
        return True
    if name in (
        "id",
        "whoami",
        "uname",
        "ifconfig",
        "ipconfig",
        "netstat",
        "ss",
        "hostname",
        "who",
        "getent",
        "lsb_release",
        "systeminfo",
        "lastlog",
        "arp",
    ):
        return not plain or name in ("getent",)
    if name == "which":
        return bool(set(plain) & (SENDERS | set(INTERPRETERS) | SHELLS | {"gcc", "cc", "nmap"}))
    if name == "sleep":
        if cmd.in_loop:
            return False
        return (
            bool(plain)
            and cmd.stdin_from is not None
            or (bool(plain) and plain[0].isdigit() and int(plain[0]) >= 5)
        )
    if name == "pwd":
        return cmd.stdin_from is not None
    if name in ("env", "printenv") and not plain and cmd.chain_index > 0:
        return True  # the environment (keys, tokens) printed after an unrelated command
    if name == "ps" and cmd.chain_index > 0 and cmd.stdout_to is None and cmd.joined_by != "&&":
        return True  # the process list after an unrelated command
    if name == "timeout" and len(args) == 1 and args[0].isdigit():
        return True  # a bare delay
    if (
        name == "ping"
        and cmd.chain_index > 0
        and any(re.match(r"^(127\.|localhost$|::1$|0\.0\.0\.0$)", a) for a in plain)
    ):
        return True  # pinging this machine from a chain is a timing probe
    if name == "ping":
        return any(a in ("-i", "-n", "-w") for a in args) and cmd.chain_index > 0
    if (
        name
        in (
            "ls",
            "cat",
            "head",
            "tail",
            "find",
            "tree",
            "du",
            "base64",
            "xxd",
            "od",
            "strings",
            "less",
            "more",
            "nl",
            "tac",
        )
        and plain
    ):
        return any(_SYSTEM_LISTING.match(norm_path(a)) for a in plain)
    if name in FETCHERS and cmd.chain_index > 0 and cmd.joined_by in (";", "&", "\n", "&&", "||"):
        return True
    if (
        cmd.name in FETCHERS
        and cmd.stdin_from is not None
        and not any(a.startswith(("-d", "--data", "-T", "-F", "-stdin", "-i")) or a == "-" for a in args)
    ):
        return True
    if name in ("echo", "printf") and re.search(
        r"<\s*(script|img|svg|iframe)\b|\bon(error|load)\s*=|<\?php",
        " ".join(w.raw for w in cmd.words),
        re.IGNORECASE,
    ):
        return True
    if name == "perl" and "-e" in args and re.search(r"print\s*[\"']\w[\"']\s*x\s*\d{3,}", " ".join(args)):
        return True
    return False


# --------------------------------------------------------------------------
# Per-command rules
# --------------------------------------------------------------------------


def _rm(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    recursive = "r" in flags.lower() or "--recursive" in args
    targets = [a for a in args if not a.startswith("-") or a == "-"]
    if "--" in args:
        targets = args[args.index("--") + 1 :]
    for t in targets:
        p = norm_path(t)
        if recursive and is_root_target(p):
            j.deny("destructive-delete", f"recursively deletes {t or 'a root folder'}")
        elif recursive and is_credential(p):
            j.deny("destructive-delete", f"deletes the credential store {t}")
        elif AUDIT.search(p) or (LOGS.search(p) and not p.endswith("_history")):
            j.deny("log-tamper", f"deletes the log or audit file {t}")
        elif p.endswith("_history"):
            j.confirm("anti-forensics", f"deletes shell history ({t})")
        elif is_credential(p):
            j.confirm("credential-delete", f"deletes the credential file {t}")
        else:
            j._removes(cmd, t, via=cmd.name)
    if recursive:
        j.confirm("recursive-delete", "deletes recursively")
    if "--no-preserve-root" in args:
        j.deny("destructive-delete", "disables rm's protection of /")


def _shred(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    targets = [a for a in args if not a.startswith("-")]
    for t in targets:
        if is_device(t):
            j.deny("disk-wipe", f"shreds the device {t}")
        elif is_credential(t) or is_root_target(t):
            j.deny("destructive-delete", f"destroys {t}")
        elif LOGS.search(norm_path(t)):
            j.deny("log-tamper", f"destroys the log {t}")
        else:
            j._removes(cmd, t, via=cmd.name)


def _find(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    roots = []
    for a in args:
        if a.startswith(("-", "(", "!", "\\(")) and a not in ("-",):
            if a in ("-H", "-L", "-P") or re.fullmatch(r"-[HLPO]\d?|-D", a):
                continue
            break
        roots.append(a)
    roots = roots or ["."]
    destructive = "-delete" in args
    inner: list[str] = []
    for flag in ("-exec", "-execdir", "-ok", "-okdir"):
        if flag in args:
            start = args.index(flag) + 1
            end = next((k for k in range(start, len(args)) if args[k] in (";", "+", "\\;")), len(args))
            inner = args[start:end]
            break
    if inner:
        name = inner[0].rsplit("/", 1)[-1]
        if name in ("rm", "shred", "unlink") or (name in ("chmod", "chown") and is_root_target(roots[0])):
            destructive = destructive or name != "chmod"
        sub = " ".join(_quote(a) for a in inner).replace("{}", "FOUND")
        j.found.extend(j.nested(sub, "find -exec"))
        if name in SENDERS and any(
            re.search(r"\*?\.(pem|key)|id_rsa|id_ed25519|credentials", a) for a in args
        ):
            j.deny("exfiltration", "finds key files and sends them over the network")
        if name == "rm" and any("r" in a for a in inner if a.startswith("-")):
            j.confirm("recursive-delete", "deletes recursively")
    selective = any(a in _FIND_FILTERS for a in args)
    if destructive:
        for r in roots:
            if is_root_target(r) and not selective:
                j.deny("destructive-delete", f"deletes everything find walks under {r}")
            elif is_root_target(r):
                j.confirm("recursive-delete", f"deletes matching files anywhere under {r}")
    names = [args[k + 1] for k in range(len(args) - 1) if args[k] in ("-name", "-iname", "-path")]
    if any(
        re.fullmatch(
            r"\*?(id_rsa|id_dsa|id_ed25519|id_ecdsa|\.git-credentials|credentials|\.netrc|"
            r"shadow|wallet\.dat|\*\.kdbx)\*?",
            n,
        )
        for n in names
    ) and any(norm_path(r) in ("/", "~", "/home", "/root", "/Users") for r in roots):
        j.confirm("credential-search", "searches the machine for credential files")


_FIND_FILTERS = {
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-user",
    "-nouser",
    "-group",
    "-nogroup",
    "-newer",
    "-empty",
    "-perm",
    "-samefile",
    "-inum",
    "-used",
    "-links",
    "-lname",
    "-ilname",
    "-newermt",
    "-uid",
    "-gid",
    "-fstype",
    "-context",
}


#: Trees whose recursive ownership or mode change breaks the machine or the user's account.
_PERMISSION_ROOTS = {
    "/",
    "/*",
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/boot",
    "/var",
    "/home",
    "/root",
    "/dev",
    "/sys",
    "/proc",
    "~",
    "~/*",
    "/usr/bin",
    "/usr/lib",
    "/usr/sbin",
}


def _chmod(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    name = cmd.name
    recursive = any(
        a in ("-R", "--recursive") or (a.startswith("-") and "R" in a and not a.startswith("--"))
        for a in args
    )
    plain = [a for a in args if not a.startswith("-") or (name == "chmod" and re.fullmatch(r"-[rwxXst]+", a))]
    mode = plain[0] if plain else ""
    targets = (
        plain[1:] if name in ("chmod", "chown", "chgrp") else [a for a in args if a.startswith(("/", "~"))]
    )
    if name == "chmod" and SETUID_MODE.match(mode):
        j.deny("setuid", f"sets the setuid/setgid bit ({mode}) on {' '.join(targets) or 'a file'}")
    # Taking permissions away from group and others in one's own home is privacy, not a wipe.
    private = name == "chmod" and re.fullmatch(r"[go]+-[rwxXst]+", mode) is not None
    for t in targets:
        p = norm_path(t)
        if recursive and p in _PERMISSION_ROOTS and not (private and p in ("~", "~/*")):
            j.deny("permission-wipe", f"changes ownership or permissions of everything under {t}")
        elif ESSENTIAL_FILES.search(p):
            j.deny("system-delete", f"changes ownership or permissions of the system file {p}")
        elif recursive and is_root_target(p):
            j.confirm("system-permissions", f"changes ownership or permissions of everything under {t}")
        elif CRITICAL_FILES.match(p) or p in ("/etc/shadow", "/etc/sudoers"):
            j.deny("system-accounts", f"changes permissions of {p}")
        elif p in ("/", "/etc", "/usr", "/bin", "/sbin", "/usr/bin") or p == "~" and not (
                private or re.fullmatch(r"0?7[0-5][0-5]", mode)):  # `chmod 700 ~` closes the home
            j.confirm("system-permissions", f"changes permissions of {p}")
    if name == "setfacl" and recursive and any(is_root_target(a) for a in args):
        j.deny("permission-wipe", "changes access control lists of a whole system tree")
    if recursive:
        j.confirm("recursive-permissions", f"{name} changes permissions recursively")


def _dd(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    for a in args:
        if a.startswith("of=") and is_device(a[3:]):
            j.deny("disk-wipe", f"dd overwrites the device {a[3:]}")
        elif a.startswith("of="):
            j._write_target(cmd, a[3:], append=False, via="dd")
    j.confirm("dd", "dd copies raw data and can overwrite anything")


def _kill(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    plain = [a for a in args if not a.startswith("-") or a == "-1"]
    harmless = any(a in ("-0", "-l", "-L", "--list") for a in args)
    if cmd.name == "kill" and not harmless and any(a in ("1", "-1") for a in plain[-2:]):
        j.deny("kill-all", "kills init or every process")
    force = any(a in ("-9", "-KILL", "-SIGKILL") for a in args) or _option_value(args, ("-s",)) in (
        "9",
        "KILL",
        "SIGKILL",
    )
    if force:
        j.confirm("kill", f"{cmd.name} force-kills processes")


def _shutdown(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if cmd.name == "init" and not (args and args[0] in ("0", "6")):
        return
    j.confirm("shutdown", f"{cmd.name} stops or restarts the machine")


def _systemctl(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    verbs = [a for a in args if not a.startswith("-")]
    if cmd.name == "service" and len(verbs) >= 2:
        verbs = [verbs[1], verbs[0]]
    if verbs and verbs[0] in ("enable", "link", "reenable") and cmd.name == "systemctl":
        j.confirm("persistence", f"systemctl {verbs[0]} makes a service start automatically")
    if verbs and verbs[0] in ("stop", "disable", "mask", "kill"):
        if any(SECURITY_SERVICES.match(v) for v in verbs[1:]):
            j.deny("defense-evasion", f"turns off the security service {verbs[1]}")
        else:
            j.confirm("service-change", f"{cmd.name} {verbs[0]} changes running services")
    elif verbs and verbs[0] in (
        "poweroff",
        "reboot",
        "halt",
        "kexec",
        "suspend",
        "hibernate",
        "rescue",
        "emergency",
    ):
        j.confirm("shutdown", f"{cmd.name} {verbs[0]} stops or restarts the machine")


def _firewall(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    joined = " ".join(args)
    if cmd.name in ("iptables", "ip6tables") and re.search(r"(^|\s)(-F|--flush|-X|-P \w+ ACCEPT)", joined):
        j.deny("defense-evasion", "flushes or opens the firewall")
    elif cmd.name == "ufw" and "disable" in args or cmd.name == "nft" and "flush" in args:
        j.deny("defense-evasion", "turns the firewall off")
    elif cmd.name == "setenforce" and args and args[0] in ("0", "Permissive", "permissive"):
        j.deny("defense-evasion", "switches SELinux to permissive")
    elif cmd.name in ("aa-teardown", "aa-disable", "auditctl") and (
        cmd.name != "auditctl" or "-D" in args or "-e" in args and "0" in args
    ):
        j.deny("defense-evasion", f"{cmd.name} disables security auditing or confinement")
    elif cmd.name == "sysctl" and re.search(
        r"kernel\.(randomize_va_space|yama|kptr_restrict|dmesg_restrict)", joined
    ):
        j.deny("defense-evasion", "weakens a kernel protection")
    else:
        j.confirm("firewall", f"{cmd.name} changes the firewall or security settings")


def _accounts(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    joined = " ".join(args)
    if cmd.name in ("useradd", "adduser", "usermod") and re.search(r"(-u|--uid)\s*0\b|-o\b.*-u\s*0", joined):
        j.deny("system-accounts", "creates a second root account (uid 0)")
    elif cmd.name in ("usermod", "gpasswd", "adduser") and re.search(
        r"\b(sudo|wheel|root|admin|docker)\b", joined
    ):
        j.confirm("privilege-grant", f"{cmd.name} adds a user to a privileged group")
    elif cmd.name == "chpasswd" or (cmd.name == "passwd" and (not args or "root" in args)):
        if cmd.name == "chpasswd" or "root" in args:
            j.deny("system-accounts", "changes account passwords non-interactively or for root")
        else:
            j.confirm("accounts", "changes a password")
    else:
        j.confirm("accounts", f"{cmd.name} changes user accounts")


def _crontab(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if args and args[0] in ("-l",) and len(args) == 1:
        return
    if not args or args[-1] == "-" or (args and not args[-1].startswith("-")):
        j.confirm("persistence", "installs a crontab (commands that run on a schedule)")
        if cmd.stdin_from is not None:
            for up in _upstream(cmd.stdin_from):
                if _effective(up)[:1] and _effective(up)[0] in ("echo", "printf"):
                    j._payload(" ".join(_effective(up)[1:]), "the crontab entry")
                elif _effective(up)[:1] and _effective(up)[0] in FETCHERS:
                    j.deny("persistence", "installs a crontab downloaded from the network")
    elif "-r" in args:
        j.confirm("persistence", "removes the crontab")
    elif "-e" in args:
        j.confirm("persistence", "edits the crontab")


def _history(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if cmd.name == "history" and any(re.fullmatch(r"-\w*c\w*", a) for a in args):
        j.confirm("anti-forensics", "clears shell history")
    elif cmd.name == "set" and "+o" in args and "history" in args:
        j.confirm("anti-forensics", "turns shell history off")
    elif cmd.name in ("unset", "export", "declare", "typeset", "local", "readonly"):
        for a in args:
            key, _, value = a.partition("=")
            if key in ("HISTFILE", "HISTSIZE", "HISTFILESIZE") and (
                cmd.name == "unset" or value in ("0", "/dev/null", "")
            ):
                j.confirm("anti-forensics", f"disables shell history ({a})")
            if key == "LD_PRELOAD":
                j.confirm("hijack-env", "sets LD_PRELOAD")


def _logs(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if cmd.name == "journalctl" and any(a.startswith(("--vacuum", "--rotate", "--flush")) for a in args):
        j.deny("log-tamper", "deletes or rotates away the system journal")
    if cmd.name in ("truncate", "wipe", "srm") or cmd.name == "ln":
        for a in args:
            p = norm_path(a)
            if AUDIT.search(p):
                j.deny("audit-tamper", f"{cmd.name} tampers with the audit trail ({a})")
            elif LOGS.search(p):
                if p.endswith("_history"):
                    j.confirm("anti-forensics", f"{cmd.name} disables shell history ({a})")
                else:
                    j.deny("log-tamper", f"{cmd.name} empties the log {a}")
            elif cmd.name == "ln" and (PERSISTENCE.search(p) or CRITICAL_FILES.match(p)):
                j.confirm("persistence", f"links over {p}")
        operands = [a for a in _skip_options(args, with_value={"-s", "--size", "-r", "--reference", "-t",
                                                                "--target-directory", "-S", "--suffix"})
                    if not a.startswith("-")] if cmd.name in ("truncate", "ln") else []
        # truncate empties every operand; ln replaces only the last (the link), and only with two or more.
        for target in operands if cmd.name == "truncate" else operands[1:][-1:]:
            j._removes(cmd, target, via=cmd.name)
    if cmd.name in ("wevtutil", "auditpol"):
        j.deny("log-tamper", f"{cmd.name} clears or disables event logs")


def _copy(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    plain = [a for a in args if not a.startswith("-")]
    if cmd.name == "tee":
        for a in plain:
            j._write_target(cmd, a, append="-a" in args, via="tee")
        return
    if len(plain) >= 2:
        dest = plain[-1]
        j._write_target(cmd, dest, append=False, via=cmd.name)
        if cmd.name == "mv" and any(is_root_target(s) for s in plain[:-1]):
            j.deny("destructive-delete", f"moves a system or home root away ({plain[0]})")
        elif cmd.name == "mv":
            for source in plain[:-1]:
                j._removes(cmd, source, via="mv")
        if cmd.name in ("cp", "install") and any(
            norm_path(s).rsplit("/", 1)[-1] in SHELLS for s in plain[:-1]
        ):
            if any(a in ("-p", "--preserve", "-a") for a in args) or norm_path(dest).startswith(
                ("/tmp", "/dev/shm")
            ):
                j.confirm("shell-copy", "copies a shell binary somewhere else")


def _container(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    joined = " ".join(args)
    if cmd.name in ("docker", "podman", "nerdctl", "ctr"):
        if re.search(
            r"--privileged|--pid[= ]host|--cap-add[= ](SYS_ADMIN|ALL)|-v\s*/:|--volume[= ]/:|"
            r"/var/run/docker\.sock|--security-opt[= ](apparmor|seccomp)[=:]unconfined|--net[= ]host.*--pid",
            joined,
        ):
            j.deny("container-escape", f"{cmd.name} starts a container with access to the host")
        elif args and args[0] in ("rm", "rmi", "system", "volume") and re.search(r"-f|prune", joined):
            j.confirm("container-delete", f"{cmd.name} deletes containers, images or volumes")
    elif cmd.name == "nsenter" and re.search(r"(-t|--target)\s*1\b", joined):
        j.deny("container-escape", "enters the namespaces of the host's init process")
    elif cmd.name == "chroot":
        j.confirm("chroot", "changes the root directory")
    elif cmd.name == "mount":
        plain = [a for a in args if not a.startswith("-")]
        binds = any(a in ("--bind", "--rbind", "-B", "-R") or a.startswith("-obind") for a in args)
        if any(is_device(a) for a in plain) or (
            binds and plain and norm_path(plain[0]) in ("/", "/etc", "/root", "~")
        ):
            j.confirm("mount", "mounts a disk or the host filesystem")
        if plain and (CRITICAL_FILES.match(norm_path(plain[-1])) or ESSENTIAL_FILES.search(norm_path(plain[-1]))):
            j.deny("system-delete", f"mounts something over the system file {plain[-1]}")
    elif cmd.name in ("insmod", "modprobe", "rmmod"):
        j.confirm("kernel-module", f"{cmd.name} changes kernel modules")


def _secrets_tool(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    joined = " ".join(args)
    patterns = {
        "gcloud": r"auth\s+(print-access-token|print-identity-token|application-default\s+print)",
        "security": r"(find-(generic|internet)-password.*-[a-z]*w|dump-keychain|export\b)",
        "gpg": r"--export-secret(-sub)?keys",
        "gpg2": r"--export-secret(-sub)?keys",
        "aws": r"configure\s+(get|export-credentials)|sts\s+get-session-token|"
        r"secretsmanager\s+get-secret-value|"
        r"ssm\s+get-parameters?.*--with-decryption|ecr\s+get-login-password",
        "az": r"account\s+get-access-token|keyvault\s+secret\s+show",
        "gh": r"auth\s+token|auth\s+status\b.*(-t\b|--show-token)",
        "glab": r"auth\s+status\b.*(-t\b|--show-token)",
        "kubectl": r"config\s+view.*(--raw|--flatten)|get\s+secrets?\b.*-o",  # `describe` shows no values
        "git": r"\bcredential(-\w+)?\s+(fill|get)\b",
        "npm": r"config\s+get\b.*_?auth|token\s+(list|create)",
        "heroku": r"auth:token",
        "doctl": r"auth\s+token",
        "flyctl": r"auth\s+token",
        "fly": r"auth\s+token",
        "bw": r"get\s+(password|item|totp|notes)|export\b",
        "keyring": r"\bget\b",
        "lpass": r"show\b",
        "vault": r"(read|kv\s+get|print\s+token|token\s+create)\b",
        "op": r"(read|item\s+get)\b",
        "pass": r"^(show\s+)?\S+$",
        "secret-tool": r"lookup",
        "mimikatz": r".",
        "lazagne": r".",
    }
    pattern = patterns.get(cmd.name)
    if pattern and re.search(pattern, joined) or cmd.name.startswith(("docker-credential-", "git-credential-")) and \
            "get" in args:
        j.deny("credential-read", f"{cmd.name} prints stored credentials or tokens")


def _environment(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if cmd.name in ("printenv", "env", "export", "set", "declare") and not args and cmd.stdout_to is not None:
        for down in _downstream(cmd):
            if _effective(down)[:1] and _effective(down)[0] in SENDERS:
                j.deny("exfiltration", "sends the environment (API keys, tokens) over the network")
                return


#: curl's short options that take a value: `-sT file`, `-d@file`, `-Fa=@file` are spelled glued.
_CURL_VALUES = set("dFTHoOuXeAbcxKEmrwyYzQtCPU")


def _curl_words(args: list[str]) -> list[str]:
    """curl's arguments with glued short options taken apart (``-sT x`` → ``-s -T x``)."""
    out: list[str] = []
    for arg in args:
        if not re.fullmatch(r"-[A-Za-z].+", arg) or arg.startswith("--"):
            out.append(arg)
            continue
        for index, letter in enumerate(arg[1:], start=1):
            out.append("-" + letter)
            if letter in _CURL_VALUES:
                if arg[index + 1:]:
                    out.append(arg[index + 1:])
                break
    return out


_LOOPBACK = re.compile(r"^(?:[a-z][\w+.-]*://)?(?:[^@/\s]*@)?(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d+)?(?:[/?#]|$)",
                       re.IGNORECASE)


def _only_loopback(args: list[str]) -> bool:
    """True when every URL or host the arguments name is this machine's loopback (a test server)."""
    places = [a for a in args if re.match(r"^[a-z][\w+.-]*://", a, re.IGNORECASE) or _LOOPBACK.match(a)]
    return bool(places) and all(_LOOPBACK.match(a) for a in places)


#: Cloud storage commands, by the words that copy local files up: ``aws s3 cp``, ``gsutil cp``, ``rclone copy``.
_CLOUD_COPIES = {"aws": {"cp", "sync", "mv"}, "gsutil": {"cp", "rsync", "mv"}, "gcloud": {"cp", "rsync", "mv"},
                 "rclone": {"copy", "sync", "move", "copyto", "moveto"}, "s3cmd": {"put", "sync"},
                 "azcopy": {"copy", "sync"}, "az": {"upload", "upload-batch"}}


def _copies_out(j: _Judge, cmd: SimpleCommand, name: str, args: list[str]) -> None:
    """Local files copied to another machine or a bucket: an upload by other means than HTTP."""
    operands = [a for a in args if not a.startswith("-")]
    here = [r.target for r in cmd.redirects if r.op in ("<<<", "<<", "<<-")]
    def remote(word: str) -> bool:
        return bool(REMOTE_SPEC.match(word) or re.match(r"^(s3|gs|az|https?)://", word))

    out = False
    if name in ("scp", "rsync", "sftp") and len(operands) >= 2:
        out = remote(operands[-1]) and not all(map(remote, operands[:-1]))
    elif name in ("sftp", "lftp", "smbclient", "tftp", "ftp"):
        out = any(re.search(r"\b(m?put|mirror\s+-R)\b", text) for text in [*args, *here])
    elif name in _CLOUD_COPIES and set(operands) & _CLOUD_COPIES[name]:
        out = any(remote(a) or ":" in a and name == "rclone" for a in operands[-1:]) or name in ("az",)
    elif name == "gh":
        out = operands[:2] == ["gist", "create"] or operands[:2] == ["release", "upload"]
    elif name in ("croc", "wormhole", "magic-wormhole"):
        out = "send" in operands
    elif name in ("mail", "mailx", "mutt", "s-nail"):
        out = any(a in ("-a", "-A", "--attach") or a.startswith("--attach=") for a in args)
    elif name in ("sendmail", "msmtp", "ssmtp"):
        out = any(r.op == "<" for r in cmd.redirects) or cmd.stdin_from is not None
    if out:
        j.confirm("upload", f"{name} copies local data to another machine or a bucket")


def _entry_point_copy(j: _Judge, cmd: SimpleCommand, name: str, args: list[str]) -> None:
    """``ln -s …/bin/clawcore cc``, ``$(which clawcore) audit …``: the runtime's command by another name."""
    copied = name in ("ln", "cp", "install", "rsync", "mv") and any(
        re.search(r"(^|/)bin/clawcore$", a) for a in args if not a.startswith("-"))  # the console script
    located = any((_effective(c)[:1] or [""])[0] in ("which", "command", "type", "whereis", "realpath", "readlink")
                  and "clawcore" in _effective(c)[1:] for c in cmd.substitutions)
    if copied or located:
        _runtime_cli(j, cmd, args)


def _runtime_cli(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    # `clawcore prism unlock`, `audit record`, `security audit --fix`: the operator's controls, not the agent's.
    j.deny("runtime-cli", "runs clawcore itself: the agent may not operate its own runtime (unlock, audit, config)")


def _ssh_keys(j: _Judge, cmd: SimpleCommand, args: list[str]) -> None:
    if cmd.name in ("ssh-copy-id",):
        j.confirm("ssh", "installs a key on a remote host")


_HANDLERS = {
    "rm": _rm,
    "rmdir": _rm,
    "unlink": _rm,
    "srm": _shred,
    "shred": _shred,
    "wipe": _shred,
    "find": _find,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "setfacl": _chmod,
    "chattr": _chmod,
    "dd": _dd,
    "kill": _kill,
    "killall": _kill,
    "pkill": _kill,
    "shutdown": _shutdown,
    "reboot": _shutdown,
    "halt": _shutdown,
    "poweroff": _shutdown,
    "init": _shutdown,
    "systemctl": _systemctl,
    "service": _systemctl,
    "iptables": _firewall,
    "ip6tables": _firewall,
    "ufw": _firewall,
    "nft": _firewall,
    "setenforce": _firewall,
    "aa-teardown": _firewall,
    "aa-disable": _firewall,
    "auditctl": _firewall,
    "sysctl": _firewall,
    "useradd": _accounts,
    "adduser": _accounts,
    "usermod": _accounts,
    "passwd": _accounts,
    "chpasswd": _accounts,
    "userdel": _accounts,
    "visudo": _accounts,
    "gpasswd": _accounts,
    "crontab": _crontab,
    "at": _crontab,
    "batch": _crontab,
    "history": _history,
    "set": _history,
    "unset": _history,
    "export": _history,
    "declare": _history,
    "typeset": _history,
    "readonly": _history,
    "journalctl": _logs,
    "truncate": _logs,
    "ln": _logs,
    "wevtutil": _logs,
    "auditpol": _logs,
    "cp": _copy,
    "mv": _copy,
    "install": _copy,
    "tee": _copy,
    "rsync": _copy,
    "docker": _container,
    "podman": _container,
    "nerdctl": _container,
    "ctr": _container,
    "nsenter": _container,
    "chroot": _container,
    "mount": _container,
    "insmod": _container,
    "modprobe": _container,
    "rmmod": _container,
    "gcloud": _secrets_tool,
    "security": _secrets_tool,
    "gpg": _secrets_tool,
    "gpg2": _secrets_tool,
    "aws": _secrets_tool,
    "az": _secrets_tool,
    "gh": _secrets_tool,
    "glab": _secrets_tool,
    "git": _secrets_tool,
    "npm": _secrets_tool,
    "heroku": _secrets_tool,
    "doctl": _secrets_tool,
    "flyctl": _secrets_tool,
    "fly": _secrets_tool,
    "bw": _secrets_tool,
    "keyring": _secrets_tool,
    "lpass": _secrets_tool,
    "pass": _secrets_tool,
    "kubectl": _secrets_tool,
    "vault": _secrets_tool,
    "op": _secrets_tool,
    "secret-tool": _secrets_tool,
    "mimikatz": _secrets_tool,
    "lazagne": _secrets_tool,
    "printenv": _environment,
    "env": _environment,
    "ssh-copy-id": _ssh_keys,
    "clawcore": _runtime_cli,
}


# --------------------------------------------------------------------------
# Small readers
# --------------------------------------------------------------------------


def _embedded_commands(name: str, args: list[str]) -> list[tuple[str, str]]:
    """Shell text a program runs on its own: ``ssh host CMD``, ``trap CMD``, ``alias x=CMD``,
    ``tar --checkpoint-action=exec=CMD``, ``vim -c ':!CMD'``, ``rsync -e CMD``, ``git -c core.pager=CMD``."""
    out: list[tuple[str, str]] = []
    if name in ("ssh", "autossh"):
        operands = [a for a in args[len(_leading_options(args)) :]]
        if len(operands) >= 2:
            out.append((" ".join(operands[1:]), f"the command ssh runs on {operands[0]}"))
    elif name == "trap" and args:
        out.append((args[0], "the trap handler"))
    elif name == "alias":
        out.extend((a.split("=", 1)[1], f"the alias {a.split('=', 1)[0]}") for a in args if "=" in a)
    for i, a in enumerate(args):
        m = re.match(
            r"^--?[\w-]*(checkpoint-action|unzip-command|use-compress-program|rsh|to-command|"
            r"info-script|new-volume-script)=(exec=)?(.+)$",
            a,
        )
        if m:
            out.append((m.group(3), f"the command {name} runs"))
        elif a in ("-ex", "--eval-command", "-iex", "--init-eval-command") and name == "gdb" and i + 1 < len(args):
            shell_command = re.match(r"^\s*(?:!|shell\s)(.+)$", args[i + 1])
            if shell_command:
                out.append((shell_command.group(1), "the shell command gdb runs"))
        elif a in ("-e", "--rsh") and name in ("rsync",) and i + 1 < len(args):
            out.append((args[i + 1], "the remote shell rsync runs"))
        elif a in ("-c", "+") and name in ("vim", "vi", "nvim", "view", "ex") and i + 1 < len(args):
            bang = re.match(r"^:?!(.+)$", args[i + 1])
            if bang:
                out.append((bang.group(1), f"the shell command {name} runs"))
        elif (
            name == "git"
            and a == "-c"
            and i + 1 < len(args)
            and re.match(r"^(core\.(pager|editor|sshCommand|fsmonitor|hooksPath)|alias\.\w+)=", args[i + 1])
        ):
            value = args[i + 1].split("=", 1)[1]
            out.append((value.removeprefix("!"), "the command git runs"))
    return out


def _effective(cmd: SimpleCommand) -> list[str]:
    """The command that actually runs once wrappers (``sudo``, ``env``, ``timeout``, ``xargs``...) are peeled.

    ``xargs`` gets the words of a here-string as its arguments (``xargs rm -rf <<< /``).
    """
    cached = cmd.memo.get("effective")
    if cached is None:
        cached = cmd.memo["effective"] = _peel(cmd)
    return list(cached)  # type: ignore[call-overload]


_GLOB_TARGETS = (
    "rm",
    "sh",
    "bash",
    "dash",
    "zsh",
    "nc",
    "ncat",
    "curl",
    "wget",
    "dd",
    "chmod",
    "chown",
    "mkfs",
    "shred",
    "python",
    "python3",
    "perl",
    "ruby",
    "php",
    "base64",
    "eval",
    "cat",
    "socat",
    "telnet",
)


def _effective_texts(cmd: SimpleCommand) -> list[str]:
    """Like :func:`_effective`, but words keep :data:`shell.DYNAMIC` where their value is unknown."""
    cached = cmd.memo.get("effective-texts")
    if cached is None:
        cached = cmd.memo["effective-texts"] = _peel(cmd, [w.text for w in cmd.words])
    return list(cached)  # type: ignore[call-overload]


def _sets_ifs(script: shell.Script) -> bool:
    """Whether the line changes IFS, so that an expansion splits into words the reading cannot see."""
    return any("IFS" in cmd.assignments or any(w.value.startswith("IFS=") for w in cmd.words[1:])
               for cmd in script.commands)


#: Per wrapper: its options that take a value, and how many operands come before the command
#: (``chrt PRIORITY``, ``taskset MASK``, ``setarch ARCH``, ``timeout DURATION``, ``faketime TIME``).
#: A wrong entry hides the command that runs, so each is taken from the program's manual.
_WRAPPER_OPTIONS: dict[str, tuple[set[str] | dict[str, int], int]] = {
    "sudo": ({"-u", "-g", "-U", "-C", "-h", "-p", "-r", "-t", "-T", "-D", "--user", "--group", "--prompt",
              "--chdir", "--close-from", "--role", "--type", "--host", "--other-user"}, 0),
    "doas": ({"-u", "-C"}, 0),
    "parallel": ({"-j", "--jobs", "-S", "--sshlogin"}, 0),
    "sem": ({"-j", "--jobs", "--id", "-P", "--semaphorename"}, 0),
    "timeout": ({"-s", "-k", "--signal", "--kill-after"}, 1),
    "nice": ({"-n", "--adjustment"}, 0),
    "ionice": ({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid"}, 0),
    "chrt": ({"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"}, 1),
    "taskset": (set(), 1),
    "flock": ({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}, 1),
    "stdbuf": ({"-i", "-o", "-e", "--input", "--output", "--error"}, 0),
    "setarch": (set(), 1),
    "cgexec": ({"-g"}, 0),
    "numactl": ({"-i", "-N", "-C", "-m", "-p", "-P", "-w", "--interleave", "--cpunodebind", "--physcpubind",
                 "--membind", "--preferred", "--weighted-interleave"}, 0),
    "strace": ({"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-b", "-I", "-X", "-a", "-O", "-S", "-U", "--output",
                "--attach", "--user", "--env"}, 0),
    "ltrace": ({"-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-x", "-F", "-A", "-D", "--output", "--library"}, 0),
    "ssh-agent": ({"-a", "-E", "-t", "-P", "-O"}, 0),
    "xvfb-run": ({"-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file", "-p",
                  "--xauth-protocol", "-w", "--wait"}, 0),
    "faketime": ({"--date-prog"}, 1),
    "systemd-run": ({"-p", "--property", "-u", "--unit", "-E", "--setenv", "-M", "--machine", "-H", "--host",
                     "--uid", "--gid", "--nice", "-D", "--working-directory", "--slice", "--description"}, 0),
    "proot": ({"-r", "-b", "-m", "-w", "-q", "-k", "--rootfs", "--bind", "--mount", "--cwd"}, 0),
    "firejail": (set(), 0),
    "fakeroot": ({"-l", "--lib", "--faked", "-s", "-i"}, 0),
    "proxychains": ({"-f"}, 0),
    "proxychains4": ({"-f"}, 0),
    "exec": ({"-a"}, 0),
    "time": ({"-o", "--output", "-f", "--format"}, 0),
    "unshare": ({"-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-R", "--root", "--propagation", "--map-user",
                 "--map-group", "--map-users", "--map-groups"}, 0),
    "setpriv": ({"--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps",
                 "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
                 "--apparmor-profile", "--landlock-access", "--landlock-rule", "--seccomp-filter"}, 0),
    "prlimit": ({"-p", "--pid"}, 0),
    "torsocks": ({"-u", "-p", "-a", "-P", "--user", "--pass", "--address", "--port"}, 0),
    "caffeinate": ({"-t", "-w"}, 0),
    "nsjail": ({"-C", "--config", "-R", "--bindmount_ro", "-B", "--bindmount", "-T", "--tmpfsmount", "-c", "--chroot",
                "-u", "--user", "-g", "--group", "-E", "--env", "-M", "--mode", "-t", "--time_limit", "-H",
                "--hostname", "-D", "--cwd", "-P", "--port"}, 0),
    "bwrap": ({**dict.fromkeys(("--args", "--userns", "--userns2", "--pidns", "--chdir", "--unsetenv", "--lock-file",
                                "--sync-fd", "--uid", "--gid", "--hostname", "--exec-label", "--file-label", "--seccomp",
                                "--add-seccomp-fd", "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd",
                                "--cap-add", "--cap-drop", "--remount-ro", "--proc", "--dev", "--tmpfs", "--mqueue",
                                "--dir", "--perms", "--size", "--argv0"), 1),
               **dict.fromkeys(("--setenv", "--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind",
                                "--ro-bind-try", "--symlink", "--file", "--bind-data", "--ro-bind-data", "--chmod",
                                "--overlay-src"), 2)}, 0),
}
#: Options of the wrappers not listed above (``nohup``, ``setsid``, ``valgrind``, ``linux64`` ...).
_DEFAULT_WRAPPER_OPTIONS: tuple[set[str] | dict[str, int], int] = (set(), 0)


def _peel(cmd: SimpleCommand, words: list[str] | None = None) -> list[str]:
    argv = [
        a.rsplit("/", 1)[-1] if i == 0 and "/" in a and not a.endswith("/") else a
        for i, a in enumerate(cmd.argv if words is None else words)
    ]
    if argv and re.search(r"^[^\[].*[?*\[]|[?*]", argv[0]):
        # `/bin/r?m`: a command name spelled as a glob runs whatever it matches
        import fnmatch

        match = next((t for t in _GLOB_TARGETS if fnmatch.fnmatchcase(t, argv[0])), None)
        if match:
            argv[0] = match
    seen = 0
    while argv and argv[0] in WRAPPERS and seen < 6:
        seen += 1
        name, rest = argv[0], argv[1:]
        if name in ("env", "time", "command", "builtin", "exec") and not [
            a for a in rest if not a.startswith("-") and "=" not in a
        ]:
            return argv  # `env` alone prints the environment; nothing else runs
        if name == "xargs":
            rest = _skip_options(
                rest,
                with_value={
                    "-I",
                    "-i",
                    "-n",
                    "-P",
                    "-L",
                    "-d",
                    "-s",
                    "-E",
                    "-a",
                    "--max-args",
                    "--max-procs",
                    "--delimiter",
                    "--replace",
                    "--arg-file",
                },
            )
            extra = [r.target for r in cmd.redirects if r.op == "<<<"]
            if not rest:
                rest = ["echo"]
            argv = rest + [w for text in extra for w in text.split()]
            break
        if name in ("su", "runuser", "sg", "script"):
            code = _option_value(rest, ("-c", "--command"))
            if code is not None:
                return ["sh", "-c", code]
            if name == "sg":  # `sg GROUP 'COMMAND'`: the command is one string for sh
                operands = [a for a in rest if not a.startswith("-")]
                return ["sh", "-c", " ".join(operands[1:])] if len(operands) > 1 else ["sh"]
            return ["sh"] if name != "script" else []
        if name == "env":
            with_value = {"-u", "-C", "--unset", "--chdir", "-S", "--split-string"}
            split = _leading_value(rest, ("-S", "--split-string"), with_value)
            rest = _skip_options(rest, with_value=with_value)
            if split is not None:  # `env -S 'rm -rf /'`: one word split into the command line
                rest = [*split.split(), *rest]
            while rest and "=" in rest[0] and not rest[0].startswith("="):
                rest = rest[1:]
        elif name == "flock" and (code := _leading_value(rest[1:], ("-c", "--command"), {"-w", "-E"})) is not None:
            return ["sh", "-c", code]
        elif name == "watch":
            rest = _skip_options(rest, with_value={"-n", "--interval"})
            if len(rest) == 1:
                return ["sh", "-c", rest[0]]
        else:
            with_value, operands = _WRAPPER_OPTIONS.get(name, _DEFAULT_WRAPPER_OPTIONS)
            rest = _skip_options(rest, with_value=with_value)[operands:]
        if not rest:
            return argv  # the wrapper alone (`timeout 10`, `nohup`): it is what runs
        argv = [a.rsplit("/", 1)[-1] if i == 0 and "/" in a else a for i, a in enumerate(rest)]
    return argv


#: Searchers whose first word that is not an option is the pattern, unless -e or -f gives it, and their
#: options that take the next word as a value. Only options that surely take one: skipping a word that
#: is not a value would take the file for the pattern and let it be read unseen (grep's -T takes none).
_GREP_VALUES = {"-A", "-B", "-C", "-m", "-d", "-D", "--max-count", "--context", "--after-context", "--before-context",
                "--include", "--exclude", "--exclude-dir", "--label", "--binary-files", "--devices", "--directories"}
_SEARCH_VALUE_OPTIONS = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "zgrep", "ag", "ack"), _GREP_VALUES),
    "rg": {"-A", "-B", "-C", "-m", "-t", "-T", "-g", "-j", "-M", "-E", "-d", "-r", "--max-count", "--context",
           "--after-context", "--before-context", "--type", "--type-not", "--glob", "--iglob", "--threads",
           "--max-columns", "--encoding", "--max-depth", "--max-filesize", "--sort", "--sortr", "--replace"},
}
_PATTERN_FIRST = set(_SEARCH_VALUE_OPTIONS)


def unread_positions(name: str, args: list[str]) -> set[int]:
    """Positions of the words a reader does not read as files: a search's pattern
    (``grep -rn id_rsa src/``) and a copy's or link's destination (``cp .env.example .env``)."""
    positional = []
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in _SEARCH_VALUE_OPTIONS.get(name, ()):
            skip = True
        elif arg == "--":
            positional += range(index + 1, len(args))
            break
        elif not arg.startswith("-") or arg == "-":
            positional.append(index)
    if name in _PATTERN_FIRST:
        explicit = any(a in ("-e", "-f", "--regexp", "--file") or a.startswith(("--regexp=", "--file="))
                       or re.fullmatch(r"-[A-Za-z]*[ef].*", a) for a in args if a != "--")
        return set(positional[:1]) if positional and not explicit else set()
    if name in ("cp", "install", "rsync", "scp", "ln", "link") and len(positional) >= 2:
        return {positional[-1]}
    return set()


#: Folders the machine runs from: an archive unpacked over one can replace any program or setting in it
#: (unpacking into ``/usr/local`` or ``/opt`` is how software is installed, and only asks).
_CORE_SYSTEM = frozenset({"/", "/etc", "/usr", "/bin", "/sbin", "/boot", "/lib", "/lib64", "/usr/bin", "/usr/sbin",
                          "/usr/lib"})


def _unpacked_into(name: str, args: list[str]) -> list[tuple[str, bool]]:
    """The folder an archive is unpacked into (``tar -x -C DIR``, ``unzip -d DIR``) or a tree synced into
    (``rsync SRC DIR``), and whether what is there goes (``--delete``)."""
    if name in ("tar", "bsdtar", "gtar") and any(a == "--extract" or re.fullmatch(r"-?[A-Za-wyz]*x[A-Za-z]*", a)
                                                 for a in args[:2] + [a for a in args if a.startswith("-")]):
        folder = _option_value(args, ("-C", "--directory")) or next(
            (a.split("=", 1)[1] for a in args if a.startswith("--directory=")), None)
        return [(folder, False)] if folder else []
    if name == "unzip":
        folder = _option_value(args, ("-d",))
        return [(folder, False)] if folder else []
    if name == "rsync":
        operands = [a for a in args if not a.startswith("-")]
        if len(operands) >= 2 and not REMOTE_SPEC.match(operands[-1]):
            return [(operands[-1], any(a.startswith("--delete") for a in args))]
    return []


#: Runners whose command follows a subcommand: ``uv run X``, ``npm exec -- X``, ``conda run -n env X``.
_RUN_SUBCOMMANDS = {"run", "exec", "dlx", "x"}
_RUNNER_VALUES = {"-n", "--name", "-p", "--prefix", "-e", "--env", "--with", "--python", "-C", "--cwd", "--project",
                  "--package", "--directory", "-w", "--workspace", "--filter"}


def _runner_start(name: str, values: list[str]) -> int | None:
    """Where the command a project runner runs begins among its words, or None when not known."""
    if name in ("npx", "bunx", "uvx", "pnpx"):
        index = 1
    elif name in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye", "pixi", "conda", "mamba", "micromamba", "tox",
                  "npm", "pnpm", "yarn", "pipx"):
        index = next((i + 1 for i, v in enumerate(values) if i and v in _RUN_SUBCOMMANDS), None)
        if index is None:
            return None
    else:
        return None
    while index < len(values) and values[index].startswith("-"):
        if values[index] == "--":
            return index + 1 if index + 1 < len(values) else None
        index += 2 if values[index] in _RUNNER_VALUES else 1
    return index if index < len(values) else None


def _edited_in_place(name: str, args: list[str]) -> list[str]:
    """The files ``sed -i``, ``perl -i`` or ``ruby -i`` rewrite: written, not only read."""
    if name not in ("sed", "gsed", "perl", "ruby") or not any(
            a == "--in-place" or a.startswith("--in-place=") or re.fullmatch(r"-[A-Za-z]*i.*", a) for a in args):
        return []
    operands, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-e", "-f", "--expression", "--file") or re.fullmatch(r"-[A-Za-z]*[eE]", arg):
            skip = True  # the code that follows is not a file
        elif not arg.startswith("-"):
            operands.append(arg)
    scripted = any(a in ("-e", "-f", "--expression", "--file") or re.fullmatch(r"-[A-Za-z]*[eE]", a) for a in args)
    return operands if scripted or name not in ("sed", "gsed") else operands[1:]  # sed's first operand: its script


def _elevated(cmd: SimpleCommand) -> bool:
    return bool(cmd.words) and cmd.name in ("sudo", "doas", "su", "pkexec", "runuser")


def _leading_options(args: list[str]) -> list[str]:
    """The options before the first operand (``ssh -R 80:x:80 host cmd -R`` → ``-R 80:x:80``)."""
    out: list[str] = []
    for a in args:
        if not a.startswith("-"):
            if out and re.fullmatch(r"-[a-zA-Z]*[RDLpilobcFEeJmOoQSwW]", out[-1]):
                out.append(a)
                continue
            break
        out.append(a)
    return out


def _leading_value(args: list[str], names: Iterable[str], with_value: set[str]) -> str | None:
    """The value of option ``names`` among the options before the first operand (not the command's own)."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        if args[i] in names:
            return args[i + 1] if i + 1 < len(args) else None
        i += 2 if args[i] in with_value else 1
    return None


def _skip_options(args: list[str], *, with_value: Iterable[str] | Mapping[str, int]) -> list[str]:
    """``args`` after the leading options; ``with_value`` names those that take the next word (a mapping:
    the next *n* words, as bwrap's ``--bind SRC DEST``)."""
    counts = with_value if isinstance(with_value, Mapping) else dict.fromkeys(with_value, 1)
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return args[i + 1 :]
        i += 1 + counts.get(args[i], 0)
    return args[i:]


def _option_value(args: list[str], names: Iterable[str]) -> str | None:
    names = tuple(names)
    for i, a in enumerate(args):
        if a in names and i + 1 < len(args):
            return args[i + 1]
        if re.fullmatch(r"-[a-zA-Z]*c", a) and "-c" in names and i + 1 < len(args) and not a.startswith("--"):
            return args[i + 1]
    return None


def _script_arg(args: list[str]) -> bool:
    """A shell or interpreter given a script file (so it does not read its program from stdin)."""
    skip_next = False
    for a in args:
        if skip_next:
            skip_next = False
            continue
        if a in ("-s", "-"):
            return False
        if a in ("-o", "+o", "-O", "-W", "-X", "-m", "-I"):
            skip_next = True
            continue
        if not a.startswith(("-", "+")):
            return True
    return False


def _strip_at(arg: str) -> str:
    value = arg.split("=", 1)[1] if re.match(r"^[\w.-]+=@", arg) else arg
    return value[1:] if value.startswith("@") else value.split(";")[0]


def _upstream(cmd: SimpleCommand | None) -> list[SimpleCommand]:
    chain: list[SimpleCommand] = []
    while cmd is not None and len(chain) < 32:
        chain.append(cmd)
        cmd = cmd.stdin_from
    return chain


def _downstream(cmd: SimpleCommand) -> list[SimpleCommand]:
    chain: list[SimpleCommand] = []
    nxt = cmd.stdout_to
    while nxt is not None and len(chain) < 32:
        chain.append(nxt)
        nxt = nxt.stdout_to
    return chain


def _reads_secret(cmd: SimpleCommand) -> bool:
    argv = _effective(cmd)
    if not argv:
        return False
    name, args = argv[0], argv[1:]
    if name in ("printenv", "env") and not [a for a in args if "=" not in a and not a.startswith("-")]:
        return True
    if name in ("printenv",) and args:
        return any(re.search(r"KEY|TOKEN|SECRET|PASS", a, re.IGNORECASE) for a in args)
    if name in ("gpg", "gpg2") and any("export-secret" in a for a in args):
        return True
    if name == "dd" and any(a.startswith("if=") and is_device(a[3:]) for a in args):
        return True
    if name in ("cat", "pv") and any(is_device(a) for a in args):
        return True
    if name in ("tar", "zip", "7z", "rsync", "cpio") and any(
        norm_path(a) in ("~", "/", "/home", "/root", "/etc", "~/*") for a in args if not a.startswith("-")
    ):
        return True
    files = [a for a in args if not a.startswith("-")] + [r.target for r in cmd.redirects if r.op == "<"]
    if name in READERS | {"tr", "strings", "dd", "find"} and any(
        is_credential(_strip_at(f)) or norm_path(_strip_at(f)).endswith("_history") for f in files
    ):
        return True
    return any(_reads_secret(s) for s in cmd.substitutions)


def _is_decoder(cmd: SimpleCommand) -> bool:
    argv = _effective(cmd)
    if not argv:
        return False
    name, args = argv[0], argv[1:]
    joined = " ".join(args)
    return (
        (name in ("base64", "base32", "basenc") and re.search(r"(^|\s)(-d|-D|--decode)", joined) is not None)
        or (name == "xxd" and "-r" in joined)
        or (name == "openssl" and re.search(r"enc|base64", joined) is not None and "-d" in args)
        or (name in ("uudecode", "rev"))
        or (name == "tr" and is_letter_cipher(args))
        or (name in ("printf", "echo") and "\\" in joined)
    )


def _static_payload(chain: list[SimpleCommand]) -> tuple[str, bool] | None:
    """The text a pipe would deliver when every stage is static and decodable: (text, was-transformed)."""
    stages = list(reversed(chain))
    first = stages[0]
    argv = _effective(first)
    if not argv:
        return None
    name, args = argv[0], argv[1:]
    here = [r.target for r in first.redirects if r.op in ("<<<", "<<", "<<-")]
    text: str | None
    transformed = False
    if any(w.dynamic for w in first.words):
        return None
    if name == "echo":
        flags = [a for a in args if a in ("-e", "-n", "-E", "-ne", "-en")]
        body = " ".join(a for a in args if a not in flags)
        text = shell.decode_escapes(body) if any("e" in f for f in flags) else body
        transformed = text != body
    elif name == "printf" and args:
        text = shell.printf_output(args)
        transformed = text != args[0] or "\\" in args[0]
    elif name == "cat" and here and not args:
        text = here[0]
    elif here:
        text = here[0]
        stages = [first] + stages[1:]
        applied = transform(name, args, text)
        if applied is None:
            return None
        text, transformed = applied, True
    else:
        return None
    for stage in stages[1:]:
        sargv = _effective(stage)
        if not sargv:
            return None
        applied = transform(sargv[0], sargv[1:], text)
        if applied is None:
            return None
        transformed = transformed or applied != text
        text = applied
    return text, transformed


def _empties(cmd: SimpleCommand) -> bool:
    """A redirection whose command writes nothing (``> f``, ``: > f``, ``echo '' > f``,
    ``cat /dev/null > f``)."""
    argv = _effective(cmd)
    if not argv or argv[0] in (":", "true", "false"):
        return True
    if argv[0] in ("echo", "printf") and not "".join(a for a in argv[1:] if a not in ("-n", "-e")).strip():
        return True
    return argv[0] == "cat" and argv[1:] == ["/dev/null"]


def _written_content(cmd: SimpleCommand) -> str:
    argv = _effective(cmd)
    if argv and argv[0] in ("echo", "printf"):
        return (
            shell.printf_output(argv[1:])
            if argv[0] == "printf" and argv[1:]
            else " ".join(a for a in argv[1:] if a not in ("-e", "-n", "-en", "-ne"))
        )
    if cmd.stdin_from is not None:
        up = _effective(cmd.stdin_from)
        if up and up[0] in ("echo", "printf"):
            return " ".join(up[1:])
    here = [r.target for r in cmd.redirects if r.op in ("<<<", "<<", "<<-")]
    return "\n".join(here)


def _quote(arg: str) -> str:
    if arg and re.fullmatch(r"[\w@%+=:,./~{}*-]+", arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"
