"""The OpenAI-compatible chat model: chat completions with tool calling through the official SDK."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from clawcore import Message, ModelReply, ProviderUnavailable, Tool, ToolCall
from clawcore.config import parse_duration
from clawcore.http_api import deadline_client, endpoint_problem, too_large
from clawcore.security.secrets import redact
from clawcore.types import UNREADABLE_ARGUMENTS
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from clawcore_models_openai.defaults import DEFAULTS

__all__ = ["DEFAULTS", "OpenAIChatModel", "resolve_api_key"]

#: Defaults of the ``models.openai`` section (also the schema's ``default`` values).

#: Sent when a custom ``baseUrl`` needs no key (Ollama, vLLM, LM Studio on loopback).
_NO_KEY = "no-key-configured"
#: The largest completion body read: far above any reply, far below what would exhaust memory.
_MAX_BODY_BYTES = 64 * 1024 * 1024


def resolve_api_key(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """The API key: ``apiKey`` if set, else the variable named by ``apiKeyEnv``; None when neither is set."""
    environ = os.environ if environ is None else environ
    key = settings.get("apiKey")
    if key:
        return str(key)
    variable = settings.get("apiKeyEnv") or "OPENAI_API_KEY"
    return environ.get(str(variable)) or None


class OpenAIChatModel:
    """A :class:`clawcore.ChatModel` over any OpenAI-compatible chat completions endpoint.

    Retries (``retries``) are the SDK's: exponential backoff honouring
    ``Retry-After`` on 408/409/429/5xx and connection errors. Every failure
    left after them is raised as :class:`ProviderUnavailable` with a one-line
    message that never contains the key.
    """

    def __init__(self, settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
        merged = {**DEFAULTS, **{k: v for k, v in settings.items() if v is not None}}
        problem = endpoint_problem("models.openai", merged)
        if problem:
            raise ProviderUnavailable(problem)
        self._key = resolve_api_key(merged, environ)
        base_url = merged.get("baseUrl")
        if self._key is None and not base_url:
            raise ProviderUnavailable(
                f"no API key for the OpenAI chat model: set {merged['apiKeyEnv']} or models.openai.apiKey "
                "(or models.openai.baseUrl for a local OpenAI-compatible server)"
            )
        self.model = str(merged["model"])
        self.name = f"openai:{self.model}"
        self.context_window = int(merged["contextWindow"])
        self.base_url = str(base_url) if base_url else "https://api.openai.com/v1"
        self._max_output = merged.get("maxOutputTokens")
        self._temperature = merged.get("temperature")
        timeout = parse_duration(merged["timeout"])
        if timeout <= 0:
            raise ProviderUnavailable(f"models.openai.timeout must be above 0, got {merged['timeout']!r}")
        self._client = openai.OpenAI(
            api_key=self._key or _NO_KEY,
            base_url=self.base_url,
            timeout=timeout,
            max_retries=int(merged["retries"]),
            # The whole request, body included, within the timeout: the SDK's own timeout is per read.
            http_client=deadline_client(timeout, max_body_bytes=_MAX_BODY_BYTES),
        )

    def __repr__(self) -> str:  # the key stays out of reprs and logs
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool] = ()) -> ModelReply:
        """One chat completion; tool calls come back parsed.

        :raises ProviderUnavailable: the server could not be reached or refused
            the request after the retries.
        """
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in messages],
        }
        if tools:
            request["tools"] = [to_openai_tool(t) for t in tools]
        if self._max_output:
            request["max_tokens"] = int(self._max_output)
        if self._temperature is not None:
            request["temperature"] = float(self._temperature)
        try:
            completion = self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            oversize = too_large(exc)
            if oversize:
                raise ProviderUnavailable(self._unreadable(oversize)) from None
            raise ProviderUnavailable(self._describe(exc, f"HTTP {exc.status_code}")) from None
        except openai.APITimeoutError:
            raise ProviderUnavailable(
                f"model {self.model!r} at {self.base_url} did not answer in time; "
                "raise models.openai.timeout or check the server") from None
        except openai.APIConnectionError as exc:
            raise ProviderUnavailable(self._describe(exc, "cannot connect")) from None
        except (openai.OpenAIError, ValueError, RecursionError) as exc:
            raise ProviderUnavailable(self._describe(exc, "bad response")) from None
        return self._read(completion)

    def _read(self, completion: object) -> ModelReply:
        """The reply in a completion, checked: a server may answer 200 with anything (an HTML page,
        an event stream, ``[]``, ``null`` fields), and the SDK passes what it cannot parse through.

        :raises ProviderUnavailable: one line naming what was missing or malformed.
        """
        if not isinstance(completion, ChatCompletion):
            what = type(completion).__name__
            raise ProviderUnavailable(self._unreadable(f"the answer is not a chat completion (a {what})"))
        choices = completion.choices
        if not isinstance(choices, list) or not choices:
            raise ProviderUnavailable(f"model {self.model!r} at {self.base_url} returned no choices")
        message = getattr(choices[0], "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise ProviderUnavailable(self._unreadable("its first choice has no message"))
        content = _text(message.content)
        if content is None:
            raise ProviderUnavailable(self._unreadable("the message content is neither text nor text parts"))
        refusal = message.refusal if isinstance(getattr(message, "refusal", None), str) else ""
        if refusal:
            # A refusal comes instead of content: without it the reply would be empty and the transcript silent.
            content = f"{content}\n\n{refusal}" if content else refusal
        calls = []
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            if function is None:
                continue  # not a function call (a custom tool type): nothing the loop can run
            name = getattr(function, "name", None)
            if not isinstance(name, str) or not name:
                raise ProviderUnavailable(self._unreadable("a tool call has no function name"))
            call_id = getattr(call, "id", None)
            calls.append(ToolCall(name, parse_arguments(getattr(function, "arguments", None)),
                                  call_id if isinstance(call_id, str) else ""))
        usage = completion.usage
        return ModelReply(
            content=content,
            tool_calls=tuple(calls),
            input_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            output_tokens=_count(getattr(usage, "completion_tokens", 0)),
        )

    def _unreadable(self, why: str) -> str:
        return (f"model {self.model!r} at {self.base_url}: unreadable response: {why}; "
                "check that baseUrl is an OpenAI-compatible API root")

    def _describe(self, exc: BaseException, what: str) -> str:
        detail = str(getattr(exc, "message", "") or exc).splitlines()[0] if str(exc) else type(exc).__name__
        if self._key:
            detail = detail.replace(self._key, "***")
        detail = redact(detail)
        # The same settings serve the agent (models.openai) and PRISM's band (prism.llm.settings).
        where = "in models.openai, or prism.llm.settings for PRISM's model"
        hint = {
            "HTTP 401": f"check the API key (apiKeyEnv / apiKey {where})",
            "HTTP 403": "check the key's permissions",
            "HTTP 404": f"check model ({self.model!r}) and baseUrl {where}",
            "HTTP 429": f"rate limited after the retries; wait or raise retries {where}",
            "cannot connect": f"is the server running, and baseUrl right {where}?",
        }.get(what, "check the server")
        return f"model {self.model!r} at {self.base_url}: {what}: {detail[:300]}; {hint}"


def parse_arguments(raw: object) -> dict[str, Any]:
    """A tool call's JSON arguments; text that is not a JSON object is kept under
    :data:`~clawcore.types.UNREADABLE_ARGUMENTS`, so the loop tells the model what was wrong
    and the transcript keeps what it sent. Arguments nested too deep to parse count as unreadable;
    a server that sends them as an object rather than its JSON text is taken at its word."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is not None and not isinstance(raw, str):
        return {UNREADABLE_ARGUMENTS: repr(raw)[:10_000]}
    try:
        value = json.loads(raw or "{}")
    except (ValueError, RecursionError):
        return {UNREADABLE_ARGUMENTS: raw}
    return value if isinstance(value, dict) else {UNREADABLE_ARGUMENTS: raw}


def _text(content: object) -> str | None:
    """A message's content as text: a string, nothing, or a list of text parts
    (strings or ``{"type": "text", "text": ...}``); None for anything else."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text") if isinstance(p, Mapping) else None for p in content]
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)  # type: ignore[arg-type]
    return None


def _count(value: object) -> int:
    """A token count from ``usage``: servers send null or leave it out; neither is a reason to fail."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def to_openai_message(message: Message) -> dict[str, Any]:
    """A :class:`Message` in the chat completions wire format."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))}}
            for call in message.tool_calls
        ]
    return out


def to_openai_tool(tool: Tool) -> dict[str, Any]:
    """A :class:`Tool` as a chat completions function tool."""
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}}
