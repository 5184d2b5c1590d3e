"""Talking to the engine: connecting with a timeout, and the errors a user can act on."""

from __future__ import annotations

import os
from typing import Any

import docker
import docker.errors
import requests
from clawcore.errors import ClawcoreError
from clawcore.types import ProviderUnavailable

__all__ = ["ENGINE_ERRORS", "SandboxEngineError", "SandboxUnavailable", "check_image", "connect", "engine_address"]

#: What a failing or unreachable engine raises through the SDK.
ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.RequestException,
    OSError,
)


#: Only for the first ping, which every API version answers.
_PROBE_API_VERSION = "1.24"


class SandboxUnavailable(ProviderUnavailable):
    """The engine cannot be reached or lacks the image; the message says how to fix it."""


class SandboxEngineError(ClawcoreError):
    """The engine failed while a session was using it; commands are refused (fail closed)."""


def engine_address() -> str:
    """The engine the SDK talks to, for messages."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (DOCKER_HOST unset)"


def connect(engine_timeout_s: float) -> Any:
    """A ``docker.DockerClient`` for ``DOCKER_HOST`` whose every call times out, after a ping.

    The API version comes from the ping's ``Api-Version`` header: the SDK's own
    negotiation asks ``/version``, which Podman answers slowly (over a second).

    :raises SandboxUnavailable: nothing answers there.
    """
    address = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if address.startswith("unix://") and not os.path.exists(address[len("unix://"):]):
        socket = address[len("unix://"):] or "(none given)"
        raise SandboxUnavailable(
            f"no container engine: the socket {socket} does not exist; start Docker, or "
            "Podman's API service (podman system service), and point DOCKER_HOST at its socket"
        )
    try:
        probe = docker.from_env(timeout=engine_timeout_s, version=_PROBE_API_VERSION)
    except (*ENGINE_ERRORS, ValueError) as exc:  # ValueError: a DOCKER_HOST that is not an address
        raise SandboxUnavailable(
            f"no container engine at {engine_address()}: {_short(exc)}; start Docker, or Podman's API "
            "service (podman system service), and point DOCKER_HOST at it"
        ) from exc
    try:
        response = probe.api.get(probe.api.base_url + "/_ping", timeout=engine_timeout_s)
        response.raise_for_status()
        version = response.headers.get("Api-Version") or "auto"
    except (*ENGINE_ERRORS, ValueError) as exc:
        raise SandboxUnavailable(
            f"the container engine at {engine_address()} does not answer: {_short(exc)}; start it "
            "(Docker, or `podman system service`) or fix DOCKER_HOST"
        ) from exc
    finally:
        probe.close()
    try:
        return docker.from_env(timeout=engine_timeout_s, version=version)
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"the container engine at {engine_address()} failed: {_short(exc)}") from exc


def check_image(client: Any, image: str) -> None:
    """Fail unless ``image`` is already in the engine (it is never pulled implicitly).

    :raises SandboxUnavailable: the image is missing or the engine failed.
    """
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(
            f"image {image!r} is not in the engine at {engine_address()}; fetch it (docker pull {image}) "
            "or set sandbox.docker.image to an image the engine has"
        ) from exc
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"cannot look up image {image!r} at {engine_address()}: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
