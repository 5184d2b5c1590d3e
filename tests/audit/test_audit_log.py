"""Writing the log: torn tails, several processes, key rotation, the runtime sink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from clawcore.security.audit import (
    AuditError,
    AuditLog,
    FailureKind,
    KeyStore,
    checkpoints_path_for,
    load_public_key,
    public_key_id,
    read_records,
    tail_records,
    verify_log,
)


def test_torn_garbage_tail_is_reported_then_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=2) as log:
        for i in range(5):
            log.append("t.k", {"i": i})
    with path.open("ab") as handle:  # a crash in the middle of a write
        handle.write(b'{"data":{"i":5},"hash":"ab')
    report = verify_log(path)
    assert report.failure is not None and report.failure.kind is FailureKind.TORN
    assert report.failure.line == 6
    assert report.records == 5  # everything before it checked and intact

    with AuditLog(path, checkpoint_every=2) as log:
        log.append("t.k", {"i": "after"})
    records = list(read_records(path))
    assert [r.data.get("i") for r in records[:5]] == [0, 1, 2, 3, 4]
    assert records[5].kind == "audit.recovered"
    assert records[5].data["droppedBytes"] == len(b'{"data":{"i":5},"hash":"ab')
    assert records[6].data == {"i": "after"}
    assert b'"hash":"ab' in (tmp_path / "audit.jsonl.torn").read_bytes()
    assert (tmp_path / "audit.jsonl.torn").stat().st_mode & 0o777 == 0o600  # private whatever the umask
    assert verify_log(path).ok


def test_torn_tail_that_is_a_whole_record_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0) as log:
        for i in range(3):
            log.append("t.k", {"i": i})
    data = path.read_bytes()
    path.write_bytes(data[:-1])  # only the final newline was lost
    assert verify_log(path).failure.kind is FailureKind.TORN  # type: ignore[union-attr]
    log = AuditLog(path)
    assert log.repair() is True
    log.close()
    assert path.read_bytes() == data
    assert not (tmp_path / "audit.jsonl.torn").exists()
    assert verify_log(path).ok


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from clawcore.security.audit import AuditLog
    path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    log = AuditLog(path, checkpoint_every=25, use_hmac=True)
    for i in range(count):
        log.append("proc.write", {"writer": name, "i": i, "pad": "x" * (i % 7) * 300})
    log.close()
    """
)


