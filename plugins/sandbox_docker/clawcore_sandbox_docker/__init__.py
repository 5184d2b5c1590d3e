"""clawcore-sandbox-docker: run the agent's commands in a locked-down Docker or Podman container.

The plugin registers the ``docker`` sandbox backend and the ``sandbox.docker``
config section. It talks to whatever engine ``DOCKER_HOST`` names through the
Docker SDK for Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clawcore import hookimpl
from clawcore.config import Config
from clawcore.types import HookContext, SandboxBackend

from clawcore_sandbox_docker.backend import DockerSandbox, close_session_backends
from clawcore_sandbox_docker.engine import (
    ENGINE_ERRORS,
    SandboxEngineError,
    SandboxUnavailable,
    check_image,
    connect,
)
from clawcore_sandbox_docker.leftovers import remove_leftovers
from clawcore_sandbox_docker.settings import CONFIG_SCHEMA, DockerSettings

__all__ = [
    "DockerSandbox",
    "DockerSettings",
    "SandboxEngineError",
    "SandboxUnavailable",
    "config_schema",
    "make_backend",
    "register_sandbox_backends",
    "session_end",
]


def _section(config: Any) -> Mapping[str, Any]:
    if hasattr(config, "section"):
        return config.section("sandbox.docker")
    sandbox = config.get("sandbox", {}) if isinstance(config, Mapping) else {}
    docker = sandbox.get("docker", {}) if isinstance(sandbox, Mapping) else {}
    return docker if isinstance(docker, Mapping) else {}


def _local_backend(config: Any, context: HookContext, reason: str) -> SandboxBackend:
    """The builtin ``local`` backend, taken from the same registry the runtime uses."""
    from clawcore.hooks import Hooks
    from clawcore.plugins import get_plugin_manager

    if not isinstance(config, Config):
        config = Config(dict(config), context.home)
    backends = Hooks(get_plugin_manager(load_entrypoints=False)).sandbox_backends()
    if "local" not in backends:
        raise SandboxUnavailable(f"{reason}; and no 'local' sandbox backend is registered to fall back to")
    backend: SandboxBackend = backends["local"](config, context)
    return backend


def make_backend(config: Any, context: HookContext) -> SandboxBackend:
    """The ``docker`` backend factory: connect, check the image, sweep leftovers.

    With the engine unreachable or the image missing, ``fallback: fail-closed``
    raises :class:`SandboxUnavailable` (the runtime refuses to run commands);
    ``fallback: local`` returns the local backend and records a
    ``sandbox.fallback`` audit event.
    """
    settings = DockerSettings.from_section(_section(config))
    try:
        client = connect(settings.engine_timeout_s)
        try:
            check_image(client, settings.image)
            remove_leftovers(
                client,
                on_removed=lambda labels: context.record("sandbox.docker.leftover_removed", dict(labels)),
            )
        except SandboxUnavailable:
            client.close()
            raise
        except ENGINE_ERRORS as exc:
            client.close()
            raise SandboxUnavailable(
                f"the container engine failed during start-up: {type(exc).__name__}: {exc}"
            ) from exc
    except SandboxUnavailable as exc:
        if settings.fallback == "local":
            context.record("sandbox.fallback", {"from": "docker", "to": "local", "reason": str(exc)})
            return _local_backend(config, context, str(exc))
        context.record("sandbox.docker.unavailable", {"reason": str(exc), "fallback": "fail-closed"})
        raise
    from clawcore.sandbox.local import credential_stores, runtime_entries
    from clawcore.security.paths import runtime_paths

    runtime = runtime_paths(context.home, context.workspace, config)
    return DockerSandbox(
        client,
        settings,
        workspace=context.workspace,
        session_id=context.session_id,
        record=context.record,
        local_factory=lambda: _local_backend(config, context, "the container engine failed"),
        # What lies inside the mounted workspace of these is covered in the container.
        hidden=[*map(Path, runtime), *credential_stores(context.workspace), *credential_stores(Path.home())],
        # Created empty when missing (workspaceAccess: rw), so that a command can neither create them nor
        # put a link there for the runtime to write through.
        placeholders={path: folder for path, folder in runtime_entries(context.home, config).items()
                      if str(path) in runtime},
    )


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"sandbox.docker": CONFIG_SCHEMA}


@hookimpl
def register_sandbox_backends(register: Callable[..., None]) -> None:
    register("docker", make_backend)


@hookimpl
def session_end(context: HookContext) -> None:
    """Remove the containers of the session that closed."""
    close_session_backends(context.session_id)
