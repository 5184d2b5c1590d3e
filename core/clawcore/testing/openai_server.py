"""A real OpenAI-compatible HTTP server on loopback, for tests.

The official ``openai`` SDK talks to it over real sockets, so a plugin's
whole client code path (serialisation, headers, retries, timeouts, response
parsing) runs in tests without patching anything. The server speaks:

* ``POST /v1/chat/completions`` — replies come from a script: a queue of
  replies (:func:`text_reply`, :func:`tool_reply` or a raw ``dict``) and/or a
  callable ``handler(request_body) -> reply``;
* ``POST /v1/embeddings`` — deterministic unit vectors from hashed words and
  character trigrams, so equal texts give equal vectors and texts sharing
  words are closer than unrelated ones;
* fault injection per endpoint (:meth:`OpenAIServer.fail`): an HTTP status
  with ``Retry-After``, a delay (slow response), a malformed body, vectors of
  the wrong dimension;
* a log of every request (:attr:`OpenAIServer.requests`) for assertions.

Use the ``openai_server`` pytest fixture, or the class as a context manager.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = [
    "Fault",
    "OpenAIServer",
    "RecordedRequest",
    "count_tokens",
    "deterministic_vector",
    "text_reply",
    "tool_reply",
]

ChatHandler = Callable[[Mapping[str, Any]], "Mapping[str, Any] | str"]

_WORD = re.compile(r"\w+", re.UNICODE)


def count_tokens(text: str) -> int:
    """The server's token count: one per four characters, at least one per word.

    Deterministic and simple, so a test can predict when a context crosses a threshold.
    """
    return max(len(_WORD.findall(text)), math.ceil(len(text) / 4))


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def deterministic_vector(text: str, dims: int) -> list[float]:
    """A unit vector of ``dims`` floats for ``text``: hashed stemmed words plus character trigrams.

    Same text, same vector; texts sharing words score a higher cosine than unrelated texts.
    """
    vector = [0.0] * dims
    features: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        features.append(("w:" + _stem(word), 1.0))
        padded = f" {word} "
        features.extend(("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2))
    if not features:
        features.append(("empty:", 1.0))
    for feature, weight in features:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dims
        sign = 1.0 if digest[4] & 1 else -1.0
        vector[index] += sign * weight
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def text_reply(content: str) -> dict[str, Any]:
    """A scripted assistant reply with text only."""
    return {"content": content, "tool_calls": []}


def tool_reply(
    name: str | None = None,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    content: str = "",
    calls: Iterable[tuple[str, Mapping[str, Any] | str]] = (),
) -> dict[str, Any]:
    """A scripted assistant reply asking for one tool call (``name``, ``arguments``) or several (``calls``).

    ``arguments`` given as a string is sent as is (to script malformed JSON).
    """
    pairs = list(calls)
    if name is not None:
        pairs.insert(0, (name, arguments or {}))
    return {
        "content": content,
        "tool_calls": [
            {"name": tool, "arguments": args if isinstance(args, str) else json.dumps(dict(args))}
            for tool, args in pairs
        ],
    }


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    #: Header names are lower-cased.
    headers: Mapping[str, str]
    #: The parsed JSON body, or None when it was not JSON.
    body: Any
    #: What the server answered (HTTP status).
    status: int
    #: ``time.monotonic()`` when the request arrived.
    received: float


@dataclass
class Fault:
    """A scripted failure for the next ``times`` requests to an endpoint.

    :param status: HTTP status to answer (429, 500, 401, ...); 0 answers 200
        with the normal body unless ``body``/``wrong_dims`` change it.
    :param retry_after: value of the ``Retry-After`` header, if any.
    :param delay: seconds to wait before answering (a slow server).
    :param body: raw bytes to send instead of the normal body (malformed JSON).
    :param wrong_dims: answer embeddings with this many dimensions.
    :param drip: send the body in small pieces, this many seconds apart (a server that
        answers at once but never finishes: each read succeeds, the whole takes long).
    :param content_type: the ``Content-Type`` of the answer (``text/html`` for a proxy's page).
    """

    status: int = 0
    retry_after: str | None = None
    delay: float = 0.0
    body: bytes | None = None
    wrong_dims: int | None = None
    times: int = 1
    endpoint: str = ""
    drip: float = 0.0
    content_type: str = "application/json"


@dataclass
class _State:
    chat_script: deque[Any] = field(default_factory=deque)
    chat_handler: ChatHandler | None = None
    faults: list[Fault] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    call_counter: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


class OpenAIServer:
    """The loopback server; see the module docstring.

    :param dims: native embedding dimension (a request's ``dimensions`` wins).
    :param api_key: when set, requests without ``Authorization: Bearer <key>``
        get 401, as the real API answers a bad key.
    :param models: when set, requests naming another model get 404 ``model_not_found``.
    :param max_input_tokens: an embeddings input longer than this (by
        :func:`count_tokens`) gets 400, like the real API's context limit.
    """

    def __init__(
        self,
        *,
        dims: int = 64,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        max_input_tokens: int = 8191,
    ) -> None:
        self.dims = dims
        self.api_key = api_key
        self.models = set(models) if models is not None else None
        self.max_input_tokens = max_input_tokens
        self._state = _State()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> Self:
        """Listen on an ephemeral port of 127.0.0.1 in a daemon thread."""
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and join the server thread; idempotent."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The ``baseUrl`` to configure, e.g. ``http://127.0.0.1:41234/v1``."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- scripting -----------------------------------------------------------

    def script(self, *replies: Mapping[str, Any] | str | ChatHandler) -> None:
        """Queue chat replies, answered in order; a string is a text reply, a callable is called with the request."""
        with self._lock:
            self._state.chat_script.extend(replies)

    def on_chat(self, handler: ChatHandler | None) -> None:
        """Answer every chat request the queue does not answer with ``handler(request_body)``."""
        with self._lock:
            self._state.chat_handler = handler

    def fail(
        self,
        status: int = 0,
        *,
        times: int = 1,
        retry_after: str | float | None = None,
        delay: float = 0.0,
        body: bytes | None = None,
        wrong_dims: int | None = None,
        endpoint: str = "",
        drip: float = 0.0,
        content_type: str = "application/json",
    ) -> None:
        """Make the next ``times`` requests (to ``endpoint``: ``"chat"``, ``"embeddings"`` or any) misbehave."""
        with self._lock:
            self._state.faults.append(
                Fault(status, None if retry_after is None else str(retry_after), delay, body, wrong_dims,
                      times, endpoint, drip, content_type)
            )

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._state.requests)

    def requests_to(self, endpoint: str) -> list[RecordedRequest]:
        """Requests whose path ends with ``endpoint`` (``"chat/completions"``, ``"embeddings"``)."""
        return [r for r in self.requests if r.path.rstrip("/").endswith(endpoint)]

    @property
    def errors(self) -> list[str]:
        """Problems the server met (an exhausted script, a broken handler)."""
        with self._lock:
            return list(self._state.errors)

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was answering at the same time."""
        with self._lock:
            return self._state.max_in_flight

    def _enter(self) -> None:
        with self._lock:
            self._state.in_flight += 1
            self._state.max_in_flight = max(self._state.max_in_flight, self._state.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._state.in_flight -= 1

    @property
    def pending(self) -> int:
        """Scripted chat replies not consumed yet."""
        with self._lock:
            return len(self._state.chat_script)

    def reset(self) -> None:
        """Forget the script, faults and request log."""
        with self._lock:
            self._state = _State()

    # -- internals used by the handler ---------------------------------------

    def _take_fault(self, endpoint: str) -> Fault | None:
        with self._lock:
            for fault in self._state.faults:
                if fault.endpoint in ("", endpoint) and fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self._state.faults.remove(fault)
                    return fault
        return None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._state.requests.append(request)

    def _next_chat(self, body: Mapping[str, Any]) -> Mapping[str, Any] | str | None:
        with self._lock:
            item = self._state.chat_script.popleft() if self._state.chat_script else None
            handler = self._state.chat_handler
        if item is None and handler is not None:
            item = handler
        if callable(item):
            item = item(body)
        return item

    def _error(self, text: str) -> None:
        with self._lock:
            self._state.errors.append(text)

    def _next_id(self) -> int:
        with self._lock:
            self._state.call_counter += 1
            return self._state.call_counter


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            names = sorted(self.owner.models or {"scripted-model"})
            self._send(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})
        else:
            self._send(404, _error_body(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0].rstrip("/")
        endpoint = "chat" if path.endswith("/chat/completions") else (
            "embeddings" if path.endswith("/embeddings") else "other")
        self.owner._enter()
        try:
            status, payload, extra, fault = self._answer(endpoint, body)
        finally:
            self.owner._leave()
        self.owner._record(RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, status,
                                           time.monotonic()))
        if fault is None:
            self._send(status, payload, extra)
        else:
            self._send(status, payload, extra, drip=fault.drip, content_type=fault.content_type)

    def _answer(self, endpoint: str, body: Any) -> tuple[int, Any, dict[str, str], Fault | None]:
        owner = self.owner
        if owner.api_key is not None and self.headers.get("Authorization") != f"Bearer {owner.api_key}":
            return 401, _error_body("Incorrect API key provided.", "invalid_api_key"), {}, None
        fault = owner._take_fault(endpoint)
        return (*self._answer_with(endpoint, body, fault), fault)

    def _answer_with(self, endpoint: str, body: Any, fault: Fault | None) -> tuple[int, Any, dict[str, str]]:
        owner = self.owner
        extra: dict[str, str] = {}
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.retry_after is not None:
                extra["Retry-After"] = fault.retry_after
            if fault.status and fault.status != 200:
                message = {429: "Rate limit reached, retry later.", 500: "The server had an error."}.get(
                    fault.status, f"scripted failure {fault.status}")
                return fault.status, fault.body if fault.body is not None else _error_body(message), extra
            if fault.body is not None:
                return 200, fault.body, extra
        if not isinstance(body, dict):
            return 400, _error_body("We could not parse the JSON body of your request.", "invalid_json"), {}
        model = str(body.get("model", ""))
        if owner.models is not None and model not in owner.models:
            return 404, _error_body(f"The model `{model}` does not exist.", "model_not_found"), {}
        if endpoint == "chat":
            return self._chat(body, extra)
        if endpoint == "embeddings":
            return self._embeddings(body, fault.wrong_dims if fault else None, extra)
        return 404, _error_body(f"no route POST {self.path}", "not_found"), {}

    def _chat(self, body: Mapping[str, Any], extra: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        try:
            item = self.owner._next_chat(body)
        except Exception as exc:  # noqa: BLE001 - a broken test handler shows up as a 500 and in .errors
            self.owner._error(f"chat handler failed: {type(exc).__name__}: {exc}")
            return 500, _error_body(f"scripted handler failed: {exc}"), extra
        if item is None:
            self.owner._error("chat script exhausted")
            return 500, _error_body("the scripted server has no reply left for this request"), extra
        reply: dict[str, Any] = text_reply(item) if isinstance(item, str) else dict(item)
        prompt_tokens = sum(count_tokens(_message_text(m)) for m in body.get("messages") or [])
        content = reply.get("content") or ""
        calls: list[dict[str, Any]] = [
            {"id": call.get("id") or f"call_{self.owner._next_id()}", "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"]}}
            for call in reply.get("tool_calls") or []
        ]
        completion_tokens = count_tokens(content) + sum(count_tokens(c["function"]["arguments"]) for c in calls)
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        return 200, {
            "id": f"chatcmpl-{self.owner._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }, extra

    def _embeddings(
        self, body: Mapping[str, Any], wrong_dims: int | None, extra: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs) or not inputs:
            return 400, _error_body("'input' must be a non-empty string or list of strings"), extra
        too_long = [i for i, t in enumerate(inputs) if count_tokens(t) > self.owner.max_input_tokens]
        if too_long:
            return 400, _error_body(
                f"This model's maximum context length is {self.owner.max_input_tokens} tokens "
                f"(input {too_long[0]} is longer).", "context_length_exceeded"), extra
        dims = int(body.get("dimensions") or self.owner.dims)
        if wrong_dims is not None:
            dims = wrong_dims
        data = [{"object": "embedding", "index": i, "embedding": deterministic_vector(text, dims)}
                for i, text in enumerate(inputs)]
        tokens = sum(count_tokens(t) for t in inputs)
        return 200, {"object": "list", "data": data, "model": body.get("model", ""),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, extra

    def _send(self, status: int, payload: Any, extra: Mapping[str, str] | None = None, *, drip: float = 0.0,
              content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if not drip:
                self.wfile.write(data)
                return
            step = max(1, len(data) // 20)
            for start in range(0, len(data), step):
                self.wfile.write(data[start : start + step])
                self.wfile.flush()
                time.sleep(drip)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


def _message_text(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        parts.append(str(function.get("name", "")) + str(function.get("arguments", "")))
    return " ".join(parts)


def _error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error" if code else "server_error",
                      "param": None, "code": code}}
