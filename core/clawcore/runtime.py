"""The runtime: configuration, plugins, memory, tools and security, wired together.

Every way into clawcore — the CLI, the gateway, the Python API, the agent
loop — goes through one :class:`Runtime`, so a tool call from any of them
passes the same deciders, monitors, sandbox and audit log.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pluggy

from clawcore.config import Config, clawcore_home, load_config, read_config_file
from clawcore.errors import ClawcoreError, PluginError
from clawcore.hooks import Hooks
from clawcore.plugins import PluginSettings, get_plugin_manager
from clawcore.types import (
    Action,
    AuditEvent,
    Decision,
    HookContext,
    ProviderUnavailable,
    SandboxBackend,
    Tool,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from clawcore.agent.loop import Session
    from clawcore.memory import Memory

__all__ = ["ConfirmHandler", "Runtime", "ToolContext"]

#: Asked when a decision is ``confirm``: return True to run the call. Anything else is a no,
#: so a handler that returns the raw answer (``"n"``) cannot approve by being truthy.
ConfirmHandler = Callable[[ToolCall, Decision], bool]


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler gets besides its arguments."""

    runtime: Runtime
    hook: HookContext

    @property
    def workspace(self) -> Path:
        return self.runtime.workspace

    @property
    def memory(self) -> Memory:
        return self.runtime.memory

    @property
    def sandbox(self) -> SandboxBackend:
        """The sandbox backend of the calling session."""
        return self.runtime.sandbox_for(self.hook.session_id)


