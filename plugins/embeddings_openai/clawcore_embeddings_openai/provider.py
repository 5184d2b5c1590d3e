"""The ``openai`` embedding provider: the official SDK, batching, bounded concurrency, retries."""

from __future__ import annotations

import email.utils
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
from clawcore import ProviderUnavailable
from clawcore.http_api import deadline_client, too_large
from clawcore.security.secrets import redact
from openai.types import CreateEmbeddingResponse

from clawcore_embeddings_openai.batching import batches, truncate
from clawcore_embeddings_openai.settings import KNOWN_DIMS, OpenAIEmbeddingSettings

__all__ = ["OpenAIEmbeddingProvider", "create_provider", "retry_after_seconds"]

#: Sent when a custom ``baseUrl`` needs no key (Ollama, vLLM, LM Studio on loopback).
_NO_KEY = "no-key-configured"
#: The largest ``dimensions`` the schema allows: the size bound for a model whose size is not known yet.
_MAX_DIMS = 8192
#: Generous room for one number of a vector in JSON (``-0.012345678901234567,``) plus its share of the framing.
_BYTES_PER_NUMBER = 48


class _Transient(Exception):
    """A failure worth retrying, with the server's requested wait if it gave one."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


def retry_after_seconds(headers: Mapping[str, str] | Any) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, ``Retry-After`` in seconds, or an HTTP date."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIEmbeddingProvider:
    """An :class:`~clawcore.EmbeddingProvider` over ``POST /embeddings``.

    Texts are sent in batches (``batchSize`` texts, ``batchTokens`` estimated
    tokens), ``concurrency`` requests at a time. A text longer than
    ``maxInputTokens`` is truncated (one vector per text, as the index needs).
    429, 5xx, timeouts, connection errors and unreadable responses are
    retried ``retries`` times with exponential backoff from ``backoff``,
    waiting what ``Retry-After`` asks (at most ``maxBackoff``). A bad key, an
    unknown model or vectors of the wrong size are permanent: the provider is
    marked failed and every later call raises :class:`ProviderUnavailable`
    with the same actionable message, without another request.

    :param sleep: how to wait between retries (a parameter so callers can
        bound or observe waiting).
    """

    name = "openai"

    def __init__(self, settings: OpenAIEmbeddingSettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.model = settings.model
        self.base_url = settings.base_url or "https://api.openai.com/v1"
        self.dims = settings.dimensions or KNOWN_DIMS.get(settings.model, 0)
        self.failure: str | None = None
        self.requests = 0
        self._sleep = sleep
        self._lock = threading.Lock()
        # A full batch of the largest vectors, as JSON text, with room to spare: a larger body
        # cannot be an answer to a request of ours, and is refused while it arrives.
        most = settings.batch_size * (settings.dimensions or KNOWN_DIMS.get(settings.model, _MAX_DIMS))
        self._client = openai.OpenAI(
            api_key=settings.api_key or _NO_KEY,
            base_url=self.base_url,
            timeout=settings.timeout_s,
            max_retries=0,  # retries are ours: bounded waits, Retry-After honoured, counted
            # The whole request, body included, within the timeout: the SDK's own timeout is per read.
            http_client=deadline_client(settings.timeout_s, max_body_bytes=most * _BYTES_PER_NUMBER + 2**20),
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingProvider(model={self.model!r}, dims={self.dims}, base_url={self.base_url!r})"

    # -- the contract ------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order.

        :raises ProviderUnavailable: a permanent failure, or a transient one that outlasted the retries.
        """
        if self.failure:
            raise ProviderUnavailable(self.failure)
        if not texts:
            return []
        inputs = [truncate(t, self.settings.max_input_tokens) or " " for t in texts]
        groups = batches(inputs, max_items=self.settings.batch_size, max_tokens=self.settings.batch_tokens)
        if len(groups) == 1 or self.settings.concurrency == 1:
            parts = [self._embed_batch([inputs[i] for i in group]) for group in groups]
        else:
            with ThreadPoolExecutor(max_workers=min(self.settings.concurrency, len(groups))) as pool:
                parts = list(pool.map(lambda group: self._embed_batch([inputs[i] for i in group]), groups))
        return [vector for part in parts for vector in part]

    # -- one request, retried -----------------------------------------------------

    def _embed_batch(self, inputs: list[str]) -> list[list[float]]:
        delay = self.settings.backoff_s
        attempt = 0
        while True:
            if self.failure:
                raise ProviderUnavailable(self.failure)
            try:
                return self._request(inputs)
            except _Transient as exc:
                if attempt >= self.settings.retries:
                    raise ProviderUnavailable(
                        f"openai embeddings at {self.base_url}: {exc} (after {attempt + 1} attempts); "
                        "memory search uses keywords until the next sync") from None
                wait = exc.wait if exc.wait is not None else delay
                self._sleep(min(wait, self.settings.max_backoff_s))
                delay = min(delay * 2, self.settings.max_backoff_s)
                attempt += 1

    def _request(self, inputs: list[str]) -> list[list[float]]:
        extra: dict[str, Any] = {"dimensions": self.settings.dimensions} if self.settings.dimensions else {}
        with self._lock:
            self.requests += 1
        try:
            response = self._client.embeddings.create(model=self.model, input=inputs,
                                                      encoding_format="float", **extra)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            self._fail(f"the server refused the key (HTTP {exc.status_code}); check {self.settings.api_key_env} "
                       "or memory.embeddings.openai.apiKey")
        except openai.NotFoundError:
            self._fail(f"model {self.model!r} was not found at {self.base_url}; "
                       "check memory.embeddings.openai.model and baseUrl")
        except openai.RateLimitError as exc:
            raise _Transient("rate limited (HTTP 429)", retry_after_seconds(exc.response.headers)) from None
        except openai.APIStatusError as exc:
            oversize = too_large(exc)
            if oversize:  # fetching it again would bring the same body
                problem = f"openai embeddings at {self.base_url}: unreadable response ({oversize})"
                raise ProviderUnavailable(problem) from None
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Transient(f"HTTP {exc.status_code}", retry_after_seconds(exc.response.headers)) from None
            raise ProviderUnavailable(
                f"openai embeddings at {self.base_url}: HTTP {exc.status_code}: {self._clean(exc.message)[:300]}"
            ) from None
        except openai.APITimeoutError:
            raise _Transient(f"no answer within {self.settings.timeout_s:g}s") from None
        except openai.APIConnectionError:
            raise _Transient("cannot connect") from None
        except (openai.APIResponseValidationError, ValueError, RecursionError) as exc:
            raise _Transient(f"unreadable response ({type(exc).__name__})") from None
        data = response.data if isinstance(response, CreateEmbeddingResponse) else None
        if not isinstance(data, list):
            raise _Transient("unreadable response (not a list of embeddings)")
        if len(data) != len(inputs):
            raise _Transient(f"{len(data)} vectors for {len(inputs)} texts")
        indexes = [getattr(item, "index", None) for item in data]
        if sorted(i for i in indexes if isinstance(i, int) and not isinstance(i, bool)) != list(range(len(inputs))):
            raise _Transient("unreadable response (the embeddings are not numbered 0 to n-1)")
        vectors = [_unit(item.embedding) for item in sorted(data, key=lambda item: item.index)]
        sizes = {len(v) for v in vectors}
        if not self.dims and len(sizes) == 1:
            self.dims = sizes.pop()
        elif sizes != {self.dims}:
            self._fail(f"model {self.model!r} returned vectors of {sorted(sizes)} dimensions, expected "
                       f"{self.dims}; set memory.embeddings.openai.dimensions to what the model gives")
        return vectors

    def _fail(self, why: str) -> None:
        message = f"openai embeddings unavailable: {why}"
        self.failure = self._clean(message)
        raise ProviderUnavailable(self.failure)

    def _clean(self, text: str) -> str:
        """``text`` fit for a message: one line, the key and anything that looks like a credential masked."""
        key = self.settings.api_key
        return redact(" ".join((text.replace(key, "***") if key else text).split()))

    def probe(self) -> None:
        """Embed one short text: learns the dimension, surfaces a bad key or model now."""
        self.embed(["probe"])


def _unit(vector: Any) -> list[float]:
    if not isinstance(vector, (list, tuple)) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
        raise _Transient("unreadable response (an embedding that is not a list of numbers)")
    norm = math.sqrt(sum(x * x for x in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise _Transient("a vector was zero or not finite")
    return [x / norm for x in vector]


def create_provider(settings: Mapping[str, Any], home: Path) -> OpenAIEmbeddingProvider:
    """The registry's factory: ``factory(settings, home)``.

    :raises ProviderUnavailable: no key, or (with ``probe``) the server
        refused or could not be reached, so the chain falls back.
    """
    provider = OpenAIEmbeddingProvider(OpenAIEmbeddingSettings.from_mapping(settings))
    if provider.settings.probe or not provider.dims:
        provider.probe()
    return provider
