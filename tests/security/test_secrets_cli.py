"""`clawcore secrets scan` on files, folders and standard input."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
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
    assert main(["secrets", "scan", str(tmp_path / "nope")]) == 2  # not 1: that means "found"
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1


def _cli(clawcore_home: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``clawcore`` (as the function ``clawcore`` in ``script``) run by bash, for its process substitution."""
    clawcore = shlex.join([sys.executable, "-c", "import sys; from clawcore.cli import main; sys.exit(main())"])
    return subprocess.run(["bash", "-c", f"clawcore() {{ {clawcore} \"$@\"; }}; {script}"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "CLAWCORE_HOME": str(clawcore_home), "CLAWCORE_LOAD_PLUGINS": ""})


def test_a_fifo_target_is_read_as_a_stream(clawcore_home: Path, tmp_path: Path) -> None:
    leak = tmp_path / "a.txt"
    leak.write_text(f"GITHUB_TOKEN={TOKEN}\n")
    done = _cli(clawcore_home, f"clawcore secrets scan <(cat {shlex.quote(str(leak))})")
    assert done.returncode == 1, done.stderr
    assert "github-token" in done.stdout and TOKEN not in done.stdout + done.stderr
    clean = _cli(clawcore_home, "clawcore secrets scan <(echo nothing here)")
    assert clean.returncode == 0 and "0 finding(s) in 1 file(s)" in clean.stderr


def test_what_cannot_be_scanned_is_a_warning_and_exit_2(clawcore_home: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "ok.txt").write_text("nothing to see\n")
    os.mkfifo(project / "pipe")  # inside a folder: never opened, so the scan cannot hang on it
    assert main(["secrets", "scan", str(project)]) == 2
    err = capsys.readouterr().err
    assert f"warning: {project / 'pipe'}: not a regular file" in err
    assert "0 finding(s) in 1 file(s); 1 not scanned" in err
    (project / "leak.env").write_text(f"TOKEN={TOKEN}\n")
    assert main(["secrets", "scan", str(project)]) == 1  # a finding outranks what was not scanned
    capsys.readouterr()
    # A file that fails to read, whoever runs the test (reading offset 0 of this file is an I/O error).
    assert main(["secrets", "scan", "/proc/self/mem"]) == 2
    err = capsys.readouterr().err
    assert "warning: /proc/self/mem: cannot be read" in err and len(err.splitlines()) == 2


def _nest(root: Path, name: str, depth: int, leaf: str = "", text: str = "") -> None:
    """``depth`` folders called ``name`` inside each other under ``root``, made by descriptor, not by path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        if leaf:
            out = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
            os.write(out, text.encode())
            os.close(out)
    finally:
        os.close(fd)


def test_a_folder_too_deep_to_open_is_reported(clawcore_home: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _nest(tmp_path / "", "d" * 200, 25)  # deeper than PATH_MAX: even root cannot list it by name
    try:
        assert main(["secrets", "scan", str(tmp_path)]) == 2
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / ("d" * 200))], check=True)
    err = capsys.readouterr().err
    assert "cannot be read (File name too long); not scanned" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_or_folder_is_not_clean(clawcore_home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    (project / "closed").mkdir(parents=True)
    (project / "secret.txt").write_text(f"TOKEN={TOKEN}\n")
    os.chmod(project / "secret.txt", 0)
    os.chmod(project / "closed", 0)
    try:
        assert main(["secrets", "scan", str(project)]) == 2
    finally:
        os.chmod(project / "closed", 0o700)
    err = capsys.readouterr().err
    assert "secret.txt: cannot be read" in err and "closed: cannot be read" in err


def test_a_thousand_levels_deep(clawcore_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _nest(tmp_path, "d", 1000, "x.env", f"TOKEN={TOKEN}\n")
    try:
        assert main(["secrets", "scan", str(tmp_path)]) == 1
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)
    assert "x.env:1: github-token" in capsys.readouterr().out


def test_utf16_text_is_scanned(clawcore_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for codec in ("utf-16", "utf-16-be", "utf-32"):
        path = tmp_path / f"{codec}.txt"
        data = f"GITHUB_TOKEN={TOKEN}\r\n".encode(codec)
        path.write_bytes(data if codec != "utf-16-be" else b"\xfe\xff" + data)
    assert main(["secrets", "scan", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()] == [
        str(tmp_path / f"{c}.txt") for c in ("utf-16-be", "utf-16", "utf-32")]