class Runtime:
    """Configuration, plugins and every subsystem, for one ``$CLAWCORE_HOME``.

    :param home: ``$CLAWCORE_HOME``; default from the environment.
    :param config: a parsed config mapping (the Python API); default the
        home's ``clawcore.yaml``.
    :param plugin_manager: a prepared manager (tests); default one built
        from the config's ``plugins`` section and the environment.
    :param confirm: asked for every ``confirm`` decision; with none,
        confirm means deny.
    :raises ClawcoreError: invalid configuration or a missing required plugin.
    """

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        config: Mapping[str, Any] | Config | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
        confirm: ConfirmHandler | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.home = Path(home).expanduser() if home is not None else clawcore_home(environ)
        if isinstance(config, Config):
            raw: Mapping[str, Any] = config.raw
        elif config is not None:
            raw = config
        else:
            raw = read_config_file(self.home / "clawcore.yaml")
        plugin_section = raw.get("plugins") if isinstance(raw.get("plugins"), Mapping) else None
        self.pm = plugin_manager or get_plugin_manager(PluginSettings.from_sources(plugin_section, environ))
        if isinstance(config, Config):
            self.config = config
        elif config is not None:
            self.config = load_config(self.home, data=config, pm=self.pm)
        else:
            self.config = load_config(self.home, pm=self.pm)
        self.confirm = confirm
        self.hooks = Hooks(self.pm, on_failure=self._hook_failed)
        self._sandboxes: dict[str, SandboxBackend] = {}
        self._memory: Memory | None = None
        self._started = False
        self._collecting = False

    # -- identity -------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        return self.config.workspace

    def context(self, session_id: str = "", *, conversation_id: str = "", channel: str = "local") -> HookContext:
        """The :class:`HookContext` for a session (``""`` for runtime-level work)."""

        def record(kind: str, data: Mapping[str, Any], _sid: str = session_id) -> None:
            self.audit(kind, data, session_id=_sid)

        return HookContext(
            session_id=session_id,
            home=self.home,
            workspace=self.workspace,
            config=self.config.data,
            conversation_id=conversation_id or session_id,
            channel=channel,
            record=record,
            # While the tools are being collected (a plugin's register_tools failing is audited) none are known.
            high_risk_tools=frozenset() if self._collecting else self.high_risk_tools,
            tool_groups={} if self._collecting else self.tool_groups,
        )

    def start(self) -> None:
        """Fire ``gateway_start`` once; idempotent."""
        if not self._started:
            self._started = True
            self.hooks.notify("gateway_start", None, config=self.config.data, home=self.home)

    # -- audit ----------------------------------------------------------------

    def audit(self, kind: str, data: Mapping[str, Any], *, session_id: str = "") -> None:
        """Send an event to every audit sink, secrets redacted first."""
        from clawcore.security.secrets import redact, redact_data

        # The kind and the session id are text a caller chose (`clawcore audit record KIND --session S`).
        kind, session_id = redact(kind), redact(session_id)
        event = AuditEvent(kind, redact_data(dict(data)), session_id, time.time())
        # Sinks need the home and config to know where to write, so they always get a context.
        context = self.context(session_id)
        self.hooks.notify("record_audit_event", context, event=event, context=context)

    def _hook_failed(self, hook: str, plugin: str, exc: BaseException, context: HookContext | None) -> None:
        if hook == "record_audit_event":
            return  # never recurse into a failing sink
        self.audit(
            "hook.error",
            {"hook": hook, "plugin": plugin, "error": f"{type(exc).__name__}: {exc}"},
            session_id=context.session_id if context else "",
        )

    # -- subsystems ------------------------------------------------------------

    @property
    def memory(self) -> Memory:
        """The memory index over the workspace, opened on first use."""
        if self._memory is None:
            from clawcore.memory import open_memory

            self._memory = open_memory(
                self.workspace,
                self.config,
                plugin_manager=self.pm,
                index_path=self.home / "index" / "memory.sqlite",
                on_failure=self._hook_failed,
            )
        return self._memory

    @property
    def sandbox(self) -> SandboxBackend:
        """The runtime's own sandbox backend (no session), created on first use."""
        return self.sandbox_for("")

    def sandbox_for(self, session_id: str) -> SandboxBackend:
        """The sandbox backend of one session, created on first use.

        Each session has its own, so a backend that keeps state per instance
        (a container) never mixes two sessions; :meth:`release_sandbox` ends it.
        """
        backend = self._sandboxes.get(session_id)
        if backend is None:
            backend = self._sandboxes[session_id] = self.make_sandbox(session_id=session_id)
        return backend

    def release_sandbox(self, session_id: str) -> None:
        """Close the sandbox backend of a session, if it has one."""
        backend = self._sandboxes.pop(session_id, None)
        if backend is not None:
            backend.close()

    def make_sandbox(self, name: str | None = None, *, session_id: str = "") -> SandboxBackend:
        """Create a sandbox backend by name.

        The default is ``sandbox.backend`` as written in the config; where it is
        not written, a plugin section ``sandbox.<name>`` with ``enabled: true``
        selects that backend (``sandbox.docker.enabled``), else ``local``.
        """
        backends = self.hooks.sandbox_backends()
        name = name or self._default_sandbox_name()
        if name not in backends:
            hint = ("pip install clawcore-sandbox-docker" if name == "docker"
                    else "set sandbox.backend, or install the plugin that offers it")
            raise PluginError(f"sandbox backend {name!r} is not available (have: "
                              f"{', '.join(sorted(backends)) or 'none'}); {hint}")
        try:
            return backends[name](self.config, self.context(session_id))
        except ProviderUnavailable as exc:
            raise PluginError(f"sandbox backend {name!r} is unavailable: {exc}") from exc

    def _default_sandbox_name(self) -> str:
        written = self.config.raw.get("sandbox") if self.config.raw else self.config.data.get("sandbox")
        sandbox = self.config.section("sandbox")
        enabled = sorted(key for key, value in sandbox.items()
                         if isinstance(value, Mapping) and value.get("enabled") is True)
        if isinstance(written, Mapping) and written.get("backend"):
            chosen = str(written["backend"])
            for other in (name for name in enabled if name != chosen):
                warnings.warn(f"sandbox.{other}.enabled is true but sandbox.backend is {chosen!r}: commands run "
                              f"on {chosen!r} (remove one of the two)", RuntimeWarning, stacklevel=3)
            return chosen
        if len(enabled) == 1:
            return enabled[0]
        return str(self.config.get("sandbox.backend", "local"))

    @cached_property
    def tools(self) -> dict[str, Tool]:
        """Every tool registered by the builtins and plugins, by name."""
        self._collecting = True
        try:
            return self.hooks.tools()
        finally:
            self._collecting = False

    @cached_property
    def high_risk_tools(self) -> frozenset[str]:
        """The tools declared ``high_risk`` (for monitors, through :class:`HookContext`)."""
        return frozenset(name for name, tool in self.tools.items() if tool.high_risk)

    @cached_property
    def tool_groups(self) -> Mapping[str, tuple[str, ...]]:
        """The policy groups each tool declares (for the tool policy, through :class:`HookContext`)."""
        return MappingProxyType({name: tool.groups for name, tool in self.tools.items() if tool.groups})

    # -- the tool-call pipeline ---------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: HookContext | None = None,
        call_id: str = "",
    ) -> ToolResult:
        """Run one tool call through policy, monitors, sandbox and audit.

        Order: ``decide_tool_call`` + ``before_tool_call`` (strictest wins) →
        confirmation → the tool → ``after_tool_call`` → ``tool_result_persist``.
        A denied call returns an error result; nothing raises for a tool's own
        failure: a handler that raises, or answers anything but a :class:`ToolResult` with text
        content (a bare ``str``, ``None``), gives an error result — what it returned is not passed on,
        since nothing says whether it can be trusted. The first call starts the runtime
        (``gateway_start``), so monitors have restored their state before they judge anything.
        """
        self.start()
        context = context or self.context()
        call = ToolCall(name, dict(arguments or {}), call_id or uuid.uuid4().hex[:12])
        tool = self.tools.get(name)
        if tool is None:
            self.audit("tool.unknown", {"tool": name}, session_id=context.session_id)
            return ToolResult(f"error: unknown tool {name!r}; available: {', '.join(sorted(self.tools))}", is_error=True)

        decision = self.decide(call, context)
        if decision.action is not Action.ALLOW:
            return ToolResult("denied: " + ("; ".join(decision.reasons) or "by policy"), is_error=True,
                              metadata={"decision": decision.action.value, "rules": list(decision.rules)})

        started = time.monotonic()
        try:
            answer: object = tool.handler(call.arguments, ToolContext(self, context))
        except ClawcoreError as exc:
            answer = ToolResult(f"error: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not take the agent down
            answer = ToolResult(f"error: {name} failed: {type(exc).__name__}: {exc}", is_error=True)
        result = _checked(name, answer)
        self.audit(
            "tool.executed",
            {"tool": name, "call_id": call.id, "is_error": result.is_error,
             "seconds": round(time.monotonic() - started, 4)},
            session_id=context.session_id,
        )
        verdicts = self.hooks.after_tool_call(call, result, context)
        for verdict in verdicts:
            if verdict.flagged:
                self.audit(
                    "monitor.verdict",
                    {"hook": "after_tool_call", "tool": name, "level": verdict.level.value,
                     "score": verdict.score, "rules": list(verdict.rules), "source": verdict.source},
                    session_id=context.session_id,
                )
        text = self.hooks.tool_result_persist(call, result, context)
        return ToolResult(text, result.is_error, result.untrusted, result.metadata)

    def decide(self, call: ToolCall, context: HookContext) -> Decision:
        """The final decision on a call, confirmation included, audited."""
        return self.settle(call, self.hooks.decide_tool_call(call, context), context, kind="tool.decision")

    def settle(self, call: ToolCall, decision: Decision, context: HookContext, *, kind: str) -> Decision:
        """Turn a ``confirm`` into allow or deny by asking the confirmation handler; audit as ``kind``.

        With no handler, or a handler that raises, confirm means deny.
        """
        record: dict[str, Any] = {
            "tool": call.name,
            "call_id": call.id,
            "arguments": dict(call.arguments),
            "action": decision.action.value,
            "reasons": list(decision.reasons),
            "rules": list(decision.rules),
            "source": decision.source,
        }
        if decision.action is Action.CONFIRM:
            answer = False
            if self.confirm is None:
                why = record["confirmation"] = "no one can confirm here (non-interactive)"
            else:
                try:
                    given = self.confirm(call, decision)
                    answer = given is True
                    why = record["confirmation"] = "approved" if answer else "refused" if given is False else (
                        f"refused (the handler returned {type(given).__name__}, not True)")
                except Exception as exc:  # a broken prompt (end of input, no terminal) is a no
                    why = record["confirmation"] = "not answered"
                    record["confirmation_error"] = f"{type(exc).__name__}: {exc}"
            if answer:
                final = Decision(Action.ALLOW, decision.reasons, decision.rules, decision.source)
            else:
                final = Decision(Action.DENY, (*decision.reasons, f"confirmation: {why}"), decision.rules,
                                 decision.source)
        else:
            final = decision
        record["final"] = final.action.value
        self.audit(kind, record, session_id=context.session_id)
        return final

    # -- sessions ------------------------------------------------------------

    def session(self, id: str | None = None, **options: Any) -> Session:
        """Open a chat session: a new one, or the existing transcript ``id``.

        ``options`` go to :class:`clawcore.agent.loop.Session` (``model``,
        ``channel``, ``clock``). Close it (or use ``with``) so ``session_end`` fires.
        """
        from clawcore.agent.loop import Session

        return Session(self, id, **options)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Close the memory index and every sandbox backend."""
        if self._memory is not None:
            self._memory.close()
            self._memory = None
        for session_id in list(self._sandboxes):
            self.release_sandbox(session_id)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checked(name: str, answer: object) -> ToolResult:
    """The handler's answer if it is a :class:`ToolResult` with text content, else an error result.

    What a handler returned in another shape is dropped, not turned into content: a bare string
    carries no ``untrusted`` mark, and the monitors must not read it as trusted text.
    """
    if isinstance(answer, ToolResult):
        if isinstance(answer.content, str):
            return answer
        wrong = f"a ToolResult with {type(answer.content).__name__} content"
    else:
        wrong = "None" if answer is None else f"a {type(answer).__name__}"
    return ToolResult(f"error: {name} failed: it returned {wrong}, not a ToolResult with text "
                      "(a bug in the tool; what it returned was dropped)", is_error=True)
