"""What the command analysis knows: programs, paths and code patterns.

Sets of program names grouped by what they do (shells, interpreters,
wrappers that run another command, fetchers, readers, host probes …), the
path classes a rule asks about (system and home roots, credential files,
start-up files, logs, block devices) and the signatures of hostile code in
interpreter one-liners. :mod:`clawcore.security.commands` applies them.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from clawcore.security import shell

__all__ = [
    "AUDIT",
    "CODE_DESTROY",
    "CODE_EVAL",
    "CODE_FETCH",
    "CODE_FORK",
    "CODE_REVERSE_SHELL",
    "CODE_ROOTISH",
    "CODE_SPAWN",
    "CODE_STRING",
    "CREDENTIAL",
    "CRITICAL_FILES",
    "DEVICE",
    "FETCHERS",
    "INTERPRETERS",
    "LOGS",
    "METADATA",
    "MINER",
    "NAME_TAKERS",
    "OFFENSIVE",
    "PERSISTENCE",
    "PROBES",
    "READERS",
    "REMOTE_SPEC",
    "SECURITY_SERVICES",
    "SENDERS",
    "SETUID_MODE",
    "SHELLS",
    "SHELLSHOCK",
    "SOCKET_TOOLS",
    "SYSTEM_ROOTS",
    "TUNNELS",
    "URL",
    "WEBSHELL",
    "WRAPPERS",
    "is_credential",
    "is_device",
    "is_root_target",
    "is_strong_credential",
    "norm_path",
]

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish", "csh", "tcsh", "rbash", "yash", "posh", "oksh",
          "loksh", "elvish", "nu", "xonsh"}
INTERPRETERS = {
    "python": "-c",
    "python2": "-c",
    "python3": "-c",
    "pypy": "-c",
    "pypy3": "-c",
    "perl": "-e",
    "ruby": "-e",
    "node": "-e",
    "nodejs": "-e",
    "deno": "eval",
    "bun": "-e",
    "php": "-r",
    "lua": "-e",
    "luajit": "-e",
    "rscript": "-e",
    "osascript": "-e",
    "pwsh": "-c",
    "powershell": "-c",
    "tclsh": "",
    "wish": "",
    "expect": "-c",
    "irb": "",
    "jshell": "",
    "groovy": "-e",
}
#: Programs that run their arguments as another command.
WRAPPERS = {
    "sudo",
    "doas",
    "nohup",
    "time",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "setsid",
    "command",
    "builtin",
    "exec",
    "env",
    "xargs",
    "parallel",
    "watch",
    "strace",
    "ltrace",
    "chrt",
    "taskset",
    "unbuffer",
    "script",
    "su",
    "runuser",
    "flock",
    "caffeinate",
    "torsocks",
    "proxychains",
    "proxychains4",
    "fakeroot",
    "catchsegv",
    "firejail",
    "busybox",
    "toybox",
    "systemd-run",
    "prlimit",
    "setpriv",
    "unshare",
    "proot",
    "nsjail",
    "bwrap",
    "cgexec",
    "numactl",
    "faketime",
    "sg",
    "sem",
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "systemd-inhibit",
    "ssh-agent",
    "xvfb-run",
    "dbus-launch",
    "valgrind",
}
#: Programs that run a command given in their arguments, beyond :data:`WRAPPERS`: supervisors, project
#: runners (``uv run``, ``npm exec``), multiplexers, watchers. Their option grammars are many, so every
#: tail of their words is judged as the command they may run.
RUNNERS = {
    "schedtool", "daemonize", "start-stop-daemon", "runcon", "chpst", "setuidgid", "softlimit", "envdir",
    "envuidgid", "rlwrap", "chronic", "retry", "ifne", "pee", "entr", "watchexec", "nodemon", "capsh",
    "systemd-nspawn", "machinectl", "mpirun", "mpiexec", "srun", "uv", "uvx", "poetry", "pipenv", "pdm", "hatch",
    "rye", "pixi", "conda", "mamba", "micromamba", "tox", "nox", "npx", "npm", "pnpm", "yarn", "bunx", "tmux",
    "screen", "ip", "nsenter", "with-contenv", "su-exec", "gosu", "chroot", "pkexec", "run-one", "lckdo", "pipx",
}
FETCHERS = {
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "http",
    "https",
    "httpie",
    "xh",
    "xhs",
    "lwp-request",
    "lynx",
    "links",
    "w3m",
    "ftp",
    "tftp",
    "axel",
}
SOCKET_TOOLS = {"nc", "ncat", "netcat", "socat", "telnet", "openssl", "cryptcat", "pwncat", "sbd"}
SENDERS = (
    FETCHERS
    | SOCKET_TOOLS
    | {
        "scp",
        "rsync",
        "sftp",
        "ssh",
        "nslookup",
        "dig",
        "host",
        "ping",
        "mail",
        "sendmail",
        "mutt",
        "smbclient",
        "rclone",
        "aws",
        "gsutil",
        "s3cmd",
    }
)
#: Commands that print or copy file contents (so an argument is data that leaves the file).
READERS = {
    "cat",
    "tac",
    "less",
    "more",
    "head",
    "tail",
    "nl",
    "base64",
    "base32",
    "xxd",
    "od",
    "hexdump",
    "strings",
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "zcat",
    "rg",
    "ag",
    "ack",
    "look",
    "awk",
    "sed",
    "cp",
    "ln",  # a link hands the file to whatever reads the new name (a memory note, a served folder)
    "link",
    "tar",
    "zip",
    "gzip",
    "bzip2",
    "xz",
    "7z",
    "scp",
    "rsync",
    "sftp",
    "curl",
    "wget",
    "nc",
    "ncat",
    "openssl",
    "gpg",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "vi",
    "vim",
    "nano",
    "emacs",
    "view",
    "bat",
    "jq",
    "yq",
    "python",
    "python3",
    "perl",
    "ruby",
    "tr",
    "split",
    "dd",
    "mail",
    "install",
    "rclone",
    "aws",
    "gsutil",
}
PROBES = {
    "id",
    "whoami",
    "uname",
    "ifconfig",
    "ipconfig",
    "netstat",
    "ss",
    "hostname",
    "w",
    "who",
    "groups",
    "last",
    "lastlog",
    "arp",
    "route",
    "getent",
    "nproc",
    "lsb_release",
    "systeminfo",
    "pwd",
    "sleep",
    "which",
    "ver",
}
#: Programs that take other programs' names as arguments.
NAME_TAKERS = {
    "which",
    "man",
    "type",
    "command",
    "help",
    "info",
    "whatis",
    "apropos",
    "whereis",
    "hash",
    "alias",
    "unalias",
    "complete",
    "killall",
    "pkill",
    "pgrep",
    "pidof",
    "sudo",
    "xargs",
    "watch",
    "time",
    "env",
    "nohup",
    "timeout",
    "strace",
    "apt",
    "apt-get",
    "yum",
    "dnf",
    "brew",
    "pip",
    "pip3",
    "npm",
    "dpkg",
    "rpm",
    "snap",
    "pacman",
    "apk",
    "port",
    "systemctl",
    "service",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "find",
    "locate",
    "ps",
    "top",
    "update-alternatives",
    "export",
    "declare",
    "local",
    "readonly",
    "set",
    "unset",
    "history",
    "fc",
    "trap",
    "parallel",
    "exec",
    "ltrace",
    "ldd",
    "stat",
    "nice",
    "su",
    "sed",
    "awk",
    "tmux",
    "screen",
    "git",
    "docker",
    "kubectl",
    "ssh",
    "bash",
    "sh",
    "zsh",
    "eval",
    "source",
    ".",
    "jobs",
    "tldr",
    "lsof",
    "fuser",
    "valgrind",
    "gdb",
    "perf",
    "readelf",
    "objdump",
    "nm",
    "chroot",
    "systemd-run",
    "zypper",
    "emerge",
    "nix-env",
    "pkg",
    "choco",
    "winget",
    "scoop",
    "asdf",
    "mise",
    "pyenv",
    "nvm",
    "rbenv",
    "sdk",
    "update-rc.d",
    "chkconfig",
    "compgen",
    "getcap",
    "setcap",
    "dpkg-query",
    "doas",
    "pushd",
    "cd",
}

DEVICE = re.compile(
    r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|"
    r"mapper/|loop\d|sr\d|fd\d|mem$|kmem$|port$)"
)
SYSTEM_ROOTS = {
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/var",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/var/lib",
    "/var/log",
    "/System",
    "/Users",
    "/Library",
    "/Applications",
    "/private",
    "~",
    "/etc/ssh",
    "/var/www",
}
CREDENTIAL = re.compile(
    r"(^|/)(\.ssh/(id_[^/]*|.*_key|identity)(?<!\.pub)$|\.ssh/?$|\.gnupg(/|$)|\.aws(/|$)|\.azure(/|$)|"
    r"\.config/gcloud(/|$)|\.kube/config|\.docker/config\.json|\.git-credentials|\.netrc|\.pgpass|"
    r"\.my\.cnf|\.npmrc|\.pypirc|\.vault-token|\.password-store|keychains?(/|$)|login\.keychain|"
    r"\.mozilla/.*(logins\.json|key\d\.db)|Login Data|Cookies$|\.local/share/keyrings|wallet\.dat|"
    r"credentials(\.json|\.db|\.toml)?$|\.terraformrc|\.boto$|\.s3cfg$|\.config/gh/hosts\.yml$|"
    r"\.(bash|zsh|sh|ksh|mysql|psql|python|node_repl|sqlite|rediscli)_history$|fish/fish_history$|\.zhistory$|"
    r"containers/auth\.json$|\.m2/settings(-security)?\.xml$|\.gradle/gradle\.properties$|composer/auth\.json$|"
    r"pypoetry/auth\.toml$|\.config/hub$|glab-cli/config\.yml$|credentials\.tfrc\.json$|[^/]*\.tfstate(\.backup)?$|"
    r"\.kube(/|$)|rclone/rclone\.conf$|\.mc/config\.json$|\.oci/config$|doctl/config\.yaml$|\.databrickscfg$|"
    r"\.snowflake/connections\.toml$|\.vercel/auth\.json$|heroku/config\.json$|huggingface/(stored_)?token(s)?$|"
    r"\.kaggle/kaggle\.json$|\.claude/\.credentials\.json$|\.codex/auth\.json$|github-copilot/(hosts|apps)\.json$|"
    r"sops/age/keys\.txt$|Bitwarden CLI/data\.json$|cookies\.sqlite$|service[-_]account[^/]*\.json$|"
    r"client_secret[^/]*\.json$|"
    r"id_rsa$|id_dsa$|id_ecdsa$|id_ed25519$)"
    r"|^/etc/(shadow|gshadow|sudoers|master\.passwd|security/opasswd)|^/etc/ssh/ssh_host_[^/]*key$"
    r"|^/etc/(kubernetes/admin\.conf|rancher/k3s/k3s\.yaml|krb5\.keytab|wireguard/|NetworkManager/system-connections/)"
    r"|^/var/lib/tailscale/|^/tmp/krb5cc_|^/tmp/ssh-[^/]*/agent\."
    r"|^/proc/(self|\d+|\*)/(environ|mem|maps)$"
    r"|^/var/run/secrets|^/run/secrets|(^|/)\.env(\.[\w-]+)?$|\.(pem|key|p12|pfx|kdbx|keystore|jks)$",
    re.IGNORECASE,
)
PERSISTENCE = re.compile(
    r"(^|/)(\.bashrc|\.bash_profile|\.bash_login|\.bash_logout|\.profile|\.zshrc|\.zshenv|\.zprofile|"
    r"\.zlogin|\.cshrc|\.tcshrc|\.kshrc|\.config/fish/config\.fish|\.xinitrc|\.xprofile|\.inputrc)$"
    r"|(^|/)\.ssh/(authorized_keys2?|rc|config)$|(^|/)\.config/autostart(/|$)|(^|/)\.config/systemd(/|$)"
    r"|(^|/)Library/LaunchAgents|^/Library/Launch(Agents|Daemons)|^/etc/(cron|anacrontab|crontab|rc\.local|"
    r"init\.d|systemd|profile|bash\.bashrc|zsh|environment|ld\.so\.preload|sudoers|passwd|shadow|group|"
    r"update-motd\.d|xdg/autostart|udev/rules\.d|pam\.d|security)|^/var/spool/cron|^/lib/systemd|"
    r"^/usr/lib/systemd|(^|/)\.git/hooks/",
)
CRITICAL_FILES = re.compile(r"^/etc/(passwd|shadow|gshadow|sudoers(\.d/.*)?|ld\.so\.preload|pam\.d/.*)$")
#: Where a write changes the system rather than a project or the user's files.
SYSTEM_PREFIXES = ("/etc/", "/boot/", "/usr/", "/bin/", "/sbin/", "/lib", "/proc/", "/sys/", "/var/lib/", "/System/",
                   "/Library/")
#: System files whose removal (or a link put in their place) breaks the machine or hands over root:
#: shells, privilege and login programs, the kernel and boot files, the dynamic loader and libc.
ESSENTIAL_FILES = re.compile(
    r"^/(usr/)?s?bin/((ba|z|da|k|c|tc|fi|a|mk)?sh|sudo|su|doas|login|passwd|init|systemd|mount|env)$"
    r"|^/boot/|^/(usr/)?lib\w*/(.*/)?(ld-linux[^/]*|ld\.so[^/]*|libc\.so[^/]*)$"
)
LOGS = re.compile(
    r"^/var/log(/|$)|(^|/)\.clawcore/audit|(^|/)audit/audit\.jsonl|(^|/)\.(bash|zsh|sh)_history$"
    r"|^/var/(adm|account)/|^/var/run/utmp|^/var/log/wtmp"
)
AUDIT = re.compile(r"(^|/)\.clawcore(/|$)|(^|/)audit/audit\.jsonl")
SECURITY_SERVICES = re.compile(
    r"^(apparmor|auditd?|firewalld|ufw|selinux|iptables|nftables|fail2ban|"
    r"clamav.*|falco|osqueryd|crowdstrike|falcon-sensor|wazuh.*|ossec|"
    r"sysmon.*|aide|rsyslog|syslog(-ng)?|systemd-journald|journald|"
    r"auditbeat|filebeat|td-agent|fluent-bit|defender|mdatp|sshguard)(\.service)?$"
)
METADATA = re.compile(
    r"(^|//|@)(169\.254\.169\.254|\[?fd00:ec2::254\]?|100\.100\.100\.200|"
    r"metadata\.google\.internal|metadata\.azure\.com|169\.254\.170\.2)(?=[:/]|$)",
    re.IGNORECASE,
)
OFFENSIVE = {
    "nmap",
    "masscan",
    "zmap",
    "nikto",
    "sqlmap",
    "hydra",
    "medusa",
    "john",
    "hashcat",
    "gobuster",
    "dirb",
    "dirbuster",
    "wfuzz",
    "ffuf",
    "responder",
    "crackmapexec",
    "netexec",
    "enum4linux",
    "msfconsole",
    "msfvenom",
    "linpeas.sh",
    "linpeas",
    "pspy",
    "bloodhound",
    "impacket-secretsdump",
    "secretsdump.py",
    "kerbrute",
    "evil-winrm",
    "nuclei",
}
TUNNELS = {
    "ngrok",
    "chisel",
    "frpc",
    "bore",
    "lt",
    "localtunnel",
    "cloudflared",
    "gost",
    "iodine",
    "dnscat2",
    "ptunnel",
    "sshuttle",
    "autossh",
}
MINER = re.compile(
    r"xmrig|minerd|cpuminer|cgminer|bfgminer|ethminer|nbminer|t-rex|phoenixminer|"
    r"stratum\+(tcp|ssl)://|(pool|mine)\.[\w.-]*:\d{4}|supportxmr|nanopool|moneroocean|"
    r"nicehash|kdevtmpfsi|kinsing|--donate-level",
    re.IGNORECASE,
)
URL = re.compile(r"(https?|ftp|wss?)://", re.IGNORECASE)
REMOTE_SPEC = re.compile(r"^([\w.-]+@)?[\w.-]+:(?!//)")
SETUID_MODE = re.compile(r"^([ua]*[+=][rwxXt]*s[rwxXt]*|[46][0-7]{3})$")
WEBSHELL = re.compile(
    r"<\?(php|=)?.*\b(system|exec|passthru|shell_exec|popen|proc_open|eval|assert|include|"
    r"require)(_once)?\s*\(.*\$_(GET|POST|REQUEST|COOKIE|SERVER)",
    re.IGNORECASE | re.DOTALL,
)
SHELLSHOCK = re.compile(r"\(\)\s*\{\s*:\s*;\s*\}\s*;")
CODE_REVERSE_SHELL = re.compile(
    r"(socket|TCPSocket|IO::Socket|fsockopen|socket\.tcp|net\.connect|net\.Socket|Net::Socket|"
    r"new Socket|UDPSocket|/dev/tcp/)",
    re.IGNORECASE,
)
CODE_SPAWN = re.compile(
    r"(dup2|subprocess|os\.system|popen|pty\.spawn|exec\s*\(|\bexec[lv]p?e?\s*\(|execve|spawn|system\s*\(|/bin/(ba|z|da)?sh|"
    r"cmd\.exe|child_process|proc_open|shell_exec|passthru|IO\.popen|Kernel\.exec|`|"
    r"\b(?:exec|system)\s+['\"]|\bqx\s*[({\[/|]|os\.execute|io\.popen)",
    re.IGNORECASE,
)
CODE_FETCH = re.compile(
    r"(urlopen|urllib|requests\.(get|post)|http\.client|httpx|file_get_contents\s*\(\s*['\"]https?|"
    r"LWP::|Net::HTTP|open-uri|URI\.open|fetch\s*\(|https?\.get|curl_exec|Invoke-WebRequest|"
    r"get\s*\(\s*['\"]https?://|request\s*\(\s*['\"]https?://|"
    r"DownloadString|wget|curl)",
    re.IGNORECASE,
)
CODE_EVAL = re.compile(
    r"\b(exec|eval|compile|system|popen|passthru|shell_exec|assert|Function)\s*\(|"
    r"\bsystem\b|\beval\b|IEX\b|Invoke-Expression|instance_eval|load\s*\(",
    re.IGNORECASE,
)
CODE_DESTROY = re.compile(
    r"(rmtree|removedirs|rm_rf|rm_r\b|rimraf|rmSync|Remove-Item.*-Recurse|unlink|File\.delete|"
    r"remove_dir_all|os\.remove)",
    re.IGNORECASE,
)
CODE_ROOTISH = re.compile(
    r"expanduser\(\s*['\"]~['\"]\s*\)|Path\.home\(\)|environ\[['\"]HOME['\"]\]|"
    r"getenv\(\s*['\"]HOME['\"]\s*\)|ENV\[['\"]HOME['\"]\]|['\"]/['\"]|['\"]~/?['\"]|"
    r"homedir\(\)|\$ENV\{HOME\}",
    re.IGNORECASE,
)
CODE_FORK = re.compile(
    r"fork\s+while\s+fork|while\s*\(?\s*(1|true|True)\s*\)?\s*:?\s*\{?\s*(os\.)?fork|"
    r"for\s*\(\s*;\s*;\s*\)\s*fork|fork\(\)\s*while|loop\s*\{\s*fork",
    re.IGNORECASE,
)
CODE_STRING = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


# --------------------------------------------------------------------------
# Path classes
# --------------------------------------------------------------------------


def norm_path(path: str) -> str:
    """A path as the rules compare it: ``$HOME``/``/root``/``/home/x`` stay distinct, ``//`` and
    trailing slashes collapse, a leading ``~user`` becomes ``~``."""
    p = path.replace(shell.DYNAMIC, "*").strip()
    if p.startswith("~") and not p.startswith("~/") and p != "~":
        p = "~" + p[p.find("/") :] if "/" in p else "~"
    p = re.sub(r"/{2,}", "/", p)
    p = re.sub(r"(/\.)+(/|$)", "/", p)
    # /proc/self/root (and a process's or thread's) is the root filesystem seen through procfs.
    p = re.sub(r"^(?:/proc/(?:self|thread-self|\d+|\*)(?:/task/(?:\d+|\*))?/root)+(?=/|$)", "", p) or "/"
    if p.startswith(("/", "~/")) and "/.." in p:
        head = "~" if p.startswith("~") else ""
        p = head + posixpath.normpath(p[len(head) :] or "/")
    if len(p) > 1 and p.endswith("/"):
        p = p.rstrip("/") or "/"
    return p


def is_root_target(path: str) -> bool:
    """A system or home root (or everything under it): deleting it destroys the machine or the user.

    A path with a part only known at run time (``"$DIR"/*``) is not judged a root here; the
    recursive operation on it still asks.
    """
    if shell.DYNAMIC in path:
        return False
    p = norm_path(path)
    if p in ("", ".", "..", "*", ".*"):
        return False
    base = re.sub(r"(/\*|\*)$", "", p) or "/"
    if p in ("/*", "/.*", "~/*", "~/.*"):
        return True
    if p.startswith("/") and re.search(r"[*?\[]", p):  # `/u*`, `/e??`, `/[u]sr`: whatever it may match
        parts = p.rstrip("/").split("/")
        if any(len(parts) == root.count("/") + 1 and all(map(fnmatch.fnmatchcase, root.split("/"), parts))
               for root in SYSTEM_ROOTS if root != "/" and root.startswith("/")):
            return True
    if base in SYSTEM_ROOTS:
        return True
    if re.fullmatch(r"/home/[^/]+|/Users/[^/]+|/root", base):
        return True
    if re.fullmatch(r"~/(\.ssh|\.gnupg|\.aws|\.config|\.local|Documents|Desktop|\.kube)", base):
        return True
    if re.fullmatch(r"(\.\./)+\.\.?", p):
        return False
    return False


#: Credential files a glob may be written to reach (``/e??/sh*w``, ``~/.ssh/*``): a glob matching one is read
#: as that file.
CREDENTIAL_EXAMPLES = (
    "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519",
    "~/.aws/credentials", "~/.netrc", "~/.git-credentials", "~/.docker/config.json", "~/.kube/config",
    "~/.config/gh/hosts.yml", "~/.config/gcloud/credentials.db", "/proc/self/environ", "/proc/1/environ",
    "/root/.ssh/id_rsa", "/root/.aws/credentials", "~/.pgpass", "~/.vault-token", "~/.npmrc", "~/.pypirc",
)


def is_credential(path: str) -> bool:
    """A file that holds credentials: keys, cloud and registry logins, password hashes, secrets files."""
    p = norm_path(path)
    if shell.DYNAMIC not in path and p.startswith(("/", "~/")) and re.search(r"[*?\[]", p) and not CREDENTIAL.search(p):
        parts = p.split("/")  # part by part: a wildcard stays within one directory level, as in the shell
        return any(len(parts) == example.count("/") + 1
                   and all(map(fnmatch.fnmatchcase, example.split("/"), parts)) for example in CREDENTIAL_EXAMPLES)
    return bool(CREDENTIAL.search(p)) and not p.endswith((".pub", ".example", ".sample", ".template"))


def is_strong_credential(path: str) -> bool:
    """A credential whose reading is theft rather than configuration: private keys, cloud logins,
    password hashes, process environments. (``.env`` files and loose ``*.pem`` are only sensitive.)"""
    p = norm_path(path)
    if re.search(r"(^|/)\.ssh/[^/]+$", p):
        return is_credential(p)
    return is_credential(p) and not re.search(
        r"(^|/)\.env(\.[\w-]+)?$|\.(pem|key|crt|p12|pfx|jks|keystore)$", p
    )


def is_device(path: str) -> bool:
    return bool(DEVICE.match(norm_path(path)))
