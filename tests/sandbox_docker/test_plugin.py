"""The plugin as installed: entry point, registry, config section and its validation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import importlib_metadata
import pytest
from clawcore.config import load_config
from clawcore.errors import ConfigError
from clawcore.hooks import Hooks
from clawcore.plugins import get_plugin_manager

#: The console script installed next to this interpreter.
CLAWCORE = str(Path(sys.executable).with_name("clawcore"))


def test_entry_point_is_found() -> None:
    found = {ep.name: ep.value for ep in importlib_metadata.entry_points(group="clawcore")}
    assert found.get("sandbox_docker") == "clawcore_sandbox_docker"


def test_registers_the_docker_backend() -> None:
    pm = get_plugin_manager()
    assert pm.get_plugin("sandbox_docker") is not None
    backends = Hooks(pm).sandbox_backends()
    from clawcore_sandbox_docker import make_backend

    assert backends["docker"] is make_backend


def test_config_defaults_fill_the_section(tmp_path: Path) -> None:
    config = load_config(tmp_path, data={}, pm=get_plugin_manager())
    section = config.section("sandbox.docker")
    assert section["enabled"] is False
    assert section["readOnlyRoot"] is True
    assert section["memoryLimit"] == "512m"
    assert section["cpuLimit"] == 0.5
    assert section["timeout"] == "30s"
    assert section["networkMode"] == "none"
    assert section["workspaceAccess"] == "none"
    assert section["fallback"] == "fail-closed"
    from clawcore_sandbox_docker import DockerSettings

    settings = DockerSettings.from_section(section)
    assert settings.memory_bytes == 512 * 1024**2
    assert settings.nano_cpus == 500_000_000
    assert settings.timeout_s == 30.0
    assert settings.engine_timeout_s == 20.0


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("memoryLimit", "512x", "sandbox.docker.memoryLimit: '512x' is not a size like 512m"),
        ("timeout", "soon", "sandbox.docker.timeout: 'soon' is not a duration above 0 like 30s"),
        ("workspaceAccess", "write", "sandbox.docker.workspaceAccess: 'write' is not one of"),
        ("networkMode", "host", "sandbox.docker.networkMode: 'host' is not one of"),
        ("cpuLimit", 0, "sandbox.docker.cpuLimit"),
        ("pidsLimit", 1, "sandbox.docker.pidsLimit"),
        ("fallback", "open", "sandbox.docker.fallback: 'open' is not one of"),
        ("memoryLimt", "1g", "sandbox.docker.memoryLimt: unknown key (did you mean 'memoryLimit'?)"),
        # 0 is "no limit" to the engine; a timeout of 0 kills every command at once
        ("memoryLimit", 0, "sandbox.docker.memoryLimit: 0 is below the least allowed, 6m"),
        ("memoryLimit", "1k", "sandbox.docker.memoryLimit: '1k' is below the least allowed, 6m"),
        ("tmpfsSize", 0, "sandbox.docker.tmpfsSize: 0 is below the least allowed, 1m"),
        ("timeout", 0, "sandbox.docker.timeout: 0 is not a duration above 0"),
        ("engineTimeout", "0s", "sandbox.docker.engineTimeout: '0s' is not a duration above 0"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, key: str, value: object, expected: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, data={"sandbox": {"docker": {key: value}}}, pm=get_plugin_manager())
    assert any(problem.startswith(expected) for problem in raised.value.problems), raised.value.problems


def test_config_check_reports_a_bad_size(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "clawcore.yaml").write_text("sandbox:\n  docker:\n    memoryLimit: 512x\n", encoding="utf-8")
    env = {**os.environ, "CLAWCORE_HOME": str(home)}
    done = subprocess.run(
        [CLAWCORE, "config", "check"],
        check=False, capture_output=True, text=True, env=env, timeout=60,
    )
    assert done.returncode == 2, done
    assert "sandbox.docker.memoryLimit: '512x' is not a size like 512m" in done.stderr
    assert "Traceback" not in done.stderr

    # The same file with a valid size passes (checked in-process: the CLI start-up is slow).
    (home / "clawcore.yaml").write_text("sandbox:\n  docker:\n    memoryLimit: 256m\n", encoding="utf-8")
    assert load_config(home, pm=get_plugin_manager()).get("sandbox.docker.memoryLimit") == "256m"


@pytest.mark.parametrize("user", ["root", "0", "0:0", "root:root", "00", "0000", "00:00", "+0", "-0", "65534:0",
                                  "65534:root", "-1", "nobody", "sandbox"])
def test_root_user_or_a_name_without_a_group_is_refused(tmp_path: Path, user: str) -> None:
    from clawcore_sandbox_docker import DockerSettings

    with pytest.raises(ConfigError, match=r"sandbox.docker.user: .* is root, a name without a group, or not a uid:gid"):
        DockerSettings.from_section({"user": user})
    with pytest.raises(ConfigError) as raised:  # and `clawcore config check` says so before any run
        load_config(tmp_path, data={"sandbox": {"docker": {"user": user}}}, pm=get_plugin_manager())
    assert any(problem.startswith(f"sandbox.docker.user: {user!r} is root") for problem in raised.value.problems)


def test_auto_user_is_the_workspace_owner_unless_root(tmp_path: Path) -> None:
    from clawcore_sandbox_docker import DockerSettings

    settings = DockerSettings.from_section({"user": "auto"})
    owner = tmp_path.stat()
    expected = "65534:65534" if owner.st_uid == 0 else f"{owner.st_uid}:{owner.st_gid or 65534}"
    assert settings.resolve_user(tmp_path) == expected
    assert DockerSettings.from_section({"user": "1000:1000"}).resolve_user(tmp_path) == "1000:1000"


def test_a_uid_alone_runs_with_that_gid_never_gid_0(tmp_path: Path) -> None:
    from clawcore_sandbox_docker import DockerSettings

    assert DockerSettings.from_section({"user": "12345"}).resolve_user(tmp_path) == "12345:12345"
    assert load_config(tmp_path, data={"sandbox": {"docker": {"user": "12345"}}},
                       pm=get_plugin_manager()).get("sandbox.docker.user") == "12345"


@pytest.mark.parametrize(("key", "value"), [("cpuLimit", 1e-10), ("cpuLimit", 0.001), ("maxOutput", 0),
                                            ("maxOutput", "10")])
def test_limits_that_would_turn_themselves_off_are_refused(tmp_path: Path, key: str, value: object) -> None:
    from clawcore_sandbox_docker import DockerSettings

    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, data={"sandbox": {"docker": {key: value}}}, pm=get_plugin_manager())
    assert any(problem.startswith(f"sandbox.docker.{key}") for problem in raised.value.problems)
    if key == "cpuLimit":  # and where a section reaches the backend unchecked
        with pytest.raises(ConfigError, match="sandbox.docker.cpuLimit"):
            DockerSettings.from_section({key: value})
