"""Builtin plugin ``sandbox-local``: the ``sandbox`` config section and the local subprocess backend.

The section holds everything the boundary needs — backend choice, filesystem
policy, network policy, limits — except ``sandbox.docker``, which the Docker
plugin grafts in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clawcore import hookimpl
from clawcore.security.paths import DEFAULT_ALLOWED_PATHS, DEFAULT_DENIED_PATHS, DEFAULT_READ_ONLY_PATHS

_PATH_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}

SANDBOX_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "x-plugin-sections": True,  # backend plugins add theirs (`sandbox.docker`)
    "description": "Where and how tools run: backend, filesystem and network policy, limits.",
    "properties": {
        "backend": {"type": "string", "default": "local", "description": "Sandbox backend for bash: local, docker."},
        "isolation": {
            "enum": ["auto", "bwrap", "unshare", "none"],
            "default": "auto",
            "description": "OS isolation of the local backend; auto takes the strongest that works here.",
        },
        "allowedPaths": {
            **_PATH_LIST,
            "default": list(DEFAULT_ALLOWED_PATHS),
            "description": "Roots the file tools may use; {workspace}, {tmp}, {home} and ~ are expanded.",
        },
        "deniedPaths": {
            **_PATH_LIST,
            "default": list(DEFAULT_DENIED_PATHS),
            "description": "Denied for read and write even inside allowed roots; directories or globs (**/.env); a leading ! makes an exception.",
        },
        "readOnlyPaths": {
            **_PATH_LIST,
            "default": list(DEFAULT_READ_ONLY_PATHS),
            "description": "Readable but never written (git hooks, shell start-up files).",
        },
        "network": {
            "type": "object",
            "additionalProperties": False,
            "description": "What web_fetch may reach, and whether shell commands get a network.",
            "properties": {
                "allow": {**_PATH_LIST, "default": [],
                          "description": "Domain allowlist (example.com = it and subdomains, .example.com = "
                                         "subdomains only); empty allows every public host."},
                "block": {**_PATH_LIST, "default": [], "description": "Extra blocked domains."},
                "blockExfiltration": {"type": "boolean", "default": True,
                                      "description": "Block request catchers, tunnels and anonymous drops."},
                "privateNetwork": {
                    "oneOf": [{"type": "boolean"}, _PATH_LIST],
                    "default": False,
                    "description": "Allow private/loopback/link-local targets: true, or a list of IPs, CIDRs "
                                   "or host names.",
                },
                "shell": {"enum": ["deny", "allow"], "default": "deny",
                          "description": "Network for shell commands of the local backend."},
            },
        },
        "timeout": {"type": ["string", "number"], "format": "positive-duration", "x-at-least": "100ms",
                    "default": "30s", "description": "Default timeout of one command (at least 100ms)."},
        "maxOutput": {"type": ["string", "integer"], "format": "size", "x-at-least": "1k", "default": "256k",
                      "description": "Bytes kept per output stream (stdout, stderr) of a command (at least 1k)."},
        "passEnv": {**_PATH_LIST, "default": [],
                    "description": "Globs of environment variables passed to commands (never *KEY*/*TOKEN*/...)."},
        "fetch": {
            "type": "object",
            "additionalProperties": False,
            "description": "Limits of the web_fetch tool.",
            "properties": {
                "timeout": {"type": ["string", "number"], "format": "duration", "default": "20s"},
                "maxBytes": {"type": ["string", "integer"], "format": "size", "default": "2m"},
                "maxRedirects": {"type": "integer", "minimum": 0, "maximum": 20, "default": 5},
                "userAgent": {"type": "string", "default": "clawcore-web-fetch/0.1"},
            },
        },
    },
}


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"sandbox": SANDBOX_SCHEMA}


def _local_factory(config: Any, context: Any) -> Any:
    from clawcore.sandbox.local import LocalSandbox

    return LocalSandbox.from_config(config)


@hookimpl
def register_sandbox_backends(register: Callable[..., None]) -> None:
    register("local", _local_factory)
