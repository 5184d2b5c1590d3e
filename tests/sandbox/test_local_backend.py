"""The local sandbox backend: the shared contract, on every isolation this machine offers, and its boundary."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from clawcore.config import load_config
from clawcore.runtime import Runtime
from clawcore.sandbox.local import LocalSandbox, detect_isolation
from clawcore.testing.contracts import SandboxBackendContract
from clawcore.types import ProviderUnavailable


def _works(isolation: str) -> bool:
    try:
        return detect_isolation(isolation) == isolation
    except ProviderUnavailable:
        return False


ISOLATIONS = [iso for iso in ("bwrap", "unshare", "none") if _works(iso)]


@pytest.fixture(params=ISOLATIONS)
def isolated(request: pytest.FixtureRequest) -> Iterator[LocalSandbox]:
    backend = LocalSandbox(isolation=request.param, max_output=64 * 1024)
    yield backend
    backend.close()


class TestLocalContract(SandboxBackendContract):
    @pytest.fixture
    def backend(self, isolated: LocalSandbox) -> LocalSandbox:
        return isolated


def test_registered_as_local_and_built_from_config(runtime: Runtime) -> None:
    backend = runtime.sandbox
    assert backend.name == "local"
    assert "isolation" in backend.info()


def test_built_from_config_it_hides_every_runtime_file(runtime: Runtime) -> None:
    hidden = {str(path) for path in runtime.sandbox.hidden}
    home = Path(os.path.realpath(runtime.home))
    for entry in ("clawcore.yaml", "clawcore.yaml.bak", "audit", "sessions", "index", "prism"):
        assert str(home / entry) in hidden, entry
    assert str(home / "workspace") not in hidden


def test_auto_picks_the_strongest_available() -> None:
    assert detect_isolation("auto") == ISOLATIONS[0]


def test_info_names_the_isolation(isolated: LocalSandbox) -> None:
    text = isolated.info()
    assert f"isolation {isolated.isolation}" in text
    if isolated.isolation == "none":
        assert "WITHOUT OS-level isolation" in text


def test_timeout_kills_background_children_too(isolated: LocalSandbox, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    result = isolated.run(f"(sleep 2; touch {marker}) & sleep 30", cwd=tmp_path, timeout_s=0.5)
    assert result.timed_out and result.exit_code == 124
    threading.Event().wait(2.5)
    assert not marker.exists(), "a child of the timed-out command kept running"


def test_runs_in_the_working_directory_with_home_there(isolated: LocalSandbox, tmp_path: Path) -> None:
    result = isolated.run("pwd; echo $HOME; echo data > out.txt", cwd=tmp_path, timeout_s=10)
    lines = result.stdout.split()
    assert lines[0] == os.path.realpath(tmp_path) and lines[1] == str(tmp_path)
    assert (tmp_path / "out.txt").read_text() == "data\n"


def test_env_passthrough_never_passes_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SETTING", "visible")
    monkeypatch.setenv("MY_API_TOKEN", "tok-should-not-pass")
    monkeypatch.setenv("MY_DB_PASS", "hunter2-should-not-pass")
    monkeypatch.setenv("MY_PWD", "pw123-should-not-pass")
    backend = LocalSandbox(isolation="none", pass_env=["MY_*"])
    result = backend.run("env", cwd=tmp_path, timeout_s=10)
    assert "MY_SETTING=visible" in result.stdout
    assert "should-not-pass" not in result.stdout
    assert "CLAWCORE_SANDBOX=local:none" in result.stdout


def test_env_passthrough_checks_values_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_PAT", "ghp_N6VEq8ZtR2mK9pLw3zXc7vB1nY4hJ6dF0sA5")
    monkeypatch.setenv("DATABASE_URL", "postgres://admin:Xk9mQ2vR7pLw3z@db.example:5432/app")
    monkeypatch.setenv("EDITOR", "vim")
    monkeypatch.setenv("APP_SETTINGS", "Server=db;User Id=app;Password=Hx7vq2LmWz")  # innocent names
    monkeypatch.setenv("ERROR_URL", "https://f3a9c2e1b7d64e0c@o123.ingest.sentry.io/42")
    for name in ("DB_CONN", "SENTRY_DSN", "MYSQL_PW", "SIGNING_SEED", "APP_CREDS", "ROOT_PASSWD", "SLACK_WEBHOOK"):
        monkeypatch.setenv(name, "plain-value-should-not-pass")
    result = LocalSandbox(isolation="none", pass_env=["*"]).run("env", cwd=tmp_path, timeout_s=10)
    assert "EDITOR=vim" in result.stdout
    assert "ghp_" not in result.stdout and "Xk9mQ2vR7pLw3z" not in result.stdout
    assert "Hx7vq2LmWz" not in result.stdout and "f3a9c2e1b7d64e0c" not in result.stdout
    assert "should-not-pass" not in result.stdout
    named = LocalSandbox(isolation="none", pass_env=["DATABASE_URL", "EDITOR"])
    with pytest.warns(RuntimeWarning, match="sandbox.passEnv names DATABASE_URL, which is not passed to commands"):
        assert "Xk9mQ2vR7pLw3z" not in named.run("env", cwd=tmp_path, timeout_s=10).stdout


def _listening_socket() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


@pytest.mark.skipif(not any(iso in ISOLATIONS for iso in ("bwrap", "unshare")), reason="no namespaces here")
def test_shell_has_no_network_unless_allowed(tmp_path: Path) -> None:
    isolation = "bwrap" if "bwrap" in ISOLATIONS else "unshare"
    sock, port = _listening_socket()
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    try:
        closed = LocalSandbox(isolation=isolation, network=False).run(probe, cwd=tmp_path, timeout_s=10)
        assert "connected" not in closed.stdout and closed.exit_code != 0
        opened = LocalSandbox(isolation=isolation, network=True).run(probe, cwd=tmp_path, timeout_s=10)
        assert "connected" in opened.stdout, opened
    finally:
        sock.close()


@pytest.mark.skipif("unshare" not in ISOLATIONS or os.geteuid() != 0, reason="needs unshare, run as root")
def test_unshare_as_root_covers_the_runtimes_files_and_credential_stores(tmp_path: Path) -> None:
    from clawcore.sandbox.local import _can_mask

    if not _can_mask():
        pytest.skip("mount or setpriv cannot run in a new namespace here")
    home = tmp_path / "home"
    workspace = home / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "rename.py").write_text(_RENAME)
    (home / "clawcore.yaml").write_text("tools: {policy: {profile: coding}}\n")
    (home / "audit").mkdir()
    (home / "audit" / "audit.jsonl").write_text("{}\n")
    backend = LocalSandbox(isolation="unshare", hidden=[home / "clawcore.yaml", home / "audit", home / "sessions"],
                           home=home)
    result = backend.run(
        "cat ../clawcore.yaml; printf 'tools: {}' > ../clawcore.yaml; ls ../audit 2>&1; "
        "umount ../audit 2>&1; head -c 20 /etc/shadow; echo ok > inside.txt; "
        "mkdir ../sessions; echo '{}' > ../index.new; "  # plant: the home is read-only
        # swap: neither the home nor a folder above it can be renamed (mv would copy; rename is the swap)
        f"python3 rename.py {home} {home.parent}/moved; python3 rename.py {home.parent} {home.parent.parent}/moved-parent",
        cwd=workspace, timeout_s=10)
    assert home.is_dir() and not (home.parent / "moved").exists() and not (home.parent.parent / "moved-parent").exists()
    assert not (home / "sessions").exists() and not (home / "index.new").exists()
    assert "profile" not in result.stdout and "audit.jsonl" not in result.stdout
    assert (home / "clawcore.yaml").read_text() == "tools: {policy: {profile: coding}}\n"  # the write went nowhere
    assert (home / "audit" / "audit.jsonl").read_text() == "{}\n"
    assert "root:" not in result.stdout  # /etc/shadow reads as empty
    assert (workspace / "inside.txt").read_text() == "ok\n"


#: ``rename.py SOURCE TARGET``: a rename and nothing else (``mv`` copies across mount points).
_RENAME = "import os, sys\nos.rename(sys.argv[1], sys.argv[2])\n"

_AS_USER = """
import sys
from pathlib import Path
from clawcore.sandbox.local import LocalSandbox, _can_mask
home = Path(sys.argv[1])
if not _can_mask():
    print("cannot-mask")
    raise SystemExit(0)
