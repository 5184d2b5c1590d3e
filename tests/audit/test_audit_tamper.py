"""Every way of tampering with the log is found, at the first bad record, with its kind."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from clawcore.security.audit import (
    GENESIS,
    AuditLog,
    FailureKind,
    canonical_json,
    checkpoints_path_for,
    export_bundle,
    load_bundle,
    read_records,
    verify_log,
)


def _rehash(obj: dict) -> dict:
    import hashlib

    body = {k: v for k, v in obj.items() if k not in ("hash", "mac")}
    obj["hash"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return obj


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "audit" / "audit.jsonl"
    with AuditLog(path, checkpoint_every=4) as log:
        for i in range(10):
            log.append("tool.decision", {"tool": "bash", "i": i}, session="s1")
    return path


def test_intact_log_verifies(log_path: Path) -> None:
    report = verify_log(log_path)
    assert report.ok, report.failure
    assert report.records == 10
    assert report.checkpoints == 3  # at 4, 8 and on close at 10
    first = json.loads(_lines(log_path)[0])
    assert first["prev"] == GENESIS and first["seq"] == 1
    assert set(first) == {"seq", "ts", "kind", "data", "prev", "hash", "session"}


def test_edited_record(log_path: Path) -> None:
    lines = _lines(log_path)
    lines[2] = lines[2].replace('"tool":"bash"', '"tool":"read_file"')
    _write(log_path, lines)
    report = verify_log(log_path)
    assert report.failure is not None
    assert report.failure.kind is FailureKind.EDITED
    assert (report.failure.line, report.failure.seq) == (3, 3)


def test_whitespace_rewrite_counts_as_edit(log_path: Path) -> None:
    lines = _lines(log_path)
    lines[1] = json.dumps(json.loads(lines[1]))  # same content, not canonical
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.EDITED and failure.line == 2


def test_edited_record_with_recomputed_hash_breaks_the_link(log_path: Path) -> None:
    lines = _lines(log_path)
    obj = json.loads(lines[2])
    obj["data"]["tool"] = "read_file"
    lines[2] = canonical_json(_rehash(obj))
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.BROKEN_LINK
    assert (failure.line, failure.seq) == (4, 4)


def test_seq_gap_when_a_record_is_deleted(log_path: Path) -> None:
    lines = _lines(log_path)
    del lines[4]
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.SEQ_GAP
    assert (failure.line, failure.seq) == (5, 6)


def test_reordered_records(log_path: Path) -> None:
    lines = _lines(log_path)
    lines[4], lines[5] = lines[5], lines[4]
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.REORDERED
    assert failure.line == 5


def test_inserted_record(log_path: Path) -> None:
    lines = _lines(log_path)
    fourth = json.loads(lines[3])
    forged = _rehash(
        {
            "seq": 5,
            "ts": fourth["ts"],
            "kind": "tool.decision",
            "data": {"tool": "bash", "i": 99},
            "prev": fourth["hash"],
        }
    )
    lines.insert(4, canonical_json(forged))
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.REORDERED  # the real seq 5 now follows a seq 5
    assert (failure.line, failure.seq) == (6, 5)


def test_bad_signature(log_path: Path) -> None:
    cps = checkpoints_path_for(log_path)
    lines = _lines(cps)
    obj = json.loads(lines[1])
    sig = bytearray(base64.b64decode(obj["sig"]))
    sig[0] ^= 1
    obj["sig"] = base64.b64encode(bytes(sig)).decode()
    lines[1] = canonical_json(obj)
    _write(cps, lines)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.BAD_SIGNATURE
    assert "checkpoint 2" in failure.message


def test_checkpoint_signed_by_unknown_key(log_path: Path) -> None:
    for pub in (log_path.parent / "keys").glob("*.pub"):
        pub.unlink()
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.BAD_SIGNATURE
    assert "not in the keyring" in failure.message


def _rewrite_chain(path: Path, change_index: int) -> None:
    """Rewrite every record after an edit so that the chain is consistent again."""
    lines = _lines(path)
    prev = GENESIS
    out = []
    for index, line in enumerate(lines):
        obj = json.loads(line)
        if index == change_index:
            obj["data"]["tool"] = "read_file"
        obj["prev"] = prev
        obj = _rehash(obj)
        prev = obj["hash"]
        out.append(canonical_json(obj))
    _write(path, out)


def test_consistent_rewrite_without_the_key_mismatches_the_checkpoints(log_path: Path) -> None:
    _rewrite_chain(log_path, change_index=1)
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.CHECKPOINT_MISMATCH
    assert failure.seq == 4  # the first checkpoint that covers the rewritten record


def test_truncation_below_the_last_checkpoint(log_path: Path) -> None:
    _write(log_path, _lines(log_path)[:6])
    failure = verify_log(log_path).failure
    assert failure is not None
    assert failure.kind is FailureKind.TRUNCATED
    assert "4 record(s) were cut off" in failure.message


def test_deleted_log_with_checkpoints_is_truncation(log_path: Path) -> None:
    log_path.unlink()
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.TRUNCATED


@pytest.mark.parametrize("checkpoints", ["deleted", "emptied", "deleted with the public keys"])
def test_deleted_log_and_checkpoints_are_truncation_while_the_keys_remain(log_path: Path, checkpoints: str) -> None:
    log_path.unlink()
    if checkpoints == "emptied":
        checkpoints_path_for(log_path).write_text("")
    else:
        checkpoints_path_for(log_path).unlink()
    if checkpoints == "deleted with the public keys":  # the private key alone still says a log was here
        for public in (log_path.parent / "keys").glob("*.pub"):
            public.unlink()
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.TRUNCATED and "gone" in failure.message
    # A writer that finds them gone begins a new chain that says so, and never verifies as whole.
    with AuditLog(log_path, checkpoint_every=4) as log:
        log.append("tool.decision", {"tool": "bash"})
    [first, second] = list(read_records(log_path))
    assert first.kind == "audit.restarted" and first.data["keys"] and second.seq == 2
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.TRUNCATED and failure.seq == 1
    # Moving the whole audit folder aside is how to start over on purpose.
    shutil.rmtree(log_path.parent)
    with AuditLog(log_path, checkpoint_every=4) as log:
        log.append("tool.decision", {"tool": "bash"})
    assert verify_log(log_path).ok and [r.kind for r in read_records(log_path)] == ["tool.decision"]


def test_reordered_checkpoints_file(log_path: Path) -> None:
    path = checkpoints_path_for(log_path)
    lines = path.read_text().splitlines()
    lines[0], lines[-1] = lines[-1], lines[0]
    path.write_text("\n".join(lines) + "\n")
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.REORDERED and "checkpoints file" in failure.message


def test_full_rewrite_by_a_key_holder_is_caught_only_by_an_export(log_path: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "export.json"
    bundle.write_text(json.dumps(export_bundle(log_path)))
    # The attacker holds the signing key: rewrites the chain and re-signs fresh checkpoints.
    _rewrite_chain(log_path, change_index=1)
    checkpoints_path_for(log_path).unlink()
    AuditLog(log_path, checkpoint_every=4).checkpoint()
    assert verify_log(log_path).ok  # the documented limit: locally it looks intact
    trusted, exported = load_bundle(bundle)
    failure = verify_log(log_path, trusted=trusted, extra_checkpoints=exported).failure
    assert failure is not None and failure.kind is FailureKind.CHECKPOINT_MISMATCH


def test_bad_and_missing_hmac(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0, use_hmac=True) as log:
        for i in range(3):
            log.append("x.y", {"i": i})
    assert verify_log(path, require_mac=True).ok
    lines = _lines(path)
    obj = json.loads(lines[1])
    key_id, _, mac = obj["mac"].partition(":")
    obj["mac"] = f"{key_id}:{'0' * len(mac)}"
    lines[1] = canonical_json(obj)
    _write(path, lines)
    failure = verify_log(path).failure
    assert failure is not None and failure.kind is FailureKind.BAD_MAC and failure.seq == 2
    obj.pop("mac")
    lines[1] = canonical_json(obj)
    _write(path, lines)
    failure = verify_log(path, require_mac=True).failure
    assert failure is not None and failure.kind is FailureKind.BAD_MAC


def test_malformed_middle_line(log_path: Path) -> None:
    lines = _lines(log_path)
    lines[3] = "{not json"
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.MALFORMED and failure.line == 4


def test_a_rewritten_chain_without_its_checkpoints_is_reported(log_path: Path) -> None:
    """Without the key a rewrite cannot be signed, so it must drop the checkpoints: verify says so."""
    lines = [json.loads(line) for line in _lines(log_path)]
    lines[3]["data"]["tool"] = "read_file"
    prev = lines[2]["hash"]
    for obj in lines[3:]:
        obj["prev"] = prev
        prev = _rehash(obj)["hash"]
    _write(log_path, [canonical_json(obj) for obj in lines])
    checkpoints_path_for(log_path).write_text("")
    report = verify_log(log_path)
    assert report.ok and report.checkpoints == 0  # the chain alone is consistent...
    assert any("no signed checkpoint covers the 10 record(s)" in w for w in report.warnings)  # ...and says so


def test_a_damaged_checkpoint_line_is_a_failure(log_path: Path) -> None:
    path = checkpoints_path_for(log_path)
    lines = _lines(path)
    _write(path, [lines[0], "not a checkpoint", *lines[1:]])
    report = verify_log(log_path)
    assert report.failure is not None and report.failure.kind is FailureKind.BAD_SIGNATURE
    assert "line 2: not a checkpoint" in report.failure.message


def test_a_record_without_its_hmac_after_hmaced_ones_is_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "audit.jsonl"
    with AuditLog(path, checkpoint_every=0, use_hmac=True) as log:
        for i in range(3):
            log.append("tool.decision", {"i": i})
    lines = [json.loads(line) for line in _lines(path)]
    del lines[2]["mac"]
    _write(path, [canonical_json(obj) for obj in lines])
    report = verify_log(path)
    assert report.failure is not None and report.failure.kind is FailureKind.BAD_MAC and report.failure.seq == 3


def test_a_lone_surrogate_spelt_as_an_escape_is_an_edit(log_path: Path) -> None:
    """No writer puts one in a line (it writes U+FFFD), so the line is not what the writer wrote."""
    lines = _lines(log_path)
    lines[2] = lines[2].replace('"tool":"bash"', '"tool":"\\ud800"')
    _write(log_path, lines)
    failure = verify_log(log_path).failure
    assert failure is not None and failure.kind is FailureKind.EDITED and failure.line == 3


def test_an_export_nested_too_deeply_is_no_export(tmp_path: Path) -> None:
    from clawcore.security.audit import AuditError

    export = tmp_path / "export.json"
    export.write_text("[" * 200_000)
    with pytest.raises(AuditError, match="is not a checkpoint export: nested too deeply to read"):
        load_bundle(export)
