"""The deadline HTTP client both OpenAI-compatible plugins use: a body's size is bounded as it will be read."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from clawcore.http_api import deadline_client


@pytest.fixture
def gzip_server() -> Iterator[str]:
    """Answers /small with a short gzip body and /bomb with 4 MiB of zeros in 4 KiB of gzip."""
    bodies = {"/small": gzip.compress(b'{"ok": true}'), "/bomb": gzip.compress(b"\0" * (4 << 20))}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies[self.path]
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_compressed_body_is_bounded_once_decoded(gzip_server: str) -> None:
    with deadline_client(5, max_body_bytes=1 << 20) as client:
        small = client.get(gzip_server + "/small")
        assert small.status_code == 200 and small.json() == {"ok": True}
        bomb = client.get(gzip_server + "/bomb")
    assert bomb.status_code == 413 and bomb.headers["x-should-retry"] == "false"
    assert bomb.headers["x-clawcore-refused"] == ("the response is larger than 1048576 bytes, "
                                                  "more than an answer to this request can be")
