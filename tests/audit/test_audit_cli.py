"""``clawcore audit``: verify, tail, show, record, checkpoint --export, rotate-keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from clawcore.cli import main
from clawcore.security.audit import AuditLog, read_records


@pytest.fixture
def home(clawcore_home: Path) -> Path:
    (clawcore_home / "clawcore.yaml").write_text(yaml.safe_dump({"audit": {"checkpointEvery": 5}}))
    return clawcore_home


def _run(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--home", str(home), "audit", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_record_then_verify(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, home, "record", "deploy.release", "--data", '{"version": "1.2.3"}')
    assert code == 0 and "deploy.release" in out
    code, out, _ = _run(
        capsys,
        home,
        "record",
        "ops.login",
        "--data",
        '{"password": "pa55word-very-secret"}',
        "--session",
        "ops",
    )
    assert code == 0
    records = list(read_records(home / "audit" / "audit.jsonl"))
    assert [r.kind for r in records] == ["config.loaded", "deploy.release", "config.loaded", "ops.login"]
    assert "pa55word-very-secret" not in json.dumps(records[3].data)  # redacted like every event
    assert records[3].session == "ops"
    code, out, _ = _run(capsys, home, "verify")
    assert code == 0 and out.startswith("ok: 4 records")


def test_a_credential_in_the_kind_or_session_is_redacted(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = "ghp_N6VEq8ZtR2mK9pLw3zXc7vB1nY4hJ6dF0sA5"
    code, _, _ = _run(capsys, home, "record", f"x.{token}", "--session", token)
    assert code == 0
    assert token not in (home / "audit" / "audit.jsonl").read_text()
    code, out, _ = _run(capsys, home, "verify")
    assert code == 0, out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["record", "x.y", "--data", "{nope"], "--data is not JSON"),
        (["record", "x.y", "--data", "[1]"], "must be a JSON object"),
        (["record", "x.y", "--data", '{"n": NaN}'], "NaN is not a JSON number"),
        (["record", "x.y", "--data", '{"a": {"n": -Infinity}}'], "-Infinity is not a JSON number"),
        (["record", "x.y", "--data", '{"to": "ops", "to": "all"}'], "the key 'to' is given twice"),
        (["record", "audit.key_rotated"], "not allowed"),
    ],
)
def test_record_rejects_bad_input(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _, err = _run(capsys, home, *args)
    assert code == 1 and message in err
    assert not (home / "audit" / "audit.jsonl").exists() or not list(
        read_records(home / "audit" / "audit.jsonl")
    )


def test_record_with_the_audit_plugin_disabled_says_so(
        home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWCORE_DISABLE_PLUGINS", "audit")
    (home / "clawcore.yaml").unlink()  # its audit section has no schema without the plugin
    code, _, err = _run(capsys, home, "record", "ops.note")
    assert code == 1, err
    assert err.strip() == ("error: the audit plugin is disabled (plugins.disable or CLAWCORE_DISABLE_PLUGINS); "
                           "nothing would be written")


def test_verify_reports_tampering_with_exit_1(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path, keys=home / "audit" / "keys", checkpoint_every=5) as log:
        for i in range(7):
            log.append("ops.note", {"i": i})
    lines = path.read_text().splitlines()
    del lines[2]
    path.write_text("\n".join(lines) + "\n")
    code, _, err = _run(capsys, home, "verify")
    assert code == 1
    assert "seq-gap: line 3 (seq 4)" in err
    code, out, _ = _run(capsys, home, "verify", "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["failure"]["kind"] == "seq-gap"


def test_verify_repair_of_a_torn_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path, keys=home / "audit" / "keys") as log:
        log.append("ops.note", {})
    with path.open("a") as handle:
        handle.write('{"seq":2,')
    code, _, err = _run(capsys, home, "verify")
    assert code == 1 and "torn" in err
    code, out, err = _run(capsys, home, "verify", "--repair")
    assert code == 0 and "repaired" in err and out.startswith("ok: 2 records")


def test_tail_and_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "audit" / "audit.jsonl"
    now = time.time()
    with AuditLog(path, keys=home / "audit" / "keys") as log:
        log.append("tool.decision", {"tool": "bash"}, ts=now - 7200)
        log.append("gateway.auth", {"outcome": "failure"}, ts=now - 60)
        log.append("tool.executed", {"tool": "bash"}, session="s1", ts=now - 30)
    code, out, _ = _run(capsys, home, "tail", "-n", "2")
    assert code == 0
    assert [line.split()[2] for line in out.splitlines()] == ["gateway.auth", "tool.executed"]
    code, out, _ = _run(capsys, home, "show", "--kind", "tool.*", "--json")
    assert [json.loads(line)["kind"] for line in out.splitlines()] == ["tool.decision", "tool.executed"]
    code, out, _ = _run(capsys, home, "show", "--since", "1h")
    assert [line.split()[2] for line in out.splitlines()] == ["gateway.auth", "tool.executed"]
    code, out, _ = _run(capsys, home, "show", "--session", "s1")
    assert len(out.splitlines()) == 1
    code, _, err = _run(capsys, home, "show", "--since", "yesterday-ish")
    assert code == 2 and "neither a duration" in err


def test_tail_follow(home: Path) -> None:
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path, keys=home / "audit" / "keys") as log:
        log.append("ops.first", {})
    env = {**os.environ, "CLAWCORE_HOME": str(home), "CLAWCORE_LOAD_PLUGINS": ""}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from clawcore.cli import main; sys.exit(main())",
            "audit",
            "tail",
            "-f",
            "-n",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert "ops.first" in proc.stdout.readline()
        with AuditLog(path, keys=home / "audit" / "keys") as log:
            log.append("ops.second", {})
        assert "ops.second" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_checkpoint_export_detects_a_rewrite_with_a_planted_key(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path, keys=home / "audit" / "keys", checkpoint_every=0) as log:
        for i in range(3):
            log.append("ops.note", {"i": i})
    export = tmp_path / "elsewhere.json"
    code, _, err = _run(capsys, home, "checkpoint", "--export", str(export))
    assert code == 0 and "exported" in err
    bundle: dict[str, Any] = json.loads(export.read_text())
    assert bundle["checkpoints"][-1]["size"] == 3 and bundle["publicKeys"]
    records = list(read_records(path))
    # Deleting the log and its checkpoints to write another shows: the keyring outlives them.
    path.unlink()
    (home / "audit" / "audit.checkpoints.jsonl").write_text("")
    code, _, err = _run(capsys, home, "verify")
    assert code == 1 and "truncated" in err and "the log and its checkpoints are gone" in err
    with AuditLog(path, keys=home / "audit" / "keys", checkpoint_every=0) as log:
        log.append("ops.note", {"i": "a fresh start"})
    code, _, err = _run(capsys, home, "verify")
    assert code == 1 and "truncated" in err and "the log was begun again" in err
    # Someone who can write the keys folder writes a changed history elsewhere with a key of their own,
    # moves it into place and adds the key to the keyring: locally it verifies; only the export shows it.
    scratch = tmp_path / "scratch"
    with AuditLog(scratch / "audit.jsonl", keys=scratch / "keys", checkpoint_every=0) as log:
        for record in records:
            log.append(record.kind, {"i": "nothing happened"} if record.seq == 2 else dict(record.data))
    for name in ("audit.jsonl", "audit.checkpoints.jsonl"):
        (scratch / name).replace(home / "audit" / name)
    for public in (scratch / "keys").glob("*.pub"):
        public.replace(home / "audit" / "keys" / public.name)
    assert _run(capsys, home, "verify")[0] == 0
    code, _, err = _run(capsys, home, "verify", "--checkpoints", str(export))
    assert code == 1 and "bad-signature" in err and "not trusted" in err


def test_rotate_keys_and_pinned_verify(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, home, "record", "ops.note")
    first_pub = next((home / "audit" / "keys").glob("*.pub"))
    code, out, _ = _run(capsys, home, "rotate-keys")
    assert code == 0 and "rotated:" in out
    _run(capsys, home, "record", "ops.note")
    code, out, _ = _run(capsys, home, "verify", "--public-key", str(first_pub))
    assert code == 0, out
    assert len(list((home / "audit" / "keys").glob("*.pub"))) == 2


def test_an_audit_path_under_tilde_is_in_the_user_home(
    clawcore_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (clawcore_home / "clawcore.yaml").write_text(
        yaml.safe_dump({"audit": {"path": "~/logs/audit.jsonl", "keys": "~/logs/keys"}}))
    code, _, _ = _run(capsys, clawcore_home, "record", "deploy.release")
    assert code == 0
    assert [record.kind for record in read_records(tmp_path / "user" / "logs" / "audit.jsonl")][-1] == "deploy.release"
    assert (tmp_path / "user" / "logs" / "keys").is_dir()
    assert not (clawcore_home / "~").exists()


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLAWCORE_HOME": str(home), "CLAWCORE_LOAD_PLUGINS": ""}
    return subprocess.run([sys.executable, "-c", "import sys; from clawcore.cli import main; sys.exit(main())",
                           *args], check=False, capture_output=True, text=True, env=env, timeout=60)


def test_a_lone_surrogate_in_a_record_is_written_and_shown(home: Path) -> None:
    done = _cli(home, "audit", "record", "ops.note", "--data", '{"a": "\\ud800", "b": "\\ud83d\\ude00"}')
    assert done.returncode == 0 and done.stdout.startswith("recorded: seq 2 ops.note"), done.stderr
    shown = _cli(home, "audit", "show", "--kind", "ops.*")
    assert shown.returncode == 0 and shown.stdout.rstrip().endswith('{"a": "\ufffd", "b": "\U0001f600"}')
    assert _cli(home, "audit", "verify").returncode == 0


def test_a_line_nested_too_deeply_is_reported_in_one_line(home: Path) -> None:
    assert _cli(home, "audit", "record", "ops.note").returncode == 0
    with (home / "audit" / "audit.jsonl").open("a") as handle:
        handle.write("[" * 200_000 + "\n")
    verify = _cli(home, "audit", "verify")
    assert verify.returncode == 1
    assert verify.stderr.strip().endswith("malformed: line 3: not an audit record (nested too deeply to read)")
    for args in (["tail"], ["show"]):
        listed = _cli(home, "audit", *args)
        assert listed.returncode == 0 and "ops.note" in listed.stdout and not listed.stderr
    record = _cli(home, "audit", "record", "ops.after")
    assert record.returncode == 1 and "Traceback" not in record.stderr
    assert "audit record 'ops.after' NOT written: the last record of" in record.stderr
    assert "unreadable (nested too deeply to read)" in record.stderr


def test_show_escapes_terminal_control_sequences(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path, keys=home / "audit" / "keys") as log:
        log.append("tool.executed", {"output": "\x1b]0;owned\x07\x1b[31mred\u202e\x9b2J"}, session="s\x1b[2J")
    for args in (["show"], ["show", "--json"], ["tail"], ["tail", "--json"]):
        code, out, _ = _run(capsys, home, *args)
        assert code == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\x9b" not in out
        assert "\\u001b]0;owned\\u0007" in out and "\\u202e\\u009b2J" in out
    code, out, _ = _run(capsys, home, "show", "--json")
    assert json.loads(out)["data"]["output"] == "\x1b]0;owned\x07\x1b[31mred\u202e\x9b2J"  # still the same JSON


@pytest.mark.parametrize("since", ["0001-01-01", "0001-01-01T00:00+05:00", "9999-12-31T23:59"])
def test_show_since_any_date(home: Path, capsys: pytest.CaptureFixture[str], since: str) -> None:
    with AuditLog(home / "audit" / "audit.jsonl", keys=home / "audit" / "keys") as log:
        log.append("ops.note", {})
    code, out, err = _run(capsys, home, "show", "--since", since)
    assert code == 0 and not err
    assert ("ops.note" in out) is since.startswith("0001")
