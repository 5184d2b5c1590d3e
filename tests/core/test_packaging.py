"""The distributions install on their own: the core alone works, a plugin adds itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, **kwargs)


@pytest.mark.slow
def test_core_alone_then_one_plugin(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]

    installed = run([*pip, str(ROOT)])
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {**os.environ, "CLAWCORE_HOME": str(tmp_path / "home")}
    env.pop("CLAWCORE_LOAD_PLUGINS", None)
    clawcore = str(env_dir / "bin" / "clawcore")

    listed = run([clawcore, "plugins", "--json"], env=env)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert all(p["builtin"] for p in plugins.values())
    assert "prism" not in plugins
    assert run([clawcore, "config", "check"], env=env).returncode == 0

    added = run([*pip, "--no-deps", str(ROOT / "plugins" / "prism")])
    assert added.returncode == 0, added.stderr[-2000:]
    plugins = {p["name"]: p for p in json.loads(run([clawcore, "plugins", "--json"], env=env).stdout)}
    assert plugins["prism"]["distribution"] == "clawcore-prism"
    assert not plugins["prism"]["builtin"]
    assert "config_schema" in plugins["prism"]["hooks"]
    assert sys.prefix != str(env_dir)
