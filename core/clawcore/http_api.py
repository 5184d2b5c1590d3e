"""Shared pieces for plugins that call an OpenAI-compatible HTTP API (chat models, embeddings).

* Config schema for the settings every such plugin has (``baseUrl``, ``apiKeyEnv``,
  ``allowInsecureHttp``, ``timeout``), so ``clawcore config check`` catches a URL
  without a scheme, a key pasted where a variable name belongs, or a timeout of 0.
* :func:`endpoint_problem`: the same rules for settings that reach a plugin without
  the config layer (``prism.llm.settings``, a factory called from Python).
* :func:`deadline_client`: an HTTP client for the ``openai`` SDK whose ``timeout``
  bounds each request as a whole. The HTTP library's own timeout is per read, so a
  server that sends a byte every second would otherwise hold a request for hours.

The HTTP library is the one the SDK uses (``httpx2``, or ``httpx`` for older SDKs),
imported only when a client is built: the core itself never needs it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["CLEARTEXT_RULE", "deadline_client", "endpoint_problem", "endpoint_properties",
           "is_variable_name", "too_large"]

_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: ``http://`` or ``https://``, a host (a name, an IPv4 address or a bracketed IPv6 one), an optional port and path.
_URL_PATTERN = r"^https?://([^/?#@\s]+@)?([A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[^\s]*)?$"
#: ``user:password@`` before the host.
_USERINFO_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@"
#: ``http://`` to a loopback host: the only cleartext address allowed without ``allowInsecureHttp``.
_LOOPBACK_HTTP_PATTERN = r"^(https://|http://(localhost|127\.[0-9.]+|\[::1\])(:[0-9]{1,5})?(/|$))"


def endpoint_properties(section: str, timeout_default: str) -> dict[str, Any]:
    """Schema properties for ``baseUrl``, ``apiKeyEnv``, ``allowInsecureHttp`` and ``timeout`` of ``section``."""
    return {
        "baseUrl": {"type": ["string", "null"], "default": None, "description": "API root, e.g. "
                    "http://127.0.0.1:11434/v1; null is OpenAI.", "allOf": [
                        {"pattern": _URL_PATTERN,
                         "x-error": "is not an http:// or https:// URL with a host, like http://127.0.0.1:11434/v1"},
                        {"not": {"type": "string", "pattern": _USERINFO_PATTERN}, "x-conceal": True,
                         "x-error": "carries a user name or password before the host, where every log and error "
                                    "would show it; give the key through apiKeyEnv"}]},
        "apiKeyEnv": {"type": "string", "minLength": 1, "default": "OPENAI_API_KEY", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$",
                      "x-conceal": True,
                      "x-error": f"is not an environment variable name: {section}.apiKeyEnv names the variable "
                                 "that holds the key (like OPENAI_API_KEY), never the key itself",
                      "description": "The environment variable holding the key."},
        "allowInsecureHttp": {"type": "boolean", "default": False,
                              "description": "Allow a plain http:// baseUrl to a host other than loopback: the key "
                                             "and every text sent cross the network unencrypted."},
        "timeout": {"type": ["string", "number"], "format": "positive-duration", "default": timeout_default,
                    "description": "The longest one request may take, connecting and reading included."},
    }


#: Added to a section's ``allOf``: a cleartext ``baseUrl`` off loopback needs ``allowInsecureHttp: true``.
CLEARTEXT_RULE: Mapping[str, Any] = {
    "if": {"properties": {"baseUrl": {"type": "string", "pattern": "^http://"},
                          "allowInsecureHttp": {"const": False}}, "required": ["baseUrl"]},
    "then": {"properties": {"baseUrl": {
        "pattern": _LOOPBACK_HTTP_PATTERN,
        "x-error": "is plain http:// to a host other than loopback: the API key and every text would cross the "
                   "network unencrypted; use https://, or set allowInsecureHttp: true to accept that"}}},
}


def is_variable_name(value: object) -> bool:
    """True for a string that can name an environment variable (``OPENAI_API_KEY``)."""
    return isinstance(value, str) and _VARIABLE.fullmatch(value) is not None


def endpoint_problem(section: str, settings: Mapping[str, Any]) -> str | None:
    """What is wrong with ``baseUrl`` / ``apiKeyEnv`` / ``allowInsecureHttp`` in ``settings``, in one line; None if nothing.

    The config schema says the same for ``clawcore.yaml``; this catches settings that reach
    a plugin another way. An ``apiKeyEnv`` that is not a variable name is never quoted: it is
    usually the key itself, pasted in the wrong place.
    """
    variable = settings.get("apiKeyEnv")
    if variable is not None and not is_variable_name(variable):
        return (f"{section}.apiKeyEnv is not an environment variable name (not shown: it may be the key itself); "
                "name the variable that holds the key, like OPENAI_API_KEY")
    url = settings.get("baseUrl")
    if url is None:
        return None
    if not isinstance(url, str) or not re.match(_URL_PATTERN, url):
        return f"{section}.baseUrl is not an http:// or https:// URL with a host (not shown: it may hold a key)"
    if re.match(_USERINFO_PATTERN, url):
        return f"{section}.baseUrl carries a user name or password before the host; give the key through apiKeyEnv"
    if not re.match(_LOOPBACK_HTTP_PATTERN, url) and settings.get("allowInsecureHttp") is not True:  # the schema's rule
        return (f"{section}.baseUrl {url!r} is plain http:// to a host other than loopback: the key and every text "
                "would cross the network unencrypted; use https://, or set allowInsecureHttp: true to accept that")
    return None


#: The start of the reason a body is refused for its size.
_TOO_LARGE = "the response is larger than"


#: The header of the answer that stands for a body refused for its size: it carries the reason.
_REFUSED = "x-clawcore-refused"


class _TooLarge(Exception):
    """A body past its limit, raw or decoded."""


def too_large(exc: BaseException) -> str | None:
    """The one-line reason when ``exc`` (or what caused it) is a body refused for its size; else None."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        reason = response.headers.get(_REFUSED) if response is not None and hasattr(response, "headers") else None
        if reason:
            return str(reason)
        seen = seen.__cause__ or seen.__context__
    return None


