"""``clawcore embeddings-local``: the catalogue's state, and a fetch that fails in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = "from clawcore.cli import main; raise SystemExit(main())"


def clawcore(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Only this plugin loads: the test is about its commands, not the others' import time.
    environ = {**os.environ, "CLAWCORE_HOME": str(home), "COLUMNS": "300",
               "CLAWCORE_LOAD_PLUGINS": "embeddings_local", **env}
    return subprocess.run([sys.executable, "-c", CLI, *args], check=False, capture_output=True, text=True, timeout=120, env=environ)


def test_models_lists_the_catalogue_and_what_is_ready(tmp_path: Path) -> None:
    done = clawcore(tmp_path, "embeddings-local", "models")
    assert done.returncode == 0, done.stderr
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("│")}
    assert "ready (bundle)" in rows["all-MiniLM-L6-v2 (default)"]
    assert "not fetched yet" in rows["paraphrase-multilingual-MiniLM-L12-v2"]
    assert not (tmp_path / "models").exists()  # listing fetches nothing


def test_fetch_without_hub_is_one_line_error(tmp_path: Path) -> None:
    done = clawcore(tmp_path, "embeddings-local", "fetch", "paraphrase-multilingual-MiniLM-L12-v2",
                    HF_ENDPOINT="http://127.0.0.1:9")
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: could not fetch model 'paraphrase-multilingual-MiniLM-L12-v2'")


def test_fetch_into_a_home_that_cannot_hold_models_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "models").write_text("a file where the models folder should be\n")
    done = clawcore(tmp_path, "embeddings-local", "fetch", "all-MiniLM-L6-v2-q8", HF_HUB_OFFLINE="1")
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot store all-MiniLM-L6-v2-q8 under {tmp_path / 'models'}: Not a directory")
