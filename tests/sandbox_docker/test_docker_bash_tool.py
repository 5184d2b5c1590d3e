"""The agent's bash tool through the runtime: in the container when enabled, refused when the engine is gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import clawcore_sandbox_docker
import docker.errors
import pytest
from clawcore.plugins import get_plugin_manager
from clawcore.runtime import Runtime


def runtime_for(home: Path, docker_section: dict[str, Any]) -> Runtime:
    (home / "workspace").mkdir(parents=True, exist_ok=True)
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(clawcore_sandbox_docker, name="sandbox_docker")
    config = {"sandbox": {"docker": {"enabled": True, **docker_section}}, "tools": {"policy": {"allow": ["bash"]}}}
    return Runtime(home, config=config, plugin_manager=pm)


@pytest.mark.docker
def test_bash_tool_runs_in_the_container(tmp_path: Path, test_image: str, engine: Any) -> None:
    home = tmp_path / "home"
    runtime = runtime_for(home, {"image": test_image, "workspaceAccess": "ro"})
    (home / "workspace" / "MEMORY.md").write_text("remember the milk\n", encoding="utf-8")
    try:
        who = runtime.call_tool("bash", {"command": "id -u"})
        assert who.metadata["backend"] == "docker", who
        assert who.content.startswith("65534\n")
        read = runtime.call_tool("bash", {"command": "cat MEMORY.md"})
        assert read.content.startswith("remember the milk\n")
        write = runtime.call_tool("bash", {"command": "touch planted"})
        assert write.is_error
        assert "Read-only file system" in write.content
        container = runtime.sandbox.container_id  # type: ignore[attr-defined]
        assert container is not None
    finally:
        runtime.close()
    assert not (home / "workspace" / "planted").exists()
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(container)


def test_bash_tool_fails_closed_without_an_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    marker = tmp_path / "ran-on-host"
    with runtime_for(tmp_path / "home", {"engineTimeout": "2s"}) as runtime:
        result = runtime.call_tool("bash", {"command": f"touch {marker}"})
    assert result.is_error
    assert "sandbox backend 'docker' is unavailable" in result.content
    assert not marker.exists()
