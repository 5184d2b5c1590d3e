"""Builtin plugin ``audit``: the hash-chained JSONL audit sink.

Every event the runtime audits (tool decisions and executions, policy
changes, config loads, monitor escalations, gateway auth) arrives here with
secrets already redacted and is chained into ``$CLAWCORE_HOME/audit/audit.jsonl``.
"""

from __future__ import annotations

import atexit
import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawcore import hookimpl
from clawcore.config import clawcore_home, home_path
from clawcore.security.audit import AuditError, AuditLog, canonical_json, plain_json, tail_records
from clawcore.text import printable
from clawcore.types import AuditEvent, HookContext

__all__ = ["DEFAULT_CHECKPOINT_EVERY", "AuditSettings", "writer_for"]

#: Records between two signed checkpoints (see docs/audit.md for the measurement).
DEFAULT_CHECKPOINT_EVERY = 256

AUDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "The hash-chained audit log.",
    "properties": {
        "enabled": {
            "type": "boolean",
            "default": True,
            "description": "Write audit records (turning this off is reported by `security audit`).",
        },
        "path": {
            "type": "string",
            "default": "audit/audit.jsonl",
            "description": "The JSONL log; relative paths are under $CLAWCORE_HOME.",
        },
        "keys": {
            "type": "string",
            "default": "audit/keys",
            "description": "Folder of the Ed25519 signing key, public keys and HMAC keys; "
            "relative paths are under $CLAWCORE_HOME.",
        },
        "checkpointEvery": {
            "type": "integer",
            "minimum": 0,
            "default": DEFAULT_CHECKPOINT_EVERY,
            "description": "Sign a checkpoint after every N records (0: only on close).",
        },
        "hmac": {
            "type": "boolean",
            "default": False,
            "description": "Add an HMAC-SHA256 to every record (key in the keys folder).",
        },
        "fsync": {
            "enum": ["checkpoint", "always"],
            "default": "checkpoint",
            "description": "fsync after every record, or only at checkpoints.",
        },
    },
}


@dataclass(frozen=True)
class AuditSettings:
    """The ``audit`` section, resolved against ``$CLAWCORE_HOME``."""

    enabled: bool
    path: Path
    keys: Path
    checkpoint_every: int
    hmac: bool
    fsync: str

    @classmethod
    def from_config(cls, config: Mapping[str, Any], home: Path) -> AuditSettings:
        section = config.get("audit") if isinstance(config.get("audit"), Mapping) else {}
        assert isinstance(section, Mapping)
        defaults = {k: v["default"] for k, v in AUDIT_SCHEMA["properties"].items()}
        merged = {**defaults, **section}
        return cls(
            enabled=bool(merged["enabled"]),
            path=home_path(home, str(merged["path"])),
            keys=home_path(home, str(merged["keys"])),
            checkpoint_every=int(merged["checkpointEvery"]),
            hmac=bool(merged["hmac"]),
            fsync=str(merged["fsync"]),
        )

    def open(self) -> AuditLog:
        """A new writer for this log (the caller closes it)."""
        return AuditLog(
            self.path,
            keys=self.keys,
            checkpoint_every=self.checkpoint_every,
            use_hmac=self.hmac,
            fsync=self.fsync,
        )


# One writer per log for the life of the process: appends reuse the open file
# and cached tail. Bounded so short-lived homes (tests) do not pile up.
_WRITERS: OrderedDict[AuditSettings, AuditLog] = OrderedDict()
_WRITERS_LOCK = threading.Lock()
_MAX_WRITERS = 8
_atexit_registered = False


def writer_for(settings: AuditSettings) -> AuditLog:
    """The process-wide writer for ``settings`` (closed with a final checkpoint at exit)."""
    global _atexit_registered
    with _WRITERS_LOCK:
        log = _WRITERS.get(settings)
        if log is None:
            log = settings.open()
            _WRITERS[settings] = log
            if not _atexit_registered:
                atexit.register(close_writers)
                _atexit_registered = True
            while len(_WRITERS) > _MAX_WRITERS:
                _, old = _WRITERS.popitem(last=False)
                _close_quietly(old)
        else:
            _WRITERS.move_to_end(settings)
        return log


def close_writers() -> None:
    """Checkpoint and close every open writer."""
    with _WRITERS_LOCK:
        while _WRITERS:
            _, log = _WRITERS.popitem()
            _close_quietly(log)


def _close_quietly(log: AuditLog) -> None:
    try:
        log.close()
    except (AuditError, OSError) as exc:
        sys.stderr.write(f"clawcore: audit log {log.path}: final checkpoint failed: {exc}\n")


def _settings(context: HookContext | None) -> AuditSettings:
    if context is not None:
        return AuditSettings.from_config(context.config, context.home)
    return AuditSettings.from_config({}, clawcore_home())


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"audit": AUDIT_SCHEMA}


#: Sections whose change is a policy change.
POLICY_SECTIONS = ("tools", "sandbox", "plugins", "gateway", "auth", "audit", "prism")
# Per writer: the config mapping whose fingerprint was last recorded (kept, so its id is not reused).
_RECORDED_CONFIG: dict[AuditSettings, Mapping[str, Any]] = {}


def config_fingerprint(config: Mapping[str, Any]) -> dict[str, str]:
    """SHA-256 (16 hex digits) of each top-level section, computed over the redacted config.

    Secrets are masked before hashing, so a fingerprint is no oracle for guessing a token.
    """
    from clawcore.security.secrets import redact_data

    redacted = redact_data(dict(config))
    return {
        str(name): hashlib.sha256(canonical_json(plain_json(section)).encode()).hexdigest()[:16]
        for name, section in sorted(redacted.items(), key=lambda item: str(item[0]))
    }


def _record_config(log: AuditLog, settings: AuditSettings, config: Mapping[str, Any]) -> None:
    """Once per config in this process: a ``config.loaded`` record, and ``policy.changed`` when
    a policy section differs from the last ``config.loaded`` in the log's recent records."""
    if _RECORDED_CONFIG.get(settings) is config:
        return
    _RECORDED_CONFIG[settings] = config
    sections = config_fingerprint(config)
    previous = next(
        (r for r in reversed(tail_records(settings.path, 2000)) if r.kind == "config.loaded"), None
    )
    log.append("config.loaded", {"sections": sections})
    if previous is not None and isinstance(previous.data.get("sections"), Mapping):
        before = previous.data["sections"]
        changed = sorted(name for name in POLICY_SECTIONS if before.get(name) != sections.get(name))
        if changed:
            log.append("policy.changed", {"sections": changed, "previousSeq": previous.seq})


@hookimpl
def record_audit_event(event: AuditEvent, context: HookContext | None) -> None:
    settings = _settings(context)
    if not settings.enabled:
        return
    try:
        log = writer_for(settings)
        if context is not None:
            _record_config(log, settings, context.config)
        log.append(event.kind, event.data, session=event.session_id, ts=event.ts or None)
    except Exception as exc:
        # The runtime never lets a sink failure stop the work, so say it where an operator sees it:
        # whatever the failure, a bug included, a record that is lost is never lost silently.
        reason = str(exc) if isinstance(exc, (AuditError, OSError)) else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"clawcore: audit record {event.kind!r} NOT written: {printable(reason)}\n")
        raise


@hookimpl
def session_end(context: HookContext) -> None:
    settings = _settings(context)
    if settings.enabled and settings.path.exists():
        writer_for(settings).checkpoint()
