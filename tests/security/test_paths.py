"""The filesystem policy: decisions on real paths, whatever the spelling, and symlink-safe opening."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from clawcore.config import load_config
from clawcore.errors import PathDenied
from clawcore.security.paths import PathPolicy, path_variants
from clawcore.types import Action


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    home = tmp_path / "home"
    workspace = home / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "notes.md").write_text("hello\n")
    (home / "clawcore.yaml").write_text("{}\n")
    (home / "audit").mkdir()
    user_home = tmp_path / "user"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_rsa").write_text("KEY")
    return PathPolicy(workspace=workspace, home=home, environ={"HOME": str(user_home)})


def allowed(policy: PathPolicy, path: str, op: str = "read") -> bool:
    return policy.check(path, op).action is Action.ALLOW  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["notes.md", "./notes.md", "memory/2026-05-07.md", "memory/../notes.md",
                                  "new/folder/file.txt", "data file (1).csv", "résumé.txt", "100%.txt"])
def test_workspace_paths_are_allowed(policy: PathPolicy, path: str) -> None:
    assert allowed(policy, path) and allowed(policy, path, "write")


def test_absolute_workspace_and_temp_paths_are_allowed(policy: PathPolicy, tmp_path: Path) -> None:
    assert allowed(policy, str(policy.workspace / "notes.md"))
    import tempfile

    assert allowed(policy, os.path.join(tempfile.gettempdir(), "scratch.txt"), "write")


@pytest.mark.parametrize("path", [
    "/etc/passwd", "/etc/./shadow", "//etc/hosts", "/etc/../etc/crontab",
    "../../../../etc/passwd", "memory/../../../etc/passwd",
    "%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%252e%252e%252f%252e%252e%252fetc%252fpasswd",
    "%%32%65%%32%65%%32%66etc", "..%c0%af..%c0%afetc%c0%afpasswd", "..%u2216..%u2216etc",
    "．．／．．／etc/passwd", "..\\..\\..\\etc\\passwd", ".\\\\./.\\\\./.\\\\./etc/passwd",
    "notes.md\x00.png", "notes.md%00.png", "C:\\Windows\\win.ini", "\\\\server\\share\\x",
    "/proc/self/root/etc/passwd", "/proc/self/environ", "/dev/sda", "~/.ssh/id_rsa", "$HOME/.ssh/id_rsa",
    "${HOME}/.ssh/id_rsa", "~nosuchuser/x", ".env", "config/.env.production", "../workspace/.env",
    "keys/id_ed25519", "line\nbreak",
])
def test_attacks_are_denied(policy: PathPolicy, path: str) -> None:
    decision = policy.check(path, "read")
    assert decision.action is Action.DENY, (path, decision)
    assert decision.reasons and decision.rules


def test_runtime_files_are_protected_even_inside_allowed_roots(policy: PathPolicy) -> None:
    home = policy.home
    assert not allowed(policy, str(home / "clawcore.yaml"))
    assert not allowed(policy, str(home / "audit" / "audit.jsonl"), "write")
    assert not allowed(policy, "../clawcore.yaml")
    assert policy.check(str(home / "clawcore.yaml"), "read").rules == ("path-protected",)


@pytest.mark.parametrize("entry", ["prism/state.db", "clawcore.yaml.bak", "models/x.onnx", "credentials/t.json",
                                   ".env", "backups/old.yaml"])
def test_every_entry_of_the_home_but_the_workspace_is_the_runtimes(policy: PathPolicy, entry: str) -> None:
    (policy.home / "backups").mkdir()  # an entry the runtime does not know by name
    fresh = PathPolicy(workspace=policy.workspace, home=policy.home, allowed=["{home}"])
    for op in ("read", "write"):
        assert fresh.check(str(policy.home / entry), op).rules == ("path-protected",), (entry, op)
    assert allowed(fresh, str(policy.workspace / "notes.md"), "write")


def test_a_home_that_is_the_workspace_protects_only_the_runtimes_own_names(tmp_path: Path) -> None:
    """`workspace: .`: the home is a project, its files the agent's to work on."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('hi')\n")
    (project / "README.md").write_text("# proj\n")
    (project / "clawcore.yaml").write_text("workspace: .\n")
    policy = PathPolicy(workspace=project, home=project)
    for path in ("src/main.py", "README.md", "MEMORY.md", "memory/2026-01-01.md"):
        assert allowed(policy, path) and allowed(policy, path, "write"), path
    for path in ("clawcore.yaml", "audit/audit.jsonl", "prism/state.db"):
        assert policy.check(path, "read").rules == ("path-protected",), path