backend = LocalSandbox(isolation="unshare", hidden=[home / "clawcore.yaml", home / "audit"], home=home)
result = backend.run("id -u; cat ../clawcore.yaml; ls ../audit 2>&1; umount ../audit 2>&1; cat ~/.ssh/id_ed25519; "
                     f"echo ok > inside.txt; mkdir ../sessions; python3 rename.py {home} {home.parent}/moved",
                     cwd=home / "workspace", timeout_s=10)
print(result.stdout, result.stderr)
"""


@pytest.mark.skipif("unshare" not in ISOLATIONS or os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs unshare, and root to become another user")
def test_unshare_as_another_user_covers_the_same_files(tmp_path: Path) -> None:
    import subprocess
    import sys
    import tempfile

    nobody = 65534
    home = Path(tempfile.mkdtemp(prefix="clawcore-user-", dir="/tmp"))
    try:
        (home / "workspace").mkdir()
        (home / "clawcore.yaml").write_text("gateway: {token: do-not-read}\n")
        (home / "audit").mkdir()
        (home / "audit" / "audit.jsonl").write_text("{}\n")
        (home / "workspace" / ".ssh").mkdir()  # the user's own credential store: HOME is the workspace
        (home / "workspace" / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
        (home / "workspace" / "rename.py").write_text(_RENAME)
        for path in [home, *home.rglob("*")]:
            os.chown(path, nobody, nobody)
        done = subprocess.run(["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups",
                               sys.executable, "-c", _AS_USER, str(home)],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(home / "workspace")},
                              check=False)
        assert done.returncode == 0, done.stderr
        if done.stdout.strip() == "cannot-mask":
            pytest.skip("this unshare cannot keep capabilities in a user namespace (util-linux < 2.38)")
        assert done.stdout.split()[0] == str(nobody)  # the command runs as the user, not as root
        assert "do-not-read" not in done.stdout and "audit.jsonl" not in done.stdout
        assert "PRIVATE KEY" not in done.stdout
        assert (home / "audit" / "audit.jsonl").read_text() == "{}\n"
        assert (home / "workspace" / "inside.txt").read_text() == "ok\n"
        assert not (home / "sessions").exists() and not (home.parent / "moved").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif("bwrap" not in ISOLATIONS, reason="bubblewrap not available")
def test_bubblewrap_boundary(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = home / "workspace"
    workspace.mkdir(parents=True)
    (home / "clawcore.yaml").write_text("gateway: {token: do-not-read}\n")
    (home / "audit").mkdir()
    (home / "audit" / "audit.jsonl").write_text("{}\n")
    (workspace / "index").mkdir()  # hidden inside the writable folder: stays hidden
    (workspace / "index" / "memory.sqlite").write_text("rows")
    outside = tmp_path / "outside"
    outside.mkdir()
    backend = LocalSandbox(isolation="bwrap", writable=[workspace],
                           hidden=[home / "clawcore.yaml", home / "audit", workspace / "index"])
    result = backend.run(
        f"echo ok > inside.txt; touch {outside}/x 2>&1; cat {home}/clawcore.yaml; ls {home}/audit; "
        "ls index; echo gone > index/memory.sqlite; head -c 20 /etc/shadow; "
        "touch /usr/escape 2>&1; echo ps=$(ls /proc | grep -c '^[0-9]')",
        cwd=workspace, timeout_s=10)
    assert (workspace / "inside.txt").read_text() == "ok\n"
    assert "memory.sqlite" not in result.stdout and (workspace / "index" / "memory.sqlite").read_text() == "rows"
    assert "root:" not in result.stdout
    assert not (outside / "x").exists() and not Path("/usr/escape").exists()
    assert "do-not-read" not in result.stdout
    assert "audit.jsonl" not in result.stdout
    assert "Read-only file system" in result.stdout
    processes = int(result.stdout.rsplit("ps=", 1)[1].split()[0])
    host = sum(1 for name in os.listdir("/proc") if name.isdigit())
    assert processes <= 6 < host, "other processes must be invisible"


def test_from_config_reads_limits(tmp_path: Path, plugin_manager) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "workspace").mkdir()
    config = load_config(tmp_path, data={"sandbox": {"timeout": "2s", "maxOutput": "1k", "isolation": "none",
                                                      "network": {"shell": "allow"}}}, pm=plugin_manager)
    backend = LocalSandbox.from_config(config)
    assert backend.timeout_s == 2 and backend.max_output == 1024 and backend.network
    assert backend.isolation == "none"
    result = backend.run("head -c 3000 /dev/zero | tr '\\0' y", cwd=tmp_path)
    assert result.truncated and len(result.stdout) == 1024


def test_bad_config_values_are_one_line_errors(tmp_path: Path, plugin_manager) -> None:  # type: ignore[no-untyped-def]
    from clawcore.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, data={"sandbox": {"timeout": "soon", "maxOutput": "12x",
                                                "network": {"shell": "maybe"}}}, pm=plugin_manager)
    text = str(info.value)
    assert "sandbox.timeout" in text and "sandbox.maxOutput" in text and "sandbox.network.shell" in text


@pytest.mark.parametrize(("key", "value"), [("timeout", "0s"), ("timeout", 0), ("timeout", "10ms"),
                                            ("maxOutput", 0), ("maxOutput", "100")])
def test_limits_that_would_stop_every_command_are_refused(tmp_path: Path, plugin_manager, key: str,  # type: ignore[no-untyped-def]
                                                          value: object) -> None:
    from clawcore.errors import ConfigError

    with pytest.raises(ConfigError, match=f"sandbox.{key}"):
        load_config(tmp_path, data={"sandbox": {key: value}}, pm=plugin_manager)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_programs_that_set_the_sandbox_up_are_never_taken_from_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str) -> None:
    planted = tmp_path / "bin"
    planted.mkdir()
    marker = tmp_path / "planted-ran"
    for name in ("bash", "unshare", "bwrap", "mount", "setpriv"):  # what a command could leave in ~/.local/bin
        (planted / name).write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (planted / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}:{os.environ['PATH']}")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    result = LocalSandbox(isolation=isolation).run("echo fine", cwd=workspace, timeout_s=10)
    assert result.stdout == "fine\n" and not marker.exists()


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_that_kills_itself_dies_with_the_signals_status(tmp_path: Path, isolation: str) -> None:
    backend = LocalSandbox(isolation=isolation)
    killed = backend.run("kill -9 $$; echo survived", cwd=tmp_path, timeout_s=10)
    assert "survived" not in killed.stdout and killed.exit_code == 137 and not killed.timed_out
    assert killed.stderr == ""  # nothing of the sandbox's own shells shows
    assert backend.run("kill -SEGV $$; echo survived", cwd=tmp_path, timeout_s=10).exit_code == 139
    fed = backend.run("cat; exit 3", cwd=tmp_path, timeout_s=10, stdin="fed\n")
    assert fed.stdout == "fed\n" and fed.exit_code == 3


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_that_closes_its_output_runs_to_its_end_or_its_timeout(tmp_path: Path, isolation: str) -> None:
    backend = LocalSandbox(isolation=isolation)
    done = backend.run("exec >out.log 2>&1; sleep 6; echo done; exit 4", cwd=tmp_path, timeout_s=20)
    assert done.exit_code == 4 and not done.timed_out and (tmp_path / "out.log").read_text() == "done\n"
    late = backend.run("exec >/dev/null 2>&1; sleep 30", cwd=tmp_path, timeout_s=1)
    assert late.timed_out and late.exit_code == 124 and late.duration_s < 10


_KILLED_RUNTIME = """
import sys
from pathlib import Path
import clawcore.sandbox.local as local
local._SYSTEM_PATH = sys.argv[3]  # where this test process found its sandbox programs
cwd = Path(sys.argv[2])
local.LocalSandbox(isolation=sys.argv[1]).run("touch started; sleep 3; touch survived", cwd=cwd, timeout_s=60)
"""


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_command_dies_with_a_runtime_killed_by_sigkill(tmp_path: Path, isolation: str) -> None:
    import signal
    import subprocess
    import sys
    import time

    from clawcore.sandbox import local

    runtime = subprocess.Popen([sys.executable, "-c", _KILLED_RUNTIME, isolation, str(tmp_path), local._SYSTEM_PATH])
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and runtime.poll() is None, "the command never started"
            time.sleep(0.05)
        runtime.send_signal(signal.SIGKILL)
        runtime.wait(10)
        time.sleep(4.5)
        assert not (tmp_path / "survived").exists(), "the command outlived the runtime"
    finally:
        runtime.kill()
        runtime.wait()


MASKING = [iso for iso in ISOLATIONS if iso == "bwrap" or (iso == "unshare" and os.geteuid() == 0)]


def _unix_server(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    return server


#: ``connect.py SOCKET...``: says for each whether a connection reached it.
_CONNECT = """import socket, sys
for path in sys.argv[1:]:
    try:
        socket.socket(socket.AF_UNIX).connect(path)
        print("reached", path)
    except OSError as exc:
        print("refused", path, exc)
