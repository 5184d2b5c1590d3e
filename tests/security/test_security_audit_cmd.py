"""``clawcore security audit``: the deployment checklist as a command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from clawcore.cli import main
from clawcore.security.audit import AuditLog


@pytest.fixture
def home(clawcore_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (
        "CLAWCORE_GATEWAY_TOKEN",
        "CLAWCORE_GATEWAY_PASSWORD",
        "CLAWCORE_LOAD_PLUGINS",
        "CLAWCORE_DISABLE_PLUGINS",
    ):
        monkeypatch.delenv(name, raising=False)
    os.chmod(clawcore_home, 0o700)
    return clawcore_home


def _config(home: Path, data: dict[str, Any]) -> Path:
    path = home / "clawcore.yaml"
    path.write_text(yaml.safe_dump(data))
    os.chmod(path, 0o600)
    return path


def _audit(capsys: pytest.CaptureFixture[str], home: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["--home", str(home), "security", "audit", "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _by_check(report: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["check"] == check]


def test_gateway_beyond_loopback_without_auth_is_critical(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(home, {"gateway": {"host": "0.0.0.0"}})
    code, report = _audit(capsys, home)
    assert code == 1
    [finding] = _by_check(report, "gateway.auth")
    assert finding["severity"] == "critical"


def test_weak_token_and_plain_secret(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {"auth": {"token": "hunter2"}})
    code, report = _audit(capsys, home)
    [weak] = _by_check(report, "gateway.token")
    assert weak["severity"] == "medium"  # on loopback: weak, not yet exposed
    [plain] = _by_check(report, "secrets.config")
    assert "auth.token" in plain["message"] and "CLAWCORE_GATEWAY_TOKEN" in plain["fix"]
    assert "hunter2" not in json.dumps(report)
    assert code == (1 if report["critical"] else 0)


def test_weak_token_exposed_is_critical(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(home, {"gateway": {"host": "0.0.0.0"}})
    monkeypatch.setenv("CLAWCORE_GATEWAY_TOKEN", "changeme")
    code, report = _audit(capsys, home)
    assert code == 1
    assert _by_check(report, "gateway.token")[0]["severity"] == "critical"
    assert not _by_check(report, "secrets.config")  # from the environment, not the file


def test_fix_permissions(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(home, {})
    os.chmod(config, 0o666)
    with AuditLog(home / "audit" / "audit.jsonl") as log:
        log.append("ops.note", {})
    key = home / "audit" / "keys" / "signing.pem"
    os.chmod(key, 0o644)
    code, report = _audit(capsys, home)
    assert code == 1
    flagged = {f["path"]: f["severity"] for f in _by_check(report, "permissions")}
    assert flagged[str(config)] == "critical" and flagged[str(key)] == "critical"

    code, report = _audit(capsys, home, "--fix")
    assert any(str(key) in change and "chmod 600" in change for change in report["fixed"])
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert not _by_check(report, "permissions")
    assert code == 0


def test_a_home_clawcore_creates_passes_its_own_permission_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CLAWCORE_GATEWAY_TOKEN", "x" * 40)
    home = tmp_path / "new" / "home"
    old = os.umask(0o022)  # the usual umask, whatever the test runner's
    try:
        assert main(["--home", str(home), "memory", "index"]) == 0
        assert main(["--home", str(home), "audit", "record", "ops.note"]) == 0
        capsys.readouterr()
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
        _, report = _audit(capsys, home)
    finally:
        os.umask(old)
    assert not _by_check(report, "permissions"), report


def test_public_keys_linked_configs_transcripts_and_every_credential_are_checked(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with AuditLog(home / "audit" / "audit.jsonl") as log:
        log.append("ops.note", {})
    [public] = (home / "audit" / "keys").glob("*.pub")
    os.chmod(public, 0o646)  # a replaced public key would be trusted by `audit verify`
    elsewhere = tmp_path / "elsewhere.yaml"  # the config is a link: the file it leads to holds the secrets
    elsewhere.write_text("auth:\n  password: hunter2-long-pass\nmodels:\n  openai:\n"
                         "    model: gpt-4o  # token=S3cr3tPassw0rd99xQ\n")
    os.chmod(elsewhere, 0o644)
    (home / "clawcore.yaml").symlink_to(elsewhere)
    (home / "sessions").mkdir(mode=0o700)
    transcript = home / "sessions" / "s1.jsonl"
    transcript.write_text("{}\n")
    os.chmod(transcript, 0o644)
    _, report = _audit(capsys, home)
    flagged = {f["path"]: f["severity"] for f in _by_check(report, "permissions")}
    assert flagged[str(public)] == "critical"
    assert flagged[str(home / "clawcore.yaml")] == "high" and flagged[str(transcript)] == "high"
    messages = [f["message"] for f in _by_check(report, "secrets.config")]
    assert any("auth.password" in m for m in messages) and any("line(s) 5" in m for m in messages)
    assert "S3cr3tPassw0rd99" not in json.dumps(report)


def test_a_policy_group_no_tool_belongs_to_is_reported(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {"tools": {"policy": {"profile": "minimal", "deny": ["group:runtim", "group:runtime"]}}})
    _, report = _audit(capsys, home)
    [typo] = [f for f in _by_check(report, "tools.policy") if "group:runtim," in f["message"]]
    assert typo["severity"] == "high" and "group:runtime" in typo["fix"]


def test_broken_audit_chain_is_critical(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {})
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path) as log:
        for i in range(3):
            log.append("ops.note", {"i": i})
    path.write_text(path.read_text().replace('"i":1', '"i":7'))
    code, report = _audit(capsys, home)
    assert code == 1
    [finding] = _by_check(report, "audit.chain")
    assert finding["severity"] == "critical" and "edited" in finding["message"]


def test_torn_audit_log_is_high_and_repairable(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {})
    path = home / "audit" / "audit.jsonl"
    with AuditLog(path) as log:
        log.append("ops.note", {})
    with path.open("a") as handle:
        handle.write('{"seq":2,"ts"')
    _, report = _audit(capsys, home)
    [finding] = _by_check(report, "audit.chain")
    assert finding["severity"] == "high" and "--repair" in finding["fix"]


def test_bash_without_confirmation(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {"tools": {"policy": {"profile": "coding"}}})
    _, report = _audit(capsys, home)
    [finding] = _by_check(report, "tools.policy")
    assert finding["severity"] == "medium" and "checked and sandboxed" in finding["message"]
    _config(home, {"tools": {"policy": {"allow": ["bash"]}}, "sandbox": {"isolation": "none"}})
    _, report = _audit(capsys, home)
    [finding] = _by_check(report, "tools.policy")
    assert finding["severity"] == "high" and "unisolated" in finding["message"]
    _config(home, {})
    _, report = _audit(capsys, home)
    assert not _by_check(report, "tools.policy")


def test_a_disabled_defence_builtin_is_critical(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {"plugins": {"disable": ["policy"]}})
    code, report = _audit(capsys, home)
    [finding] = _by_check(report, "plugins")
    assert finding["severity"] == "critical" and "'policy' is disabled" in finding["message"]
    assert code != 0
    _config(home, {})
    _, report = _audit(capsys, home)
    assert not _by_check(report, "plugins")


def test_weakened_docker_options(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clawcore.cli.state import build_plugin_manager

    if build_plugin_manager(home).get_plugin("sandbox_docker") is None:
        pytest.skip("clawcore-sandbox-docker is not installed")
    _config(
        home,
        {
            "sandbox": {
                "backend": "docker",
                "isolation": "none",
                "docker": {"networkMode": "bridge", "readOnlyRoot": False, "fallback": "local"},
            }
        },
    )
    _, report = _audit(capsys, home)
    messages = " ".join(f["message"] for f in report["findings"] if f["check"].startswith("sandbox"))
    for expected in ("networkMode", "readOnlyRoot", "fallback", "isolation is none"):
        assert expected in messages


def test_prism_required_fix(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clawcore.cli.state import build_plugin_manager

    config = _config(home, {"workspace": "workspace"})
    if build_plugin_manager(home).get_plugin("prism") is None:
        _, report = _audit(capsys, home)
        assert _by_check(report, "prism")[0]["severity"] == "high"
        return
    _, report = _audit(capsys, home)
    assert _by_check(report, "prism")[0]["fixable"] is True
    _, report = _audit(capsys, home, "--fix")
    assert yaml.safe_load(config.read_text())["plugins"]["required"] == ["prism"]
    assert (home / "clawcore.yaml.bak").exists()
    assert not _by_check(report, "prism")


def test_table_output(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {"gateway": {"host": "0.0.0.0"}})
    code = main(["--home", str(home), "security", "audit"])
    captured = capsys.readouterr()
    assert code == 1
    assert "critical" in captured.out and "gateway.auth" in captured.out
    assert "1 critical finding" in captured.err


def _outside(tmp_path: Path, name: str, mode: int) -> Path:
    victim = tmp_path / "outside" / name
    victim.parent.mkdir(exist_ok=True)
    victim.write_text("not clawcore's\n")
    os.chmod(victim, mode)
    return victim


def _mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fix_follows_no_link_out_of_the_home(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {})
    with AuditLog(home / "audit" / "audit.jsonl") as log:
        log.append("ops.note", {})
    links = {
        home / "sessions" / "evil.jsonl": _outside(tmp_path, "v1", 0o777),
        home / "credentials" / "token": _outside(tmp_path, "v2", 0o644),
        home / "audit" / "keys" / "extra.pem": _outside(tmp_path, "v3", 0o666),
        home / "audit" / "keys" / "other.pub": _outside(tmp_path, "v4", 0o666),
    }
    for folder in ("sessions", "credentials"):
        (home / folder).mkdir(mode=0o700)
    for link, victim in links.items():
        link.symlink_to(victim)
    code, report = _audit(capsys, home, "--fix")
    for link, victim in links.items():
        assert _mode_of(victim) in (0o777, 0o644, 0o666), victim  # untouched
        [finding] = [f for f in _by_check(report, "permissions") if f["path"] == str(link)]
        assert f"is a link to {victim}" in finding["message"] and not finding["fixable"]
        assert finding["severity"] == "critical"
        assert "--fix follows no link" in finding["fix"]
    assert _mode_of(links[home / "sessions" / "evil.jsonl"]) == 0o777
    assert "mode 777" in json.dumps(report) and code == 1
    assert not any(str(tmp_path / "outside") in change for change in report["fixed"])


def test_fix_changes_nothing_behind_a_linked_folder_or_a_hard_link(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {})
    elsewhere = tmp_path / "outside" / "sessions"
    elsewhere.mkdir(parents=True, mode=0o700)
    transcript = elsewhere / "s1.jsonl"
    transcript.write_text("{}\n")
    os.chmod(transcript, 0o644)
    (home / "sessions").symlink_to(elsewhere)
    (home / "credentials").mkdir(mode=0o700)
    shared = _outside(tmp_path, "shared", 0o644)
    os.link(shared, home / "credentials" / "hard")
    code, report = _audit(capsys, home, "--fix")
    assert _mode_of(transcript) == 0o644 and _mode_of(shared) == 0o644
    [behind] = [f for f in _by_check(report, "permissions") if f["path"] == str(home / "sessions" / "s1.jsonl")]
    assert not behind["fixable"] and behind["severity"] == "high"
    [linked] = [f for f in _by_check(report, "permissions") if f["path"] == str(home / "sessions")]
    assert linked["severity"] == "info" and str(elsewhere) in linked["message"]
    assert any("2 hard links" in change for change in report["fixed"])
    assert code == 1  # the hard-linked credential is still readable by others


def test_a_linked_home_or_index_is_judged_by_its_target(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CLAWCORE_GATEWAY_TOKEN", "x" * 40)
    real = tmp_path / "real-home"
    (real / "workspace").mkdir(parents=True)
    os.chmod(real, 0o777)
    index = tmp_path / "real-index"
    index.mkdir(mode=0o755)
    os.chmod(index, 0o755)
    (real / "index").symlink_to(index)
    home = tmp_path / "home"
    home.symlink_to(real)
    code, report = _audit(capsys, home, "--fix")
    assert _mode_of(real) == 0o777 and _mode_of(index) == 0o755
    by_path = {f["path"]: f for f in _by_check(report, "permissions")}
    assert by_path[str(home)]["severity"] == "critical" and not by_path[str(home)]["fixable"]
    assert f"{home} is a link to {real}, which is writable" in by_path[str(home)]["message"]
    assert by_path[str(home / "index")]["severity"] == "medium"
    assert "mode 755" in by_path[str(home / "index")]["message"]
    assert code == 1
    os.chmod(real, 0o700)
    _, report = _audit(capsys, home)
    [said] = [f for f in _by_check(report, "permissions") if f["path"] == str(home)]
    assert said["severity"] == "info" and "is a link to" in said["message"]


def test_fix_clears_group_and_other_bits_and_keeps_the_owners(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(home, {})
    os.chmod(config, 0o444)  # read-only on purpose
    (home / "sessions").mkdir()
    os.chmod(home / "sessions", 0o750)
    code, report = _audit(capsys, home, "--fix")
    assert _mode_of(config) == 0o400 and _mode_of(home / "sessions") == 0o700
    assert f"chmod 400 {config} (was 444)" in report["fixed"]
    assert f"chmod 700 {home / 'sessions'} (was 750)" in report["fixed"]
    assert code == 0


def test_a_typo_in_the_allow_list_is_an_info_finding(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clawcore.cli.security_cmd import SEVERITIES

    _config(home, {"tools": {"policy": {"allow": ["group:runtim"]}}})
    _, report = _audit(capsys, home)
    [typo] = [f for f in _by_check(report, "tools.policy") if "group:runtim," in f["message"]]
    assert typo["severity"] == "info"  # allows nothing more than before: a notice
    assert {f["severity"] for f in report["findings"]} <= set(SEVERITIES)


def test_a_deep_credentials_tree_is_checked_without_recursion(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(home, {})
    (home / "credentials").mkdir(mode=0o700)
    fd = os.open(home / "credentials", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1100):
            os.mkdir("d", 0o700, dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("key", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    try:
        code, report = _audit(capsys, home)
    finally:
        subprocess.run(["rm", "-rf", str(home / "credentials" / "d")], check=True)
    assert code == 1
    assert any(f["path"].endswith("/d/key") and f["severity"] == "critical" for f in _by_check(report, "permissions"))
