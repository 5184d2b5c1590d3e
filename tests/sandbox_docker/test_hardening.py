"""What the container may not do, proven on a real engine."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker


def host_addresses() -> list[str]:
    """Loopback plus this host's outward address, where it has one."""
    addresses = ["127.0.0.1"]
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent for UDP connect
        address = probe.getsockname()[0]
        if address and not address.startswith("127."):
            addresses.append(address)
    except OSError:
        pass
    finally:
        probe.close()
    return addresses


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A TCP server on every host address that answers 'reached'."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.sendall(b"reached\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


def test_container_is_configured_hardened(make_docker: Callable[..., Any], engine: Any, tmp_path: Path) -> None:
    backend = make_docker(pidsLimit=100, memoryLimit="96m", cpuLimit=0.25)
    assert backend.run("true", cwd=tmp_path, timeout_s=10).exit_code == 0
    host = engine.containers.get(backend.container_id).attrs["HostConfig"]
    dropped = {cap.upper().removeprefix("CAP_") for cap in host["CapDrop"]}
    # Docker keeps "ALL"; Podman lists every default capability it dropped.
    assert "ALL" in dropped or {"CHOWN", "DAC_OVERRIDE", "SETUID", "SETGID", "NET_RAW", "KILL"} <= dropped
    assert not host.get("CapAdd")
    assert any(opt.startswith("no-new-privileges") for opt in host["SecurityOpt"])
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    assert host["PidsLimit"] == 100
    assert host["Memory"] == 96 * 1024**2
    assert host["NanoCpus"] == 250_000_000
    assert "/tmp" in host["Tmpfs"]