def test_concurrent_writers_in_several_processes(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    AuditLog(path, use_hmac=True).keystore.current_hmac()  # one HMAC key for all writers
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"w{n}", "150"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    report = verify_log(path, require_mac=True)
    assert report.ok, report.failure
    assert report.records == 600
    records = list(read_records(path))
    assert [r.seq for r in records] == list(range(1, 601))
    for n in range(4):
        mine = [r.data["i"] for r in records if r.data["writer"] == f"w{n}"]
        assert mine == list(range(150))  # each writer's records whole and in its order
    assert all(line.startswith(b"{") for line in path.read_bytes().splitlines())


def test_key_rotation_keeps_the_log_verifiable(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    keys = KeyStore(tmp_path / "keys")
    with AuditLog(path, checkpoint_every=3, use_hmac=True) as log:
        for i in range(4):
            log.append("before", {"i": i})
        first = public_key_id(keys.signing_key().public_key())
        first_pub = load_public_key(tmp_path / "keys" / f"{first}.pub")
        old, new = log.rotate_keys()
        for i in range(5):
            log.append("after", {"i": i})
    assert old == first and new != old
    assert public_key_id(keys.signing_key(create=False).public_key()) == new  # the old private key is gone
    report = verify_log(path, require_mac=True)
    assert report.ok, report.failure
    assert set(report.keys) == {old, new}
    rotation = [r for r in read_records(path) if r.kind == "audit.key_rotated"]
    assert rotation and rotation[0].data["newKey"] == new
    assert len(json.loads((tmp_path / "keys" / "hmac.json").read_text())["keys"]) == 2

    # A verifier that trusts only the first key follows the rotation it signed.
    assert verify_log(path, trusted={old: first_pub}).ok
    # One that trusts some other key accepts nothing.
    stranger = KeyStore(tmp_path / "other").signing_key().public_key()
    failure = verify_log(path, trusted={public_key_id(stranger): stranger}).failure
    assert failure is not None and failure.kind is FailureKind.BAD_SIGNATURE


def test_forged_rotation_kind_is_refused(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "audit.jsonl") as log, pytest.raises(AuditError, match="written only by"):
        log.append("audit.key_rotated", {"publicKey": "AAAA"})


def test_non_json_payload_values_are_stringified(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.append("k.v", {"path": tmp_path, "n": 1})
    [record] = read_records(path)
    assert record.data == {"path": str(tmp_path), "n": 1}


def test_tail_reads_from_the_end(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0) as log:
        for i in range(500):
            log.append("k.v", {"i": i, "blob": "y" * 400})
    assert [r.data["i"] for r in tail_records(path, 3)] == [497, 498, 499]
    assert len(tail_records(path, 1000)) == 500
    within = tail_records(path, 1000, "k.*", max_bytes=50_000)  # about a hundred lines of ~500 bytes
    assert 50 < len(within) < 110 and within[-1].data["i"] == 499


def test_writer_follows_a_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, checkpoint_every=0)
    log.append("k.v", {"i": 1})
    os.replace(path, tmp_path / "old.jsonl")
    log.append("k.v", {"i": 2})
    log.close()
    [record] = read_records(path)
    assert record.seq == 1 and record.data == {"i": 2}


def test_close_writes_a_final_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, checkpoint_every=100)
    log.append("k.v", {})
    assert not checkpoints_path_for(path).exists()
    log.close()
    assert len(checkpoints_path_for(path).read_text().splitlines()) == 1


def test_runtime_events_reach_the_chain_redacted(runtime: Any, clawcore_home: Path) -> None:
    runtime.audit("ops.test", {"note": "hello"}, session_id="s9")
    from clawcore.security.audit_plugin import close_writers

    close_writers()
    path = clawcore_home / "audit" / "audit.jsonl"
    [record] = [r for r in read_records(path) if r.kind == "ops.test"]
    assert record.session == "s9" and record.data == {"note": "hello"}
    assert verify_log(path).ok
    assert (path.stat().st_mode & 0o777) == 0o600


def test_tricky_payloads_are_written_canonically(tmp_path: Path) -> None:
    import enum

    from clawcore.security.audit import canonical_json

    class Colour(str, enum.Enum):
        RED = "red"

    path = tmp_path / "audit.jsonl"
    payloads = [
        {"quote": 'say "hi"\n\ttab \\ back', "unicode": "数据库 – ünïcødé 🙂", "ctrl": "\x00\x1f"},
        {2: "int key", 10: "sorted as text", "a": (1, 2.5, None, True)},
        {"nan": float("nan"), "inf": float("-inf"), "big": 10**30, "small": 1e-300, "neg0": -0.0},
        {"path": tmp_path, "enum": Colour.RED, "nested": {"z": [{"y": {}}], "a": []}},
    ]
    with AuditLog(path, checkpoint_every=2, use_hmac=True) as log:
        for i, payload in enumerate(payloads):
            log.append(f"kind.{i} ☃", payload, session='s "quoted" ✓')
    for line in path.read_text(encoding="utf-8").splitlines():
        assert canonical_json(json.loads(line)) == line
    assert verify_log(path, require_mac=True).ok
    records = list(read_records(path))
    assert records[1].data == {"2": "int key", "10": "sorted as text", "a": [1, 2.5, None, True]}
    assert records[2].data["nan"] == "nan" and records[3].data["enum"] == "red"


def test_config_loads_and_policy_changes_are_recorded(clawcore_home: Path, plugin_manager: Any) -> None:
    from clawcore.runtime import Runtime
    from clawcore.security.audit_plugin import close_writers

    secret = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"
    first = {"auth": {"token": secret}, "tools": {"policy": {"allow": ["read_file"]}}}
    with Runtime(clawcore_home, config=first, plugin_manager=plugin_manager) as runtime:
        runtime.audit("ops.a", {})
        runtime.audit("ops.b", {})
    with Runtime(clawcore_home, config=first, plugin_manager=plugin_manager) as runtime:
        runtime.audit("ops.c", {})
    changed = {**first, "tools": {"policy": {"allow": ["read_file", "bash"]}}}
    with Runtime(clawcore_home, config=changed, plugin_manager=plugin_manager) as runtime:
        runtime.audit("ops.d", {})
    close_writers()
    path = clawcore_home / "audit" / "audit.jsonl"
    kinds = [r.kind for r in read_records(path)]
    assert kinds == [
        "config.loaded",
        "ops.a",
        "ops.b",
        "config.loaded",
        "ops.c",
        "config.loaded",
        "policy.changed",
        "ops.d",
    ]
    [change] = [r for r in read_records(path) if r.kind == "policy.changed"]
    assert change.data["sections"] == ["tools"]
    assert secret not in path.read_text()


def test_text_no_utf8_file_can_hold_is_written_with_replacement_characters(tmp_path: Path) -> None:
    """A lone surrogate (a client's "\\ud800" escape) must not make a record vanish: it becomes U+FFFD."""
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=2) as log:
        log.append("tool.decision", {"query": "postgres \ud800", "\udc00": ["\ud83d\ude00", ("x\udfff",)]},
                   session="s\ud800")
        log.append("ops.\ud800", {})
    first, second = read_records(path)
    assert first.data == {"query": "postgres \ufffd", "\ufffd": ["\U0001f600", ["x\ufffd"]]}
    assert first.session == "s\ufffd" and second.kind == "ops.\ufffd"
    assert verify_log(path).ok


