"""`clawcore secrets scan` on files, folders and standard input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from clawcore.cli import main

TOKEN = "ghp_" + "Zq8Lw2Xv9Kp4Rt7Ny3Md6Bf1Hs5Jc0Ge2Ua8"


def test_scan_folder_reports_masked_findings(clawcore_home: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "settings.py").write_text(f"DEBUG = True\nGITHUB_TOKEN = '{TOKEN}'\n")
    (project / "README.md").write_text("nothing to see\n")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text(f"token={TOKEN}\n")
    assert main(["secrets", "scan", str(project)]) == 1
    out, err = capsys.readouterr()
    assert "settings.py:2: github-token: ghp_***redacted***" in out
    assert TOKEN not in out + err
    assert ".git" not in out
    assert "1 finding(s) in 2 file(s)" in err


def test_scan_stdin_json_and_clean_exit(clawcore_home: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(f"line one\nAuthorization: token {TOKEN}\n"))
    assert main(["secrets", "scan", "--json", "-"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["path"] == "-" and rows[0]["line"] == 2 and rows[0]["rule"] == "github-token"
    monkeypatch.setattr("sys.stdin", io.StringIO("nothing secret here\n"))
    assert main(["secrets", "scan", "-"]) == 0


def test_missing_path_is_one_line_error(clawcore_home: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["secrets", "scan", str(tmp_path / "nope")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1