"""


@pytest.mark.parametrize("isolation", MASKING)
def test_engine_sockets_are_out_of_reach(tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile
    import uuid

    # The folder scripts/podman-service keeps its socket in, and the user's runtime folder.
    engine = Path(tempfile.gettempdir()) / f"clawcore-podman-test-{uuid.uuid4().hex[:8]}"
    runtime = tmp_path / "xdg"
    engine.mkdir()
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    servers = [_unix_server(engine / "podman.sock"), _unix_server(runtime / "docker.sock")]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "connect.py").write_text(_CONNECT)
    try:
        result = LocalSandbox(isolation=isolation, writable=[workspace]).run(
            f"python3 connect.py {engine}/podman.sock {runtime}/docker.sock", cwd=workspace, timeout_s=20)
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(engine)
    assert result.stdout.count("refused") == 2 and "reached" not in result.stdout, result


def _audit_outside_home(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    shared = tmp_path / "shared"  # a writable allowed path that holds the audit log's folder
    (shared / "alog" / "keys").mkdir(parents=True)
    (shared / "alog" / "keys" / "signing.key").write_text("SIGNING-KEY\n")
    (shared / "alog" / "audit.jsonl").write_text("{}\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return shared, workspace, [shared / "alog" / "audit.jsonl", shared / "alog" / "keys"]


@pytest.mark.parametrize("isolation", MASKING)
def test_the_audit_folder_cannot_be_moved_away_to_read_it(tmp_path: Path, isolation: str) -> None:
    shared, workspace, hidden = _audit_outside_home(tmp_path)
    backend = LocalSandbox(isolation=isolation, writable=[shared, workspace], hidden=hidden)
    result = backend.run(f"mv {shared}/alog {shared}/moved; mv {shared}/alog/keys {shared}/k; "
                         f"cat {shared}/moved/keys/* {shared}/k/* {shared}/alog/keys/*", cwd=workspace, timeout_s=20)
    assert "SIGNING-KEY" not in result.stdout
    assert (shared / "alog" / "keys" / "signing.key").read_text() == "SIGNING-KEY\n"


_PLANT = ("python3 rename.py {home} {home}.moved; mkdir -p {home}; echo 'tools: {{}}' > {home}/clawcore.yaml; "
          "rm -rf {home}/sessions; ln -s {elsewhere} {home}/sessions; mkdir {home}/index; echo x > {home}/.env")


def _writable_home(tmp_path: Path) -> tuple[Path, Path, dict[Path, bool]]:
    home = tmp_path / "home"
    workspace = home / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "rename.py").write_text(_RENAME)
    (home / "audit").mkdir()
    entries = {home / name: name in ("audit", "sessions", "index") for name in
               ("clawcore.yaml", "audit", "sessions", "index", ".env")}
    return home, workspace, entries


def _assert_home_intact(home: Path, elsewhere: Path) -> None:
    assert not Path(f"{home}.moved").exists(), "the home was moved away"
    for name in ("clawcore.yaml", ".env"):  # an empty placeholder, or missing where no command can write
        assert not (home / name).exists() or (home / name).read_text() == "", name
    assert not (home / "sessions").is_symlink() and not any(elsewhere.iterdir())
    assert (home / "audit").is_dir()


@pytest.mark.parametrize("isolation", MASKING)
@pytest.mark.parametrize("layout", ["home-allowed", "workspace-is-home", "parent-allowed"])
def test_no_command_moves_the_home_away_or_plants_runtime_files(tmp_path: Path, isolation: str, layout: str) -> None:
    home, workspace, entries = _writable_home(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd, writable = {"home-allowed": (workspace, [workspace, home]), "workspace-is-home": (home, [home]),
                     "parent-allowed": (workspace, [workspace, tmp_path])}[layout]
    if layout == "workspace-is-home":
        (home / "rename.py").write_text(_RENAME)
    hidden = [p for p in entries if p != cwd]
    backend = LocalSandbox(isolation=isolation, writable=writable, hidden=hidden, home=home, placeholders=entries)
    result = backend.run(_PLANT.format(home=home, elsewhere=elsewhere), cwd=cwd, timeout_s=20)
    _assert_home_intact(home, elsewhere)
    assert "workspace" in os.listdir(home), result


def test_built_from_config_it_creates_the_missing_runtime_entries_it_covers(tmp_path: Path, plugin_manager) -> None:  # type: ignore[no-untyped-def]
    config = load_config(tmp_path, data={"workspace": ".", "sandbox": {"isolation": "none"}}, pm=plugin_manager)
    backend = LocalSandbox.from_config(config)
    home = Path(os.path.realpath(tmp_path))
    assert backend.placeholders[home / "sessions"] is True and backend.placeholders[home / "clawcore.yaml"] is False
    assert backend.placeholders[home / "audit" / "audit.jsonl"] is False


@pytest.mark.skipif("unshare" not in ISOLATIONS or os.geteuid() != 0, reason="needs unshare, run as root")
def test_unshare_as_root_leaves_the_kernels_settings_read_only(tmp_path: Path) -> None:
    from clawcore.sandbox.local import _can_mask

    if not _can_mask():
        pytest.skip("mount or setpriv cannot run in a new namespace here")
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    result = LocalSandbox(isolation="unshare").run(
        "echo '|/bin/true' > /proc/sys/kernel/core_pattern; echo 1 > /proc/sys/kernel/printk_ratelimit; "
        "grep -E ' /(sys|proc/sys) ' /proc/self/mounts", cwd=tmp_path, timeout_s=10)
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    mounts = {line.split()[1]: line.split()[3].split(",") for line in result.stdout.splitlines()}
    assert "ro" in mounts["/proc/sys"] and "ro" in mounts["/sys"], result
    assert result.stderr.count("Read-only file system") == 2, result
