"""``web_fetch``: one HTTP GET under the network policy, returned as text marked untrusted.

Each hop (the URL and every redirect) passes :meth:`NetworkPolicy.resolve`
first, and the connection goes to one of the addresses that check returned
(the ``Host`` header and TLS server name stay the host name), so DNS cannot
answer one address to the check and another to the connection. The body is
read up to a byte limit within one overall deadline; compression is not
requested (no decompression bombs). HTML becomes plain text: scripts, styles
and hidden templates are dropped, block elements become line breaks.
"""

from __future__ import annotations

import html
import http.client
import re
import socket
import ssl
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from clawcore.errors import ClawcoreError
from clawcore.security.network import NetworkDenied, NetworkPolicy, ResolvedTarget

__all__ = ["FetchError", "FetchResult", "fetch", "html_to_text"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(ClawcoreError):
    """The fetch failed for a reason other than the policy (timeout, refused, bad response)."""


@dataclass(frozen=True)
class FetchResult:
    """What one fetch brought back."""

    url: str
    status: int
    content_type: str
    text: str
    bytes_read: int
    truncated: bool
    redirects: tuple[str, ...] = field(default=())
    title: str = ""


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to a checked address, with the host name kept for the Host header."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a checked address; the certificate is verified against the host name (SNI)."""

    def __init__(self, host: str, port: int, address: str, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address = address
        self._ssl_context = context

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._ssl_context.wrap_socket(raw, server_hostname=self.host)


def fetch(
    url: str,
    policy: NetworkPolicy,
    *,
    max_bytes: int = 2 * 1024 * 1024,
    timeout_s: float = 20.0,
    max_redirects: int = 5,
    user_agent: str = "clawcore-web-fetch/0.1",
    ssl_context: ssl.SSLContext | None = None,
) -> FetchResult:
    """GET ``url`` under ``policy``; follow redirects, each re-checked.

    :raises NetworkDenied: the policy denies the URL or a redirect target.
    :raises FetchError: timeout, connection failure, too many redirects.
    """
    deadline = time.monotonic() + timeout_s
    context = ssl_context or ssl.create_default_context()
    redirects: list[str] = []
    current = url
    while True:
        target = policy.resolve(current)
        response, conn = _request(target, deadline, context, user_agent)
        try:
            if response.status in _REDIRECTS and response.getheader("Location"):
                location = response.getheader("Location") or ""
                if len(redirects) >= max_redirects:
                    raise FetchError(f"more than {max_redirects} redirects, stopped at {current}")
                next_url = urljoin(current, location)
                if urlsplit(next_url).scheme.lower() not in ("http", "https"):
                    raise NetworkDenied(f"redirect to {next_url!r} leaves http(s); refused", rule="url-scheme")
                redirects.append(next_url)
                current = next_url
                continue
            body, truncated = _read(response, max_bytes, deadline)
            content_type = response.getheader("Content-Type") or ""
            text, title = _decode(body, content_type)
            return FetchResult(current, response.status, content_type, text, len(body), truncated,
                               tuple(redirects), title)
        finally:
            conn.close()


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError("timed out")
    return left


def _request(
    target: ResolvedTarget, deadline: float, context: ssl.SSLContext, user_agent: str
) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
    parts = urlsplit(target.url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    last_error: Exception | None = None
    for address in target.addresses:
        timeout = _remaining(deadline)
        conn: http.client.HTTPConnection
        if target.scheme == "https":
            conn = _PinnedHTTPSConnection(target.host, target.port, address, timeout, context)
        else:
            conn = _PinnedHTTPConnection(target.host, target.port, address, timeout)
        try:
            conn.request("GET", path, headers={
                "User-Agent": user_agent,
                "Accept": "text/html,text/plain,application/json;q=0.9,*/*;q=0.5",
                "Accept-Encoding": "identity",
            })
            return conn.getresponse(), conn
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            last_error = exc
            if isinstance(exc, (TimeoutError, socket.timeout)):
                break
    raise FetchError(f"cannot fetch {target.url}: {type(last_error).__name__}: {last_error}")


def _read(response: http.client.HTTPResponse, max_bytes: int, deadline: float) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    total = 0
    while total <= max_bytes:
        _remaining(deadline)
        try:
            chunk = response.read1(min(65536, max_bytes + 1 - total)) if hasattr(response, "read1") else (
                response.read(min(65536, max_bytes + 1 - total)))
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, http.client.IncompleteRead):
                chunks.append(exc.partial)
                break
            raise FetchError(f"reading the response failed: {type(exc).__name__}: {exc}") from exc
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    body = b"".join(chunks)
    if len(body) > max_bytes:
        return body[:max_bytes], True
    return body, False


_CHARSET = re.compile(r"charset=[\"']?([A-Za-z0-9_\-:.]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset=[\"']?([A-Za-z0-9_\-]+)", re.IGNORECASE)


def _decode(body: bytes, content_type: str) -> tuple[str, str]:
    kind = content_type.split(";", 1)[0].strip().lower()
    charset_match = _CHARSET.search(content_type)
    charset = charset_match.group(1) if charset_match else None
    looks_html = kind in ("text/html", "application/xhtml+xml") or (
        not kind and body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
    )
    if not looks_html and kind and not (kind.startswith("text/") or kind.endswith(("json", "xml", "javascript"))
                                        or kind in ("application/x-yaml", "application/yaml")):
        return f"[binary content of type {kind}, {len(body)} bytes, not shown]", ""
    if looks_html and charset is None:
        meta = _META_CHARSET.search(body[:4096])
        charset = meta.group(1).decode("ascii") if meta else None
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if looks_html:
        return html_to_text(text)
    return text, ""


_BLOCK = frozenset({
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure", "footer",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
    "table", "tr", "ul", "td", "th", "caption", "details", "summary",
})
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"})


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "li" and not self._skip:
            self.parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """Readable text and the title of an HTML document."""
    parser = _TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except (AssertionError, ValueError, IndexError):  # html.parser is lenient; fall back to tag stripping
        stripped = re.sub(r"(?is)<(script|style)[^>]*>.*?</\1>|<[^>]+>", " ", markup)
        return html.unescape(re.sub(r"[ \t]+", " ", stripped)).strip(), ""
    text = "".join(parser.parts)
    lines = [re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip(), " ".join("".join(parser.title).split())
