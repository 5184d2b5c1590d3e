"""Fixtures for the docker sandbox tests: the engine from DOCKER_HOST and backends on it.

Tests marked ``docker`` need a Docker-compatible engine. Outside CI they skip
with the reason when ``DOCKER_HOST`` is unusable; under ``CI=true`` they fail,
because CI must bring the engine up (``scripts/podman-service run -- ...``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import clawcore_sandbox_docker
import pytest
from clawcore.config import Config, load_config
from clawcore.plugins import get_plugin_manager
from clawcore.types import HookContext

#: The image scripts/podman-service imports; override with CLAWCORE_TEST_IMAGE.
TEST_IMAGE = os.environ.get("CLAWCORE_TEST_IMAGE", "localhost/clawcore-busybox:latest")


@functools.cache
def engine_problem() -> str | None:
    """Why the engine cannot be used, or None when it can."""
    if not os.environ.get("DOCKER_HOST"):
        return "DOCKER_HOST is not set; start an engine with scripts/podman-service (make test does)"
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=10)
        try:
            client.ping()
            client.images.get(TEST_IMAGE)
        finally:
            client.close()
    except (docker.errors.DockerException, OSError, ValueError) as exc:
        return f"the engine at {os.environ['DOCKER_HOST']} is unusable: {type(exc).__name__}: {exc}"
    return None


@pytest.fixture(autouse=True)
def _require_engine(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("docker") is None:
        return
    problem = engine_problem()
    if problem is None:
        return
    if os.environ.get("CI") in ("true", "1"):
        pytest.fail(f"CI must provide a container engine: {problem}")
    pytest.skip(problem)


class Events:
    """Audit events recorded through ``HookContext.record``."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, data: Mapping[str, Any]) -> None:
        self.items.append((kind, dict(data)))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.items]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in self.items if k == kind]


@pytest.fixture
def test_image() -> str:
    return TEST_IMAGE


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def make_context(tmp_path: Path, workspace: Path, events: Events) -> Callable[..., HookContext]:
    def make(session_id: str = "test-session") -> HookContext:
        return HookContext(session_id=session_id, home=tmp_path, workspace=workspace, config={}, record=events)

    return make


@pytest.fixture
def docker_config(tmp_path: Path) -> Callable[..., Config]:
    """``docker_config(**keys)``: the validated config with the test image and those ``sandbox.docker`` keys."""
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(clawcore_sandbox_docker, name="sandbox_docker")

    def make(**keys: Any) -> Config:
        data = {"sandbox": {"backend": "docker", "docker": {"image": TEST_IMAGE, **keys}}}
        return load_config(tmp_path, data=data, pm=pm)

    return make


@pytest.fixture
def make_docker(
    make_context: Callable[..., HookContext], docker_config: Callable[..., Config]
) -> Iterator[Callable[..., Any]]:
    """``make_docker(**keys)``: a docker backend on the engine, closed after the test."""
    from clawcore_sandbox_docker import make_backend

    made: list[Any] = []

    def make(session_id: str = "test-session", **keys: Any) -> Any:
        backend = make_backend(docker_config(**keys), make_context(session_id))
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture
def engine() -> Iterator[Any]:
    """A Docker SDK client for inspecting what the backend left in the engine."""
    import docker

    client = docker.from_env(timeout=20)
    yield client
    client.close()
