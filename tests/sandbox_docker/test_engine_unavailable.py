"""An engine that is missing or hangs: clear errors, bounded waits, fail closed or fall back."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import clawcore_sandbox_docker
import docker
import pytest
from clawcore.config import Config
from clawcore.errors import PluginError
from clawcore.hooks import Hooks
from clawcore.plugins import get_plugin_manager
from clawcore.runtime import Runtime
from clawcore.types import HookContext
from clawcore_sandbox_docker import (
    DockerSandbox,
    DockerSettings,
    SandboxEngineError,
    SandboxUnavailable,
    make_backend,
)


@pytest.fixture
def hanging_engine(tmp_path: Path) -> Iterator[str]:
    """A unix socket that accepts connections and never answers: an engine that hangs."""
    path = tmp_path / "hang.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    server.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # read nothing, answer nothing

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"unix://{path}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def local_backend_registered() -> bool:
    return "local" in Hooks(get_plugin_manager(load_entrypoints=False)).sandbox_backends()


def test_unreachable_engine_fails_closed_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_context: Callable[..., HookContext], events: Any
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxUnavailable) as raised:
        make_backend({"sandbox": {"docker": {"engineTimeout": "2s"}}}, make_context())
    message = str(raised.value)
    assert "no-engine.sock" in message and "DOCKER_HOST" in message
    assert events.of("sandbox.docker.unavailable")[0]["fallback"] == "fail-closed"


@pytest.mark.parametrize(("address", "said"), [("tcp://[::1", "Invalid IPv6 URL"),
                                               ("unix://", "the socket (none given) does not exist")])
def test_a_docker_host_that_is_no_address_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, make_context: Callable[..., HookContext], address: str, said: str
) -> None:
    monkeypatch.setenv("DOCKER_HOST", address)
    with pytest.raises(SandboxUnavailable, match=re.escape(said)):
        make_backend({"sandbox": {"docker": {"engineTimeout": "2s"}}}, make_context())


def test_hanging_engine_times_out(
    monkeypatch: pytest.MonkeyPatch, hanging_engine: str, make_context: Callable[..., HookContext]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", hanging_engine)
    started = time.monotonic()
    with pytest.raises(SandboxUnavailable, match="timed out"):
        make_backend({"sandbox": {"docker": {"engineTimeout": "1s"}}}, make_context())
    assert time.monotonic() - started < 10


def test_engine_hanging_mid_session_refuses_the_command(hanging_engine: str, workspace: Path, events: Any) -> None:
    client = docker.DockerClient(base_url=hanging_engine, timeout=1, version="1.41")
    backend = DockerSandbox(client, DockerSettings(engine_timeout_s=1), workspace=workspace, record=events)
    started = time.monotonic()
    with pytest.raises(SandboxEngineError, match="fail-closed"):
        backend.run("echo should-not-run", cwd=workspace, timeout_s=5)
    assert time.monotonic() - started < 10
    assert events.of("sandbox.docker.refused")
    backend.close()
    backend.close()


def test_runtime_reports_the_unavailable_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    home = tmp_path / "home"
    (home / "workspace").mkdir(parents=True)
    config = {"sandbox": {"backend": "docker", "docker": {"engineTimeout": "2s"}}}
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(clawcore_sandbox_docker, name="sandbox_docker")
    with (
        Runtime(home, config=config, plugin_manager=pm) as runtime,
        pytest.raises(PluginError, match=r"sandbox backend 'docker' is unavailable: .*no-engine\.sock"),
    ):
        runtime.make_sandbox()


def test_fallback_local_is_audited(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_context: Callable[..., HookContext], events: Any
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    config = {"sandbox": {"docker": {"engineTimeout": "2s", "fallback": "local"}}}
    if not local_backend_registered():
        with pytest.raises(SandboxUnavailable, match="no 'local' sandbox backend is registered"):
            make_backend(config, make_context())
        return
    backend = make_backend(config, make_context())
    try:
        assert backend.name == "local"
        [event] = events.of("sandbox.fallback")
        assert event["from"] == "docker" and event["to"] == "local"
        assert "no-engine.sock" in event["reason"]
        result = backend.run("echo ran-locally", cwd=tmp_path, timeout_s=10)
        assert result.stdout.strip() == "ran-locally"
    finally:
        backend.close()


def test_engine_failing_mid_session_falls_back_when_configured(
    hanging_engine: str, workspace: Path, events: Any
) -> None:
    if not local_backend_registered():
        pytest.skip("the builtin 'local' sandbox backend is not registered in this build")
    pm = get_plugin_manager(load_entrypoints=False)
    local_factory = Hooks(pm).sandbox_backends()["local"]
    context = HookContext("s", workspace.parent, workspace, {}, record=events)
    client = docker.DockerClient(base_url=hanging_engine, timeout=1, version="1.41")
    backend = DockerSandbox(
        client, DockerSettings(engine_timeout_s=1, fallback="local"), workspace=workspace, record=events,
        local_factory=lambda: local_factory(Config({}, workspace.parent), context),
    )
    try:
        result = backend.run("echo fell-back", cwd=workspace, timeout_s=10)
        assert result.stdout.strip() == "fell-back"
        assert events.of("sandbox.fallback")[0]["to"] == "local"
    finally:
        backend.close()


@pytest.mark.docker
def test_missing_image_names_it(make_context: Callable[..., HookContext]) -> None:
    with pytest.raises(SandboxUnavailable, match=r"image 'localhost/clawcore-no-such-image:1' is not in the engine"):
        make_backend({"sandbox": {"docker": {"image": "localhost/clawcore-no-such-image:1"}}}, make_context())


def _runtime(home: Path, config: dict[str, Any]) -> Runtime:
    (home / "workspace").mkdir(parents=True, exist_ok=True)
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(clawcore_sandbox_docker, name="sandbox_docker")
    return Runtime(home, config=config, plugin_manager=pm)


def test_enabled_selects_the_docker_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with (
        _runtime(tmp_path / "home", {"sandbox": {"docker": {"enabled": True}}}) as runtime,
        pytest.raises(PluginError, match=r"sandbox backend 'docker' is unavailable: .*no-engine\.sock"),
    ):
        runtime.make_sandbox()


def test_an_explicit_backend_wins_over_enabled(tmp_path: Path) -> None:
    config = {"sandbox": {"backend": "local", "docker": {"enabled": True}}}
    with _runtime(tmp_path / "home", config) as runtime, \
            pytest.warns(RuntimeWarning, match="sandbox.docker.enabled is true but sandbox.backend is 'local'"):
        assert runtime.sandbox.name == "local"
    with _runtime(tmp_path / "home", {}) as runtime:
        assert runtime.sandbox.name == "local"