def test_an_audit_log_and_keys_configured_outside_the_home_are_protected(tmp_path: Path,
                                                                          plugin_manager: object) -> None:
    (tmp_path / "home" / "workspace").mkdir(parents=True)
    logs, keys = tmp_path / "srv" / "logs", tmp_path / "srv" / "keys"
    config = load_config(tmp_path / "home", pm=plugin_manager, data={  # type: ignore[arg-type]
        "audit": {"path": str(logs / "audit.jsonl"), "keys": str(keys)},
        "sandbox": {"allowedPaths": ["{workspace}", str(tmp_path / "srv")]}})
    policy = PathPolicy.from_config(config)
    for path in (logs / "audit.jsonl", logs / "audit.checkpoints.jsonl", keys / "signing.pem"):
        assert policy.check(str(path), "write").rules == ("path-protected",), path
        assert policy.check(str(path), "read").rules == ("path-protected",), path
    assert allowed(policy, str(tmp_path / "srv" / "other.txt"), "write")


@pytest.mark.parametrize("path", ["service-account.json", "gcp/client_secret_42.json", ".cargo/credentials.toml",
                                  "infra/prod.tfstate", "/tmp/krb5cc_1000", "/tmp/ssh-XXXX/agent.123"])
def test_more_credential_files_are_denied(policy: PathPolicy, path: str) -> None:
    assert policy.check(path, "read").rules == ("path-denied",), path


@pytest.mark.parametrize("path", ["server.KEY", "x.Key", "ID_RSA", "sub/.ENV", "sub/.Env.local", "certs/Store.P12"])
def test_denied_entries_ignore_case(policy: PathPolicy, path: str) -> None:
    for op in ("read", "write"):
        assert policy.check(path, op).action.value == "deny", (path, op)


def test_read_only_paths_allow_read_but_not_write(policy: PathPolicy) -> None:
    assert allowed(policy, ".git/hooks/pre-commit", "read")
    assert not allowed(policy, ".git/hooks/pre-commit", "write")
    assert not allowed(policy, ".git/HOOKS/pre-commit", "write")  # the same folder on a case-insensitive disk
    assert not allowed(policy, "./.git/config", "write")


def test_symlink_out_of_the_workspace_is_judged_on_its_target(policy: PathPolicy, tmp_path: Path) -> None:
    policy = PathPolicy(workspace=policy.workspace, home=policy.home, allowed=["{workspace}"],
                        environ=policy.environ)  # tmp_path itself lies in the allowed temp dir
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    (policy.workspace / "link").symlink_to(outside)
    (policy.workspace / "ssh").symlink_to(tmp_path / "user" / ".ssh")
    assert not allowed(policy, "link/secret.txt")
    assert not allowed(policy, "ssh/id_rsa")


def test_denied_wins_over_allowed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "private").mkdir(parents=True)
    policy = PathPolicy(workspace=workspace, home=tmp_path, allowed=["{workspace}"],
                        denied=["{workspace}/private/"])
    assert allowed(policy, "public.txt")
    assert not allowed(policy, "private/x.txt")


def test_from_config_reads_the_sandbox_section(tmp_path: Path, plugin_manager: object) -> None:
    (tmp_path / "home" / "workspace").mkdir(parents=True)
    extra = tmp_path / "shared"
    extra.mkdir()
    config = load_config(tmp_path / "home", data={"sandbox": {"allowedPaths": ["{workspace}", str(extra)],
                                                      "deniedPaths": ["**/*.sqlite"]}}, pm=plugin_manager)  # type: ignore[arg-type]
    policy = PathPolicy.from_config(config)
    assert allowed(policy, str(extra / "a.txt"))
    assert not allowed(policy, "db/index.sqlite")
    assert allowed(policy, ".env"), "the user's deniedPaths replace the defaults"


def test_variants_include_every_decoding() -> None:
    variants = path_variants("%252e%252e%252fetc", {})
    assert "../etc" in variants
    assert "~/x" in path_variants("~/x", {}) and "/home/u/x" in path_variants("$HOME/x", {"HOME": "/home/u"})


def test_resolve_raises_with_reason(policy: PathPolicy) -> None:
    with pytest.raises(PathDenied, match="outside the allowed paths|climbs out"):
        policy.resolve("../../x", "read")
    assert policy.resolve("notes.md") == policy.workspace / "notes.md"


