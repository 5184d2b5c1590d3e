"""One container per session: reused, removed at close and session end, swept after a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import clawcore_sandbox_docker
import docker.errors
import pytest
from clawcore.hooks import Hooks
from clawcore.plugins import get_plugin_manager
from clawcore.types import HookContext

pytestmark = pytest.mark.docker

#: A process that opens a sandbox, runs one command, reports its container and
#: waits for its stdin to close; then it exits normally, without calling close().
CREATOR = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from clawcore.types import HookContext
    from clawcore_sandbox_docker import make_backend

    workspace = Path(sys.argv[1])
    context = HookContext(session_id=sys.argv[2], home=workspace, workspace=workspace, config={})
    backend = make_backend({"sandbox": {"docker": {"image": sys.argv[3]}}}, context)
    result = backend.run("echo up", cwd=workspace, timeout_s=20)
    print(json.dumps({"container": backend.container_id, "stdout": result.stdout}), flush=True)
    sys.stdin.readline()
    """
)


@pytest.fixture
def spawn_creator(tmp_path: Path, test_image: str) -> Iterator[Callable[[str], tuple[subprocess.Popen[str], str]]]:
    """Start a creator process; returns it and its container id. Stopped after the test."""
    started: list[subprocess.Popen[str]] = []

    def spawn(session: str) -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen(
            [sys.executable, "-c", CREATOR, str(tmp_path), session, test_image],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            process.wait(10)
            pytest.fail(f"the creator failed: {process.stderr.read() if process.stderr else ''}")
        report = json.loads(line)
        assert report["stdout"] == "up\n"
        return process, report["container"]

    yield spawn
    for process in started:
        if process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()  # a normal exit: its atexit removes the container
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def exists(engine: Any, container_id: str) -> bool:
    try:
        engine.containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


def test_one_container_is_reused_across_commands(make_docker: Callable[..., Any], engine: Any, tmp_path: Path) -> None:
    backend = make_docker()
    assert backend.container_id is None  # nothing starts before the first command
    backend.run("echo kept > /tmp/state", cwd=tmp_path, timeout_s=10)
    first = backend.container_id
    assert backend.run("cat /tmp/state", cwd=tmp_path, timeout_s=10).stdout == "kept\n"
    assert backend.container_id == first
    labels = engine.containers.get(first).labels
    assert labels["clawcore.sandbox"] == "1"
    assert labels["clawcore.sandbox.session"] == "test-session"
    assert labels["clawcore.sandbox.owner"].split("/")[1] == str(os.getpid())


def test_close_removes_the_container(make_docker: Callable[..., Any], engine: Any, tmp_path: Path) -> None:
    backend = make_docker()
    backend.run("true", cwd=tmp_path, timeout_s=10)
    container = backend.container_id
    assert exists(engine, container)
    backend.close()
    assert not exists(engine, container)
    with pytest.raises(Exception, match="closed"):
        backend.run("true", cwd=tmp_path, timeout_s=10)


def test_session_end_removes_that_sessions_container(
    make_docker: Callable[..., Any], make_context: Callable[..., HookContext], engine: Any, tmp_path: Path
) -> None:
    ending = make_docker(session_id="ending")
    staying = make_docker(session_id="staying")
    for backend in (ending, staying):
        backend.run("true", cwd=tmp_path, timeout_s=10)
    ending_container = ending.container_id
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(clawcore_sandbox_docker, name="sandbox_docker")
    Hooks(pm).notify("session_end", None, context=make_context("ending"))
    assert ending.container_id is None
    assert not exists(engine, ending_container)
    assert staying.container_id is not None and exists(engine, staying.container_id)


def test_container_removed_behind_its_back_is_replaced(
    make_docker: Callable[..., Any], engine: Any, tmp_path: Path
) -> None:
    backend = make_docker()
    backend.run("true", cwd=tmp_path, timeout_s=10)
    old = backend.container_id
    engine.containers.get(old).remove(force=True)
    result = backend.run("echo again", cwd=tmp_path, timeout_s=10)
    assert result.stdout == "again\n"
    assert backend.container_id not in (None, old)


def test_start_up_removes_a_crashed_runs_container(
    spawn_creator: Callable[[str], tuple[subprocess.Popen[str], str]],
    make_docker: Callable[..., Any],
    engine: Any,
    events: Any,
) -> None:
    crashed, crashed_container = spawn_creator("crashed")
    _alive, alive_container = spawn_creator("alive")
    os.kill(crashed.pid, signal.SIGKILL)  # no close, no atexit: the container stays
    crashed.wait(10)
    assert exists(engine, crashed_container)

    make_docker()  # start-up sweeps
    assert not exists(engine, crashed_container)
    assert exists(engine, alive_container)  # its creator still runs
    [removed] = events.of("sandbox.docker.leftover_removed")
    assert removed["clawcore.sandbox.session"] == "crashed"


def test_a_normal_exit_leaves_nothing(
    spawn_creator: Callable[[str], tuple[subprocess.Popen[str], str]], engine: Any
) -> None:
    process, container = spawn_creator("exiting")
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(30) == 0
    deadline = time.monotonic() + 10
    while exists(engine, container) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not exists(engine, container)