def test_runs_unprivileged_without_capabilities(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    result = make_docker().run("id -u; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status", cwd=tmp_path, timeout_s=10)
    lines = result.stdout.split("\n")
    assert lines[0] != "0"
    status = dict(line.split(":\t") for line in lines[1:] if line)
    assert int(status["CapEff"], 16) == 0
    assert int(status["CapPrm"], 16) == 0
    assert status["NoNewPrivs"].strip() == "1"


def test_no_network_inside(make_docker: Callable[..., Any], tmp_path: Path, listening_port: int) -> None:
    addresses = host_addresses()
    for address in addresses:  # the control: the server answers from the host
        with socket.create_connection((address, listening_port), timeout=5) as conn:
            assert conn.recv(16) == b"reached\n"
    backend = make_docker()
    interfaces = backend.run("ls /sys/class/net", cwd=tmp_path, timeout_s=10)
    assert interfaces.stdout.split() == ["lo"]
    for address in addresses:
        result = backend.run(f"nc -w 2 {address} {listening_port} </dev/null", cwd=tmp_path, timeout_s=10)
        assert "reached" not in result.stdout
        assert result.exit_code != 0


def test_root_filesystem_is_read_only(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker()
    denied = backend.run("echo x > /etc/planted; echo x > /bin/planted", cwd=tmp_path, timeout_s=10)
    assert denied.exit_code != 0
    assert "Read-only file system" in denied.stderr
    allowed = backend.run("echo scratch > /tmp/ok && cat /tmp/ok", cwd=tmp_path, timeout_s=10)
    assert allowed.stdout == "scratch\n"


def test_memory_limit_kills_a_hog(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker(memoryLimit="64m")
    small = backend.run("dd if=/dev/zero of=/dev/null bs=16M count=1", cwd=tmp_path, timeout_s=20)
    assert small.exit_code == 0, small
    hog = backend.run("dd if=/dev/zero of=/dev/null bs=256M count=1", cwd=tmp_path, timeout_s=20)
    assert hog.exit_code == 137, hog
    assert not hog.timed_out
    assert backend.run("echo after", cwd=tmp_path, timeout_s=10).stdout == "after\n"


def test_timeout_kills_a_sleeper_and_its_children(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker()
    started = time.monotonic()
    result = backend.run("sleep 60 & sleep 60; echo never", cwd=tmp_path, timeout_s=1)
    assert result.timed_out
    assert result.exit_code != 0
    assert "never" not in result.stdout
    assert time.monotonic() - started < 10
    time.sleep(0.3)
    left = backend.run("ps -o stat,args", cwd=tmp_path, timeout_s=10).stdout
    assert "sleep 60" not in left  # killed, and reaped by the container's init
    assert not [line for line in left.splitlines() if line.startswith("Z")]


def test_configured_timeout_caps_the_callers(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker(timeout="1s")
    started = time.monotonic()
    result = backend.run("sleep 30", cwd=tmp_path, timeout_s=60)
    assert result.timed_out
    assert time.monotonic() - started < 10


def test_workspace_not_mounted_by_default(make_docker: Callable[..., Any], workspace: Path) -> None:
    (workspace / "secret.txt").write_text("host data\n", encoding="utf-8")
    result = make_docker().run("cat /workspace/secret.txt; ls /workspace", cwd=workspace, timeout_s=10)
    assert "host data" not in result.stdout
    assert result.exit_code != 0 or result.stdout.strip() == ""


def test_workspace_read_only(make_docker: Callable[..., Any], workspace: Path) -> None:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.md").write_text("host data\n", encoding="utf-8")
    backend = make_docker(workspaceAccess="ro")
    read = backend.run("pwd; cat a.md", cwd=workspace / "notes", timeout_s=10)
    assert read.stdout == "/workspace/notes\nhost data\n"
    write = backend.run("echo changed > /workspace/notes/a.md", cwd=workspace, timeout_s=10)
    assert write.exit_code != 0
    assert (workspace / "notes" / "a.md").read_text(encoding="utf-8") == "host data\n"


def test_workspace_read_write(make_docker: Callable[..., Any], workspace: Path) -> None:
    if os.geteuid() == 0:
        os.chown(workspace, 65534, 65534)  # `user: auto` then runs as the owner
    (workspace / "a.md").write_text("host data\n", encoding="utf-8")
    backend = make_docker(workspaceAccess="rw")
    result = backend.run("cat a.md; echo from-sandbox > b.md", cwd=workspace, timeout_s=10)
    assert result.stdout == "host data\n", result
    assert (workspace / "b.md").read_text(encoding="utf-8") == "from-sandbox\n"


def test_pids_limit_stops_a_fork_bomb(make_docker: Callable[..., Any], engine: Any, tmp_path: Path) -> None:
    backend = make_docker(pidsLimit=32)
    # Count how many processes the limit lets start: each sleeper is one pid.
    spawn = backend.run(
        "i=0; while [ $i -lt 500 ]; do sleep 30 >/dev/null 2>&1 </dev/null & i=$((i+1)); echo $i > /tmp/started; done",
        cwd=tmp_path, timeout_s=15,
    )
    assert not spawn.timed_out
    assert "can't fork" in spawn.stderr
    started = int(backend.run("cat /tmp/started", cwd=tmp_path, timeout_s=10).stdout)
    assert 5 < started < 32

    before = time.monotonic()
    bomb = backend.run("bomb() { bomb | bomb & }; bomb; sleep 2", cwd=tmp_path, timeout_s=5)
    assert time.monotonic() - before < 30
    # The limit makes the forks fail; the bomb dies out or is killed at the timeout.
    assert bomb.timed_out or "can't fork" in bomb.stderr
    after = backend.run("echo alive; ls /proc | grep -c '^[0-9]'", cwd=tmp_path, timeout_s=10)
    assert after.stdout.startswith("alive\n")
    assert int(after.stdout.split()[1]) <= 6  # init, its sleep, this command: nothing of the bomb
    ours = engine.containers.list(all=True, filters={"label": "clawcore.sandbox.session=test-session"})
    assert [c.id for c in ours] == [backend.container_id]


def test_background_processes_end_with_their_command(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker()
    first = backend.run("sleep 300 & echo started", cwd=tmp_path, timeout_s=10)
    assert first.stdout == "started\n"
    assert first.duration_s < 5
    left = backend.run("ps -o args", cwd=tmp_path, timeout_s=10).stdout
    assert "sleep 300" not in left
    # A command that kills the shell wrapping it (whose clean-up then never runs) leaves nothing either.
    killer = backend.run("(sleep 301 &) ; kill -9 $PPID", cwd=tmp_path, timeout_s=10)
    assert killer.exit_code == 137
    assert "sleep 301" not in backend.run("ps -o args", cwd=tmp_path, timeout_s=10).stdout


def test_output_is_capped_and_a_flood_stopped(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    backend = make_docker(maxOutput="16k")
    capped = backend.run("head -c 40000 /dev/zero | tr '\\0' o; echo done >&2", cwd=tmp_path, timeout_s=20)
    assert capped.truncated and len(capped.stdout) == 16 * 1024
    assert capped.stderr == "done\n" and capped.exit_code == 0
    started = time.monotonic()
    flood = backend.run("yes", cwd=tmp_path, timeout_s=20)
    assert time.monotonic() - started < 10  # stopped long before its timeout
    assert flood.truncated and not flood.timed_out
    assert flood.exit_code != 0
    assert "[killed: output passed" in flood.stderr


def test_the_runtimes_files_and_credentials_in_the_workspace_stay_covered(
        docker_config: Callable[..., Any], workspace: Path, events: Any) -> None:
    """A home kept in the project, and a workspace that is a home of its own: the mount must not show them."""
    from clawcore.types import HookContext
    from clawcore_sandbox_docker import make_backend

    home = workspace / ".clawcore"
    (home / "audit" / "keys").mkdir(parents=True)
    (home / "clawcore.yaml").write_text("sandbox: {backend: docker}\n", encoding="utf-8")
    (home / "audit" / "keys" / "signing.pem").write_text("PRIVATE\n", encoding="utf-8")
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh" / "id_rsa").write_text("KEY\n", encoding="utf-8")
    (workspace / ".netrc").write_text("machine x password p\n", encoding="utf-8")
    (workspace / "notes.md").write_text("host data\n", encoding="utf-8")
    if os.geteuid() == 0:
        for path in [workspace, *workspace.rglob("*")]:
            os.chown(path, 65534, 65534)  # readable by the user the container runs as, were it not covered
    context = HookContext(session_id="covered", home=home, workspace=workspace, config={}, record=events)
    backend = make_backend(docker_config(workspaceAccess="rw"), context)
    try:
        result = backend.run("cat notes.md; cat .clawcore/clawcore.yaml .clawcore/audit/keys/signing.pem "
                             ".ssh/id_rsa .netrc 2>/dev/null; echo x > .netrc; ls .ssh 2>&1 | head -1",
                             cwd=workspace, timeout_s=20)
    finally:
        backend.close()
    assert result.stdout.startswith("host data\n"), result
    for secret in ("backend", "PRIVATE", "KEY", "password"):
        assert secret not in result.stdout, result
    assert (home / "clawcore.yaml").read_text(encoding="utf-8") == "sandbox: {backend: docker}\n"
    assert (workspace / ".netrc").read_text(encoding="utf-8") == "machine x password p\n"


def test_a_home_kept_in_the_project_cannot_be_read_by_moving_or_planted(
        docker_config: Callable[..., Any], workspace: Path, tmp_path: Path, events: Any) -> None:
    """`workspace: .` with `rw`: runtime entries that do not exist yet are created and covered, and the folder
    above a covered path cannot be renamed to read it."""
    from clawcore.types import HookContext
    from clawcore_sandbox_docker import make_backend

    (workspace / "ops" / "alog" / "keys").mkdir(parents=True)
    (workspace / "ops" / "alog" / "keys" / "signing.pem").write_text("PRIVATE\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if os.geteuid() == 0:
        for path in [workspace, elsewhere, *workspace.rglob("*")]:
            os.chown(path, 65534, 65534)
    config = docker_config(workspaceAccess="rw")
    config.data["audit"] = {"keys": str(workspace / "ops" / "alog" / "keys")}
    context = HookContext(session_id="planted", home=workspace, workspace=workspace, config={}, record=events)
    backend = make_backend(config, context)
    try:
        result = backend.run("mv ops/alog ops/moved; mv ops o2; cat ops/moved/keys/* o2/alog/keys/* 2>/dev/null; "
                             "echo 'tools: {}' > clawcore.yaml; rm -rf sessions; ln -s /tmp sessions; mkdir index",
                             cwd=workspace, timeout_s=20)
    finally:
        backend.close()
    assert "PRIVATE" not in result.stdout, result
    assert (workspace / "ops" / "alog" / "keys" / "signing.pem").read_text(encoding="utf-8") == "PRIVATE\n"
    assert (workspace / "clawcore.yaml").read_text(encoding="utf-8") == ""
    assert (workspace / "sessions").is_dir() and not (workspace / "sessions").is_symlink()


def test_a_uid_alone_never_runs_in_group_0(make_docker: Callable[..., Any], tmp_path: Path) -> None:
    result = make_docker(user="12345").run("id -u; id -g", cwd=tmp_path, timeout_s=20)
    assert result.stdout.split() == ["12345", "12345"], result
