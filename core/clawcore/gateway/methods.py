"""The methods a gateway client may call, and how each reaches the runtime.

Tool-backed methods go through :meth:`Runtime.call_tool`, so a call over the
gateway meets the same policy deciders, monitors and audit as a local one.
Every handler runs on the runtime's single worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawcore.gateway.errors import GatewayCallError

if TYPE_CHECKING:
    from clawcore.runtime import Runtime
    from clawcore.types import HookContext

__all__ = ["METHODS", "Method"]

Handler = Callable[["Runtime", Mapping[str, Any], "HookContext"], Any]


@dataclass(frozen=True)
class Method:
    """One callable method: its parameters (name -> accepted JSON types) and handler."""

    name: str
    params: Mapping[str, tuple[type, ...]]
    required: tuple[str, ...]
    handler: Handler
    description: str


def _check(method: Method, params: Mapping[str, Any]) -> None:
    unknown = sorted(set(params) - set(method.params))
    if unknown:
        raise GatewayCallError(
            "bad_params",
            f"{method.name}: unknown parameter(s) {', '.join(unknown)}; "
            f"accepted: {', '.join(method.params) or 'none'}",
        )
    for name in method.required:
        if name not in params:
            raise GatewayCallError("bad_params", f"{method.name}: missing parameter {name!r}")
    for name, value in params.items():
        types = method.params[name]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            wanted = " or ".join(t.__name__ for t in types)
            raise GatewayCallError("bad_params", f"{method.name}: {name} must be {wanted}")


def _tool(tool: str) -> Handler:
    def handler(runtime: Runtime, params: Mapping[str, Any], context: HookContext) -> Any:
        if tool not in runtime.tools:
            raise GatewayCallError("unavailable", f"the {tool} tool is not registered in this runtime")
        result = runtime.call_tool(tool, dict(params), context=context)
        if result.is_error:
            code = "denied" if result.metadata.get("decision") else "tool_error"
            raise GatewayCallError(code, result.content)
        return {"content": result.content, "metadata": dict(result.metadata)}

    return handler


def _sessions_list(runtime: Runtime, params: Mapping[str, Any], context: HookContext) -> Any:
    try:
        from clawcore.sessions import SessionStore
    except ImportError as exc:
        raise GatewayCallError(
            "unavailable", f"sessions are unavailable in this installation ({exc})"
        ) from None
    infos = SessionStore(runtime.home).list()
    limit = int(params.get("limit", 50))
    return [
        {
            "id": i.id,
            "started": i.started,
            "lastActivity": i.last_activity,
            "messages": i.messages,
            "tokens": i.tokens,
            "compactions": i.compactions,
            "channel": i.channel,
        }
        for i in infos[: max(0, limit)]
    ]


#: How much of the audit log's end ``audit.tail`` reads at most.
TAIL_BYTES = 64 * 1024 * 1024


def _audit_tail(runtime: Runtime, params: Mapping[str, Any], context: HookContext) -> Any:
    from clawcore.security.audit import tail_records
    from clawcore.security.audit_plugin import AuditSettings

    settings = AuditSettings.from_config(runtime.config.data, runtime.home)
    count = min(max(int(params.get("n", 20)), 0), 1000)
    # With a kind, the log is read backwards as far as it takes to find `count` of them, within its last
    # 64 MiB: the gateway runs one call at a time, and one client must not hold the others for a whole log.
    return [r.to_json() for r in tail_records(settings.path, count, params.get("kind"), max_bytes=TAIL_BYTES)]


def _chat_send(runtime: Runtime, params: Mapping[str, Any], context: HookContext) -> Any:
    from clawcore.errors import ClawcoreError
    from clawcore.sessions import InvalidSessionId, SessionStore
    from clawcore.text import well_formed

    session_id = params.get("session")
    if not isinstance(params.get("message"), str) or not params["message"].strip():
        raise GatewayCallError("bad_params", "message must be non-empty text")
    try:
        if session_id is not None and not SessionStore(runtime.home).exists(session_id):
            # A client that names a session means to continue it: a mistyped id must not start afresh.
            raise GatewayCallError("bad_params", f"no session {session_id!r}; leave `session` out to start one")
        with runtime.session(session_id, channel="gateway") as session:
            # The model and the transcript get the same text: a lone surrogate ("\ud800") becomes U+FFFD.
            reply = session.send(well_formed(params["message"]))
    except InvalidSessionId as exc:
        raise GatewayCallError("bad_params", str(exc)) from None
    except GatewayCallError:
        raise
    except ClawcoreError as exc:  # no model configured, model unreachable, the session open elsewhere
        raise GatewayCallError("unavailable", str(exc)) from None
    return {
        "session": session.id,
        "text": reply.text,
        "withheld": reply.withheld,
        "toolCalls": [call.name for call in reply.tool_calls],
        "inputTokens": reply.input_tokens,
        "outputTokens": reply.output_tokens,
    }


def _ping(runtime: Runtime, params: Mapping[str, Any], context: HookContext) -> Any:
    return {"pong": True}


METHODS: Mapping[str, Method] = {
    m.name: m
    for m in (
        Method("ping", {}, (), _ping, "Check the connection."),
        Method(
            "memory.search",
            {"query": (str,), "maxResults": (int,), "minScore": (int, float)},
            ("query",),
            _tool("memory_search"),
            "Search memory (the memory_search tool).",
        ),
        Method(
            "memory.get",
            {"path": (str,), "from": (int,), "lines": (int,)},
            ("path",),
            _tool("memory_get"),
            "Read lines of a memory file (the memory_get tool).",
        ),
        Method("sessions.list", {"limit": (int,)}, (), _sessions_list, "List sessions, most recent first."),
        Method(
            "chat.send",
            {"message": (str,), "session": (str,)},
            ("message",),
            _chat_send,
            "One agent turn: a new session, or `session` to continue one (channel gateway).",
        ),
        Method(
            "audit.tail",
            {"n": (int,), "kind": (str,)},
            (),
            _audit_tail,
            "The last audit records (n up to 1000; kind may end with *).",
        ),
    )
}


def check_params(method: Method, params: Mapping[str, Any]) -> None:
    """Raise :class:`GatewayCallError` (``bad_params``) when ``params`` do not fit ``method``."""
    _check(method, params)
