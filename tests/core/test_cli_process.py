"""The console script: it ends cleanly on SIGTERM and SIGHUP, and its demo lays out folders as a user needs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLAWCORE = str(Path(sys.executable).with_name("clawcore"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_a_long_command_through_its_exit_handlers(tmp_path: Path, signum: int) -> None:
    (tmp_path / "workspace" / "memory").mkdir(parents=True)
    marker = tmp_path / "exit-handlers-ran"
    # A plugin-free run whose exit handler leaves a mark: what the docker sandbox's clean-up relies on.
    code = ("import atexit, pathlib, sys; from clawcore.cli import main; "
            f"atexit.register(pathlib.Path({str(marker)!r}).touch); sys.argv[0] = 'clawcore'; sys.exit(main())")
    proc = subprocess.Popen([sys.executable, "-c", code, "memory", "watch", "--interval", "0.2"],
                            env={**os.environ, "CLAWCORE_HOME": str(tmp_path), "CLAWCORE_LOAD_PLUGINS": ""},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert marker.exists()


def test_the_demo_makes_a_private_home_and_a_workspace_others_may_read(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's user (the docker sandbox) reads the workspace; nobody else reads the home."""
    import stat

    from clawcore.cli import main

    monkeypatch.setenv("CLAWCORE_LOAD_PLUGINS", "")
    home = tmp_path / "home"
    old = os.umask(0o022)
    try:
        assert main(["--home", str(home), "demo"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "workspace").stat().st_mode) == 0o755
    assert stat.S_IMODE((home / "workspace" / "memory").stat().st_mode) == 0o755