def test_a_sink_failure_of_any_kind_is_reported(runtime: Any, capsys: pytest.CaptureFixture[str]) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text for this")

    runtime.audit("ops.odd", {"value": Unprintable()})  # the runtime goes on...
    err = capsys.readouterr().err
    # ...and the lost record is named where an operator sees it.
    assert "audit record 'ops.odd' NOT written: RuntimeError: no text for this" in err


def test_a_line_nested_too_deeply_is_unreadable_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0) as log:
        log.append("ops.one", {})
    with path.open("a") as handle:
        handle.write("[" * 200_000 + "\n")
    assert [r.kind for r in read_records(path)] == ["ops.one"]
    assert [r.kind for r in tail_records(path, 5)] == ["ops.one"]
    failure = verify_log(path).failure
    assert failure is not None and failure.kind is FailureKind.MALFORMED and failure.line == 2
    assert "nested too deeply" in failure.message
    with pytest.raises(AuditError, match="unreadable \\(nested too deeply to read\\)"):
        AuditLog(path).append("ops.two", {})
    # A deep line in the checkpoints file is a damaged checkpoint, reported like any other.
    checkpoints_path_for(path).write_text("[" * 200_000 + "\n")
    failure = verify_log(path).failure
    assert failure is not None and failure.kind is FailureKind.BAD_SIGNATURE
    assert "line 1: not a checkpoint (nested too deeply to read)" in failure.message


def test_records_of_the_wrong_shape_are_skipped_by_readers(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0) as log:
        log.append("ops.one", {})
    good = path.read_text()
    record = json.loads(good)
    for field, value in [("seq", [1]), ("seq", True), ("kind", 7), ("data", [1]), ("ts", None)]:
        path.write_text(good + json.dumps({**record, field: value}) + "\n")
        assert [r.kind for r in read_records(path)] == ["ops.one"], field
        assert [r.kind for r in tail_records(path, 5)] == ["ops.one"], field
        failure = verify_log(path).failure
        assert failure is not None and failure.kind is FailureKind.MALFORMED, field


def test_tail_by_kind_reads_back_as_far_as_it_takes(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0) as log:
        log.append('ops."quoted" ✓', {"n": 1})
        log.append("ops.plain", {"n": 2})
        for i in range(2000):
            log.append("tool.decision", {"i": i, "mentions": 'ops."quoted" ✓'})
    with path.open("a") as handle:
        handle.write("[" * 200_000 + "\n")  # a damaged line is skipped, not counted
    assert [r.data["n"] for r in tail_records(path, 5, 'ops."quoted" ✓')] == [1]
    assert [r.data["n"] for r in tail_records(path, 5, "ops.*")] == [1, 2]
    assert [r.kind for r in tail_records(path, 2)] == ["tool.decision"] * 2
    assert tail_records(path, 3, "tool.decision")[-1].data["i"] == 1999
