"""``clawcore audit``: verify, read and extend the hash-chained audit log."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from clawcore.cli.state import CliState
from clawcore.config import load_config, parse_duration
from clawcore.errors import ClawcoreError
from clawcore.security.audit import (
    AuditError,
    AuditRecord,
    Checkpoint,
    export_bundle,
    load_bundle,
    load_public_key,
    read_records,
    tail_records,
    verify_log,
)
from clawcore.security.audit_plugin import AuditSettings
from clawcore.text import printable

__all__ = ["command"]


class AuditBroken(ClawcoreError):
    """``audit verify`` found a problem."""

    exit_code = 1


def _settings(state: CliState) -> AuditSettings:
    config = load_config(state.home, pm=state.plugin_manager)
    return AuditSettings.from_config(config.data, state.home)


def _line(record: AuditRecord) -> str:
    session = f" [{record.session}]" if record.session else ""
    data = json.dumps(record.data, ensure_ascii=False, sort_keys=True)
    return f"{record.seq:>7} {record.ts} {record.kind}{session} {data}"


def _emit(records: Iterable[AuditRecord], as_json: bool) -> None:
    for record in records:
        # Records hold text from tools, models and clients: nothing in it may drive the terminal.
        click.echo(
            printable(json.dumps(record.to_json(), ensure_ascii=False, sort_keys=True) if as_json else _line(record))
        )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _since(value: str) -> float:
    """Seconds since the epoch from an ISO date/time or a duration ago (``2h``)."""
    try:
        return time.time() - parse_duration(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither a duration like 2h nor a date like 2026-11-30T12:00"
        ) from None
    if moment.tzinfo is None:  # a local time, as a person types it
        try:
            moment = moment.astimezone()
        except (ValueError, OverflowError):  # beyond the system's clock (0001-01-01): today's offset
            moment = moment.replace(tzinfo=datetime.now().astimezone().tzinfo)
    return (moment - _EPOCH).total_seconds()  # unlike .timestamp(), defined for every year


@click.group("audit")
def command() -> None:
    """The tamper-evident audit log ($CLAWCORE_HOME/audit/audit.jsonl)."""


@command.command("verify")
@click.option(
    "--public-key",
    "public_keys",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Trust only this public key (PEM) and keys it rotated to; repeatable.",
)
@click.option(
    "--checkpoints",
    "bundle",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A checkpoint export (`audit checkpoint --export`) kept elsewhere; its keys are trusted.",
)
@click.option("--repair", is_flag=True, help="Set a torn last line aside (records before it are kept).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def verify(
    state: CliState, public_keys: tuple[Path, ...], bundle: Path | None, repair: bool, as_json: bool
) -> None:
    """Check the chain and the signed checkpoints; exit 0 only when intact."""
    settings = _settings(state)
    trusted: dict[str, Any] | None = None
    extra: list[Checkpoint] = []
    if bundle is not None:
        trusted, extra = load_bundle(bundle)
    if public_keys:
        from clawcore.security.audit import public_key_id

        trusted = dict(trusted or {})
        for path in public_keys:
            key = load_public_key(path)
            trusted[public_key_id(key)] = key
    if repair:
        log = settings.open()
        try:
            if log.repair():
                click.echo(
                    f"repaired: the torn last line of {settings.path} was set aside "
                    f"({settings.path.name}.torn)",
                    err=True,
                )
        finally:
            log.close()
    report = verify_log(
        settings.path, keys=settings.keys, trusted=trusted, extra_checkpoints=extra, require_mac=settings.hmac
    )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "path": str(report.path),
                    "ok": report.ok,
                    "records": report.records,
                    "checkpoints": report.checkpoints,
                    "head": report.head,
                    "keys": list(report.keys),
                    "warnings": list(report.warnings),
                    "failure": None
                    if report.failure is None
                    else {
                        "kind": report.failure.kind.value,
                        "line": report.failure.line,
                        "seq": report.failure.seq,
                        "message": report.failure.message,
                    },
                },
                indent=2,
            )
        )
    for warning in report.warnings:
        if not as_json:
            click.echo(f"warning: {warning}", err=True)
    if report.failure is not None:
        raise AuditBroken(f"{report.path}: {report.failure}")
    if not as_json:
        click.echo(
            f"ok: {report.records} records, {report.checkpoints} checkpoints, "
            f"head {report.head[:16]}… ({report.path})"
        )


@command.command("tail")
@click.option(
    "-n", "count", type=click.IntRange(min=0), default=20, show_default=True, help="Records to show."
)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new records (Ctrl-C stops).")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line.")
@click.pass_obj
def tail(state: CliState, count: int, follow: bool, as_json: bool) -> None:
    """Show the last records."""
    settings = _settings(state)
    records = tail_records(settings.path, count)
    _emit(records, as_json)
    if not follow:
        return
    last = records[-1].seq if records else 0
    if not records and settings.path.exists():
        tail_last = tail_records(settings.path, 1)
        last = tail_last[-1].seq if tail_last else 0
    try:
        while True:
            time.sleep(0.5)
            newest = tail_records(settings.path, 1)
            if not newest or newest[-1].seq <= last:
                continue
            fresh = [r for r in tail_records(settings.path, newest[-1].seq - last) if r.seq > last]
            _emit(fresh, as_json)
            sys.stdout.flush()
            last = newest[-1].seq
    except KeyboardInterrupt:
        return


@command.command("show")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    help="Only these kinds; a trailing * matches a prefix (tool.*). Repeatable.",
)
@click.option("--since", help="Only records since a date/time (2026-11-30T12:00) or a duration ago (2h).")
@click.option("--session", help="Only records of this session.")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line.")
@click.pass_obj
def show(
    state: CliState, kinds: tuple[str, ...], since: str | None, session: str | None, as_json: bool
) -> None:
    """Show records filtered by kind, time and session."""
    settings = _settings(state)
    cutoff = _since(since) if since else None

    def wanted(record: AuditRecord) -> bool:
        if kinds and not any(
            record.kind.startswith(k[:-1]) if k.endswith("*") else record.kind == k for k in kinds
        ):
            return False
        if session is not None and record.session != session:
            return False
        if cutoff is None:
            return True
        try:
            return record.timestamp >= cutoff
        except ValueError:  # a ts that is not a time: a damaged record (`audit verify` names it)
            return False

    _emit((r for r in read_records(settings.path) if wanted(r)), as_json)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"the key {twice!r} is given twice")
    return dict(pairs)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


@command.command("record")
@click.argument("kind")
@click.option("--data", "data_json", default="{}", help="The payload as a JSON object.")
@click.option("--session", default="", help="The session the record belongs to.")
@click.pass_obj
def record(state: CliState, kind: str, data_json: str, session: str) -> None:
    """Add a record to the chain (secrets in the payload are redacted like every event)."""
    try:
        data = json.loads(data_json, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except ValueError as exc:
        raise AuditError(f"--data is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AuditError("--data must be a JSON object, like '{\"ticket\": 42}'")
    settings = _settings(state)
    if not settings.enabled:
        raise AuditError("audit.enabled is false in the config; nothing would be written")
    if state.runtime().pm.get_plugin("audit") is None:
        raise AuditError("the audit plugin is disabled (plugins.disable or CLAWCORE_DISABLE_PLUGINS); "
                         "nothing would be written")
    from clawcore.security.audit import RESERVED_PREFIX

    if kind.startswith(RESERVED_PREFIX) or not kind.strip():
        raise AuditError(
            f"kind {kind!r} is not allowed: it must be non-empty and not start with {RESERVED_PREFIX!r}"
        )
    from clawcore.security.audit_plugin import writer_for
    from clawcore.security.secrets import redact

    state.runtime().audit(kind, data, session_id=session)
    newest = tail_records(settings.path, 1)
    writer_for(settings).close()  # a command is short-lived: sign what it wrote now
    if newest and newest[-1].kind == redact(kind):  # a credential in the kind is redacted like the payload
        click.echo(f"recorded: seq {newest[-1].seq} {newest[-1].kind}")
    else:
        raise AuditError(f"the record was not written to {settings.path}; see the message above")


@command.command("checkpoint")
@click.option(
    "--export",
    "export_to",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Also write all checkpoints and public keys to this file ('-': stdout); keep it elsewhere.",
)
@click.pass_obj
def checkpoint(state: CliState, export_to: Path | None) -> None:
    """Sign the current head now; optionally export the checkpoints."""
    settings = _settings(state)
    log = settings.open()
    try:
        made = log.checkpoint() if settings.path.exists() else None
    finally:
        log.close()
    if made is not None:
        click.echo(f"checkpoint: {made.size} records, head {made.head[:16]}…, key {made.key}", err=True)
    else:
        click.echo("the audit log is empty: no checkpoint written", err=True)
    if export_to is not None:
        text = json.dumps(export_bundle(settings.path, settings.keys), indent=2) + "\n"
        if str(export_to) == "-":
            click.echo(text, nl=False)
        else:
            try:
                export_to.write_text(text, encoding="utf-8")
            except OSError as exc:
                raise AuditError(f"cannot write the export {export_to}: {exc}") from exc
            click.echo(f"exported to {export_to}", err=True)


@command.command("rotate-keys")
@click.pass_obj
def rotate_keys(state: CliState) -> None:
    """Replace the signing key (and the HMAC key when enabled); the old key vouches for the new one."""
    settings = _settings(state)
    log = settings.open()
    try:
        old, new = log.rotate_keys()
    finally:
        log.close()
    click.echo(
        f"rotated: {old} -> {new}; export the checkpoints again (`clawcore audit checkpoint --export`)"
    )