# -- opening -------------------------------------------------------------------


def test_open_reads_and_writes_inside(policy: PathPolicy) -> None:
    with policy.open("notes.md") as handle:
        assert handle.read() == "hello\n"
    with policy.open("deep/new/file.txt", "write", "w", create_parents=True) as handle:
        handle.write("ok")
    assert (policy.workspace / "deep" / "new" / "file.txt").read_text() == "ok"


def test_open_refuses_writing_mode_for_read_op(policy: PathPolicy) -> None:
    with pytest.raises(PathDenied, match="op='write'"):
        policy.open("notes.md", "read", "w")


def test_open_refuses_a_symlink_swapped_in_after_the_check(policy: PathPolicy, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "user" / ".ssh" / "id_rsa"
    victim = policy.workspace / "report.txt"
    victim.write_text("benign")
    real_resolve = PathPolicy.resolve

    def resolve_then_swap(self: PathPolicy, path: str, op: str = "read") -> Path:
        checked = real_resolve(self, path, op)  # type: ignore[arg-type]
        victim.unlink()
        victim.symlink_to(target)  # the race: a symlink replaces the file after the check
        return checked

    monkeypatch.setattr(PathPolicy, "resolve", resolve_then_swap)
    with pytest.raises(PathDenied, match="symlink"):
        policy.open("report.txt")


def test_open_refuses_a_directory_swapped_for_a_symlink(policy: PathPolicy, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = policy.workspace / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    real_resolve = PathPolicy.resolve

    def resolve_then_swap(self: PathPolicy, path: str, op: str = "read") -> Path:
        checked = real_resolve(self, path, op)  # type: ignore[arg-type]
        (folder / "a.txt").unlink()
        folder.rmdir()
        folder.symlink_to(tmp_path / "user" / ".ssh")
        return checked

    monkeypatch.setattr(PathPolicy, "resolve", resolve_then_swap)
    with pytest.raises(PathDenied, match="symlink"):
        policy.open("docs/a.txt")


def test_open_refuses_fifo_without_blocking(policy: PathPolicy) -> None:
    os.mkfifo(policy.workspace / "pipe")
    result: list[BaseException] = []

    def attempt() -> None:
        try:
            policy.open("pipe")
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            result.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "opening a FIFO must not block"
    assert isinstance(result[0], PathDenied)


def test_check_is_fast(policy: PathPolicy) -> None:
    import time

    started = time.perf_counter()
    for i in range(500):
        policy.check(f"memory/notes-{i}.md", "write")
        policy.check("%2e%2e%2f" * 4 + "etc/passwd", "read")
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(("path", "expected"), [
    (".env.example", True), ("config/.env.sample", True), (".env.local", False), (".gitignore", True),
    (".github/workflows/ci.yml", True), ("memory/..;/..;/etc/passwd", False), ("....//....//etc/passwd", False),
    ("file:///etc/passwd", False), (".kube/config", False), ("~root/.ssh/id_rsa", False),
])
def test_templates_exceptions_and_filter_evasions(policy: PathPolicy, path: str, expected: bool) -> None:
    assert allowed(policy, path) is expected, policy.check(path, "read")


def test_replace_is_atomic_keeps_mode_and_refuses_symlinks(policy: PathPolicy, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    target = policy.workspace / "script.sh"
    target.write_text("old")
    target.chmod(0o750)
    policy.replace("script.sh", b"new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o750
    assert [p.name for p in policy.workspace.iterdir() if p.name.endswith(".tmp")] == []
    policy.replace("fresh/dir/file.txt", b"x", create_parents=True)
    assert (policy.workspace / "fresh" / "dir" / "file.txt").read_bytes() == b"x"
    real_resolve = PathPolicy.resolve
    victim = policy.workspace / "victim.txt"
    victim.write_text("keep")

    def resolve_then_swap(self: PathPolicy, path: str, op: str = "read") -> Path:
        checked = real_resolve(self, path, op)  # type: ignore[arg-type]
        victim.unlink()
        victim.symlink_to(tmp_path / "user" / ".ssh" / "id_rsa")
        return checked

    monkeypatch.setattr(PathPolicy, "resolve", resolve_then_swap)
    with pytest.raises(PathDenied, match="symlink"):
        policy.replace("victim.txt", b"overwrite")
    assert (tmp_path / "user" / ".ssh" / "id_rsa").read_text() == "KEY"
