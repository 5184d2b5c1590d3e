"""`clawcore sandbox run` and `clawcore sandbox info`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clawcore.cli import main


@pytest.fixture
def coding_home(clawcore_home: Path) -> Path:
    (clawcore_home / "clawcore.yaml").write_text("tools:\n  policy:\n    profile: coding\n")
    return clawcore_home


def test_run_prints_output_and_exit_code(coding_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "run", "--", "echo hello; echo oops >&2; exit 3"]) == 3
    out, err = capsys.readouterr()
    assert out == "hello\n"
    assert "oops" in err and "[exit code 3; backend local]" in err


def test_run_joins_several_words_and_runs_in_the_workspace(coding_home: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "run", "--", "printf", "%s|", "a b", "c"]) == 0
    assert capsys.readouterr().out == "a b|c|"
    assert main(["sandbox", "run", "--", "pwd"]) == 0
    assert capsys.readouterr().out.strip().endswith("workspace")


def test_denied_command_is_not_run(coding_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = coding_home / "workspace" / "ran"
    assert main(["sandbox", "run", "--", f"touch {marker}; rm -rf /"]) == 126
    assert capsys.readouterr().err.startswith("denied:")
    assert not marker.exists()
    events = [json.loads(line) for line in (coding_home / "audit" / "audit.jsonl").read_text().splitlines()
              if line.strip()] if (coding_home / "audit" / "audit.jsonl").exists() else []
    if events:  # the audit sink is installed: the denial is recorded
        assert any("rm -rf" in json.dumps(e) for e in events)


def test_unknown_backend_is_one_line_error(coding_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "run", "--backend", "nope", "--", "true"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "nope" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("timeout", ["0", "-5", "nan", "1e9"])
def test_a_timeout_out_of_range_is_a_usage_error(coding_home: Path, capsys: pytest.CaptureFixture[str],
                                                 timeout: str) -> None:
    marker = coding_home / "workspace" / "ran"
    assert main(["sandbox", "run", "--timeout", timeout, "--", f"touch {marker}"]) == 2
    assert "Invalid value for '--timeout'" in capsys.readouterr().err
    assert not marker.exists()


def test_info_describes_the_boundary(coding_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("backend: local") and "isolation" in out
    assert "web_fetch: any public host; private network denied" in out


def test_output_is_exact_into_a_pipe_and_cannot_drive_a_terminal(coding_home: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import pty
    import subprocess
    import sys

    title = r"printf 'a\033]0;pwned\007b\033[31mred\n'"
    assert main(["sandbox", "run", "--", title]) == 0
    assert capsys.readouterr().out == "a\x1b]0;pwned\x07b\x1b[31mred\n"  # a pipe gets what the command wrote
    leader, follower = pty.openpty()
    env = {**os.environ, "CLAWCORE_HOME": str(coding_home)}
    done = subprocess.run([str(Path(sys.executable).with_name("clawcore")), "sandbox", "run", "--", title],
                          stdout=follower, stderr=subprocess.DEVNULL, env=env, timeout=60, check=False)
    os.close(follower)
    seen = os.read(leader, 4096).decode()
    os.close(leader)
    assert done.returncode == 0 and "a\\u001b]0;pwned\\u0007b" in seen and "\x1b" not in seen
