"""web_fetch against a real HTTP server on loopback (loopback is private: the tests allow it explicitly)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from clawcore.security.network import NetworkDenied, NetworkPolicy
from clawcore.security.web_fetch import FetchError, fetch, html_to_text

PAGE = b"""<!doctype html><html><head><title>Release notes</title><style>body{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><h1>Version 2.0</h1><p>Faster &amp; safer.</p><ul><li>one</li><li>two</li></ul>
<template>hidden template</template><noscript>enable js</noscript></body></html>"""


class Handler(BaseHTTPRequestHandler):
    seen_hosts: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/plain", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Handler.seen_hosts.append(self.headers.get("Host", ""))
        port = self.server.server_address[1]
        if self.path == "/page":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif self.path == "/json":
            self._send(200, b'{"ok": true}', "application/json")
        elif self.path == "/big":
            self._send(200, b"x" * 100_000)
        elif self.path == "/binary":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "image/png")
        elif self.path == "/slow":
            time.sleep(3)
            self._send(200, b"late")
        elif self.path == "/hop":
            self._send(302, b"", Location="/page")
        elif self.path == "/to-metadata":
            self._send(302, b"", Location="http://169.254.169.254/latest/meta-data/")
        elif self.path == "/to-other-port":
            self._send(307, b"", Location=f"http://127.0.0.2:{port}/page")
        elif self.path == "/to-file":
            self._send(302, b"", Location="file:///etc/passwd")
        elif self.path == "/loop":
            self._send(302, b"", Location="/loop")
        else:
            self._send(404, b"not found")


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that stops reading at its byte limit breaks the pipe; that is the point


@pytest.fixture
def server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False  # a /slow handler must not hold up teardown
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Handler.seen_hosts = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


LOOPBACK = NetworkPolicy(private_network=["127.0.0.1"])


def test_html_becomes_text_without_scripts(server: str) -> None:
    result = fetch(server + "/page", LOOPBACK)
    assert result.status == 200 and result.title == "Release notes"
    assert "Version 2.0" in result.text and "Faster & safer." in result.text and "- one" in result.text
    for hidden in ("do not show", "color:red", "hidden template", "enable js", "<h1>"):
        assert hidden not in result.text


def test_json_and_binary(server: str) -> None:
    assert fetch(server + "/json", LOOPBACK).text == '{"ok": true}'
    binary = fetch(server + "/binary", LOOPBACK)
    assert binary.text.startswith("[binary content of type image/png")


def test_size_limit_truncates(server: str) -> None:
    result = fetch(server + "/big", LOOPBACK, max_bytes=1000)
    assert result.truncated and len(result.text) == 1000 and result.bytes_read == 1000


def test_time_limit(server: str) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError, match="timed out|timeout"):
        fetch(server + "/slow", LOOPBACK, timeout_s=0.5)
    assert time.monotonic() - started < 2.5


def test_loopback_is_denied_without_an_explicit_allowance(server: str) -> None:
    with pytest.raises(NetworkDenied, match="not public"):
        fetch(server + "/page", NetworkPolicy())
    assert Handler.seen_hosts == [], "nothing may be sent before the check"


def test_redirects_are_rechecked_hop_by_hop(server: str) -> None:
    result = fetch(server + "/hop", LOOPBACK)
    assert result.redirects == (server + "/page",) and "Version 2.0" in result.text
    with pytest.raises(NetworkDenied, match="169.254.169.254"):
        fetch(server + "/to-metadata", LOOPBACK)
    with pytest.raises(NetworkDenied, match="127.0.0.2"):
        fetch(server + "/to-other-port", LOOPBACK)
    with pytest.raises(NetworkDenied, match="leaves http"):
        fetch(server + "/to-file", LOOPBACK)
    with pytest.raises(FetchError, match="more than 3 redirects"):
        fetch(server + "/loop", LOOPBACK, max_redirects=3)


def test_connection_goes_to_the_checked_address_with_the_host_name_kept(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = NetworkPolicy(private_network=["127.0.0.1"],
                           resolver=lambda host, _port: ["127.0.0.1"] if host == "app.example" else [])
    result = fetch(f"http://app.example:{port}/json", policy)
    assert result.status == 200
    assert Handler.seen_hosts == [f"app.example:{port}"]


def test_html_to_text_handles_broken_markup() -> None:
    text, title = html_to_text("<p>unclosed <b>bold<div>next</p><title>T</title>")
    assert "unclosed bold" in text and "next" in text and title == "T"


def _self_signed(tmp_path: Path, host: str) -> tuple[Path, Path]:
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_https_to_the_checked_address_verifies_the_host_name(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path, "secure.example")
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    httpd.socket = server_context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    client = ssl.create_default_context(cafile=str(cert))
    policy = NetworkPolicy(private_network=["127.0.0.1"], resolver=lambda host, _port: ["127.0.0.1"])
    Handler.seen_hosts = []
    try:
        result = fetch(f"https://secure.example:{port}/json", policy, ssl_context=client)
        assert result.text == '{"ok": true}' and Handler.seen_hosts == [f"secure.example:{port}"]
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED|certificate|hostname"):
            fetch(f"https://other.example:{port}/json", policy, ssl_context=client)
    finally:
        httpd.shutdown()
        httpd.server_close()