def _within(chunks: Iterator[bytes], limit: int | None) -> bytes:
    """The chunks joined, or :class:`_TooLarge` once they pass ``limit`` bytes."""
    body, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if limit is not None and size > limit:
            raise _TooLarge(f"{_TOO_LARGE} {limit} bytes, more than an answer to this request can be")
        body.append(chunk)
    return b"".join(body)


def _http_library() -> Any:
    try:
        import httpx2 as httpx
    except ImportError:  # SDKs before httpx2
        import httpx  # type: ignore[no-redef]
    return httpx


def deadline_client(timeout_s: float, *, max_body_bytes: int | None = None) -> Any:
    """An HTTP client for ``openai.OpenAI(http_client=...)`` in which every request (connecting,
    sending, the headers and the whole body) ends within ``timeout_s``, and a body over
    ``max_body_bytes`` is refused while it arrives.

    Each request runs in a worker thread that the caller waits for at most ``timeout_s``; past
    it the caller gets the library's ``ReadTimeout`` (the SDK retries it like any timeout and
    reports it as ``APITimeoutError``), and the worker stops at the next piece of the body it
    receives. A body too large, as sent or once decompressed (a small gzip body cannot grow past the
    limit), is answered with a 413 that the SDK does not retry and :func:`too_large` reads the reason
    from. Redirects are followed and proxies from the environment used, as with the SDK's own client.
    """
    httpx = _http_library()

    class _Guarded(httpx.SyncByteStream):  # type: ignore[misc, name-defined]
        """The raw body: it stops when the request's time ran out, and past ``limit`` bytes as sent."""

        def __init__(self, inner: Any, stop: threading.Event, limit: int | None) -> None:
            self._inner, self._stop, self._limit = inner, stop, limit

        def __iter__(self) -> Iterator[bytes]:
            size = 0
            for chunk in self._inner:
                if self._stop.is_set():
                    raise httpx.ReadTimeout("the request's time ran out")
                size += len(chunk)
                if self._limit is not None and size > self._limit:
                    raise _TooLarge(f"{_TOO_LARGE} {self._limit} bytes, more than an answer to this request can be")
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class _DeadlineClient(httpx.Client):  # type: ignore[misc, name-defined]
        def send(self, request: Any, **kwargs: Any) -> Any:
            kwargs["stream"] = True
            stop = threading.Event()
            done = threading.Event()
            outcome: dict[str, Any] = {}
            send = super().send

            def run() -> None:
                try:
                    response = send(request, **kwargs)
                    try:
                        if stop.is_set():
                            raise httpx.ReadTimeout("the request's time ran out", request=request)
                        response.stream = _Guarded(response.stream, stop, max_body_bytes)
                        body = _within(response.iter_bytes(), max_body_bytes)  # decoded
                    finally:
                        response.close()
                    headers = [(k, v) for k, v in response.headers.multi_items()
                               if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
                    outcome["response"] = httpx.Response(response.status_code, headers=headers, content=body,
                                                         request=request, extensions=response.extensions)
                except _TooLarge as exc:  # an answer, not a broken connection: the SDK must not fetch it again
                    outcome["response"] = httpx.Response(
                        413, headers={_REFUSED: str(exc), "x-should-retry": "false"},
                        json={"error": {"message": str(exc)}}, request=request)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    outcome["error"] = exc
                finally:
                    done.set()

            threading.Thread(target=run, name="http-deadline", daemon=True).start()
            if not done.wait(timeout_s):
                stop.set()  # the worker gives up at the next piece it receives
                raise httpx.ReadTimeout(f"no complete answer within {timeout_s:g}s", request=request)
            if "error" in outcome:
                raise outcome["error"]
            return outcome["response"]

    # The library's own timeouts still apply to each connect and read, bounded by the whole.
    return _DeadlineClient(timeout=httpx.Timeout(timeout_s), follow_redirects=True,
                           limits=httpx.Limits(max_connections=100, max_keepalive_connections=20))
