"""The ``sandbox.docker`` config section: its JSON Schema and the parsed, typed settings.

The schema does the validation a user sees in ``clawcore config check``
(``memoryLimit: 512x`` is an error naming the key); :class:`DockerSettings`
turns the validated section into engine units once, so the backend never
parses strings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clawcore.config import parse_duration, parse_size
from clawcore.errors import ConfigError

__all__ = ["CONFIG_SCHEMA", "DEFAULT_IMAGE", "UNPRIVILEGED_USER", "DockerSettings"]

#: Where the workspace appears inside the container when it is mounted.
WORKSPACE_MOUNT = "/workspace"
DEFAULT_IMAGE = "debian:bookworm-slim"
#: ``nobody:nogroup`` on Debian-like images; used when ``user`` is ``auto``
#: and the workspace belongs to root.
UNPRIVILEGED_USER = "65534:65534"

_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
#: ``auto``, a uid alone (its gid is then the uid), or a uid or name with a gid or group.
_USER_PATTERN = rf"^(auto|[0-9]+|([0-9]+|{_NAME}):([0-9]+|{_NAME}))$"

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Run the agent's commands in a locked-down container (Docker or Podman).",
    "properties": {
        "enabled": {
            "type": "boolean",
            "default": False,
            "description": "Run the agent's shell commands in a container instead of on the host.",
        },
        "image": {
            "type": "string",
            "minLength": 1,
            "default": DEFAULT_IMAGE,
            "description": "Image to run; it must already be in the engine (it is never pulled).",
        },
        "readOnlyRoot": {"type": "boolean", "default": True, "description": "Mount the image read-only."},
        "memoryLimit": {
            "type": ["string", "integer"],
            "format": "size",
            "x-at-least": "6m",  # 0 means no limit to the engine, and under 6m it refuses to start
            "default": "512m",
            "description": "Memory (and memory+swap) limit; a command past it is killed (exit 137).",
        },
        "cpuLimit": {
            "type": "number",
            "minimum": 0.01,  # the engine's smallest share; below it the limit would round to 0, no limit
            "maximum": 1024,
            "default": 0.5,
            "description": "CPUs the container may use.",
        },
        "timeout": {
            "type": ["string", "number"],
            "format": "positive-duration",
            "default": "30s",
            "description": "Longest a command may run; a caller may ask for less, never more.",
        },
        "networkMode": {
            "type": "string",
            "enum": ["none", "bridge"],
            "default": "none",
            "description": "none: loopback only; bridge: the engine's default network.",
        },
        "pidsLimit": {
            "type": "integer",
            "minimum": 8,
            "maximum": 65536,
            "default": 256,
            "description": "Most processes alive at once in the container (stops fork bombs).",
        },
        "user": {
            "type": "string",
            "minLength": 1,
            # Plain digits or a name that starts with a letter: `-0` or `+0` would reach the engine as uid 0.
            # A name needs its group: alone, the engine takes the group the image's /etc/passwd gives, or 0.
            "pattern": _USER_PATTERN,
            "not": {"pattern": r"^(root|0+)(:|$)|:(root|0+)$"},
            "x-error": "is root (user or group), a name without a group, or not a uid[:gid], user:group or "
                       "'auto'; use an unprivileged uid:gid such as 65534:65534, or 'auto'",
            "default": "auto",
            "description": "uid:gid the commands run as; never root. auto: the workspace owner, "
            "or 65534:65534 when root owns it.",
        },
        "tmpfsSize": {
            "type": ["string", "integer"],
            "format": "size",
            "x-at-least": "1m",  # size=0 is an unbounded tmpfs
            "default": "64m",
            "description": "Size of the writable tmpfs at /tmp.",
        },
        "workspaceAccess": {
            "type": "string",
            "enum": ["none", "ro", "rw"],
            "default": "none",
            "description": "Mount the workspace at /workspace: not at all, read-only or read-write.",
        },
        "fallback": {
            "type": "string",
            "enum": ["fail-closed", "local"],
            "default": "fail-closed",
            "description": "When the engine or image is unavailable: refuse (fail-closed) or run on "
            "the local backend, with an audit event.",
        },
        "engineTimeout": {
            "type": ["string", "number"],
            "format": "positive-duration",
            "default": "20s",
            "description": "Longest wait for any one call to the engine.",
        },
        "maxOutput": {
            "type": ["string", "integer"],
            "format": "size",
            "x-at-least": "1k",  # 0 would stop every command that writes anything
            "default": "256k",
            "description": "Bytes kept of stdout and of stderr, each (at least 1k); the rest is dropped and reported.",
        },
    },
}

@dataclass(frozen=True)
class DockerSettings:
    """The ``sandbox.docker`` section in engine units."""

    image: str = DEFAULT_IMAGE
    read_only_root: bool = True
    memory_bytes: int = 512 * 1024**2
    nano_cpus: int = 500_000_000
    timeout_s: float = 30.0
    network_mode: Literal["none", "bridge"] = "none"
    pids_limit: int = 256
    user: str = "auto"
    tmpfs_bytes: int = 64 * 1024**2
    workspace_access: Literal["none", "ro", "rw"] = "none"
    fallback: Literal["fail-closed", "local"] = "fail-closed"
    engine_timeout_s: float = 20.0
    output_limit: int = 256 * 1024
    enabled: bool = False

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> DockerSettings:
        """Parse a validated section (defaults filled); a root ``user`` is refused here.

        :raises ConfigError: the user is root, which the schema alone cannot say clearly.
        """
        user = str(section.get("user", "auto"))
        parts = [part.strip() for part in user.split(":", 1)]
        # Any spelling the engine may read as 0 (`00`, `+0`, `-0`), for the user or the group.
        if any(part == "root" or re.fullmatch(r"[+-]?0+", part) for part in parts) or \
                not re.fullmatch(_USER_PATTERN, user):
            raise ConfigError(
                f"sandbox.docker.user: {user!r} is root, a name without a group, or not a uid:gid; use an "
                f"unprivileged uid:gid such as {UNPRIVILEGED_USER} or 'auto'"
            )
        cpus = float(section.get("cpuLimit", 0.5))
        if not 0.01 <= cpus <= 1024:  # 0 nano-CPUs would mean no limit to the engine
            raise ConfigError(f"sandbox.docker.cpuLimit: {cpus!r} is not between 0.01 and 1024")
        if user.isdigit():
            # Alone, a uid the image's /etc/passwd does not name runs with gid 0: its gid is the uid.
            user = f"{user}:{user}"
        return cls(
            image=str(section.get("image", DEFAULT_IMAGE)),
            read_only_root=bool(section.get("readOnlyRoot", True)),
            memory_bytes=parse_size(section.get("memoryLimit", "512m")),
            nano_cpus=round(cpus * 1e9),
            timeout_s=parse_duration(section.get("timeout", "30s")),
            network_mode=section.get("networkMode", "none"),
            pids_limit=int(section.get("pidsLimit", 256)),
            user=user,
            tmpfs_bytes=parse_size(section.get("tmpfsSize", "64m")),
            workspace_access=section.get("workspaceAccess", "none"),
            fallback=section.get("fallback", "fail-closed"),
            engine_timeout_s=parse_duration(section.get("engineTimeout", "20s")),
            output_limit=parse_size(section.get("maxOutput", "256k")),
            enabled=bool(section.get("enabled", False)),
        )

    def resolve_user(self, workspace: Path) -> str:
        """The uid:gid to run as: ``user``, or for ``auto`` the workspace's owner unless that is root."""
        if self.user != "auto":
            return self.user
        try:
            info = os.stat(workspace)
        except OSError:
            return UNPRIVILEGED_USER
        if info.st_uid == 0:
            return UNPRIVILEGED_USER
        # A workspace in the root group must not hand the container gid 0.
        return f"{info.st_uid}:{info.st_gid if info.st_gid != 0 else UNPRIVILEGED_USER.split(':')[1]}"
