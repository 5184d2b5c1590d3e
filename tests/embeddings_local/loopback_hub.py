"""A model hub on loopback: the file endpoint the hub client downloads from."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackHub:
    """Serves ``/<repo>/resolve/<revision>/<file>`` from a dict of paths to bytes; records requests."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, body: bool) -> None:
                path = self.path.split("?")[0]
                hub.requests.append((self.command, path))
                data = hub.files.get(path)
                if data is None or "/resolve/" not in path:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", path.split("/resolve/")[1].split("/")[0])
                self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_HEAD(self) -> None:
                self._answer(False)

            def do_GET(self) -> None:
                self._answer(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def file_requests(self) -> list[tuple[str, str]]:
        """Requests for model files (the client also asks the hub's API for other things)."""
        return [r for r in self.requests if "/resolve/" in r[1]]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
