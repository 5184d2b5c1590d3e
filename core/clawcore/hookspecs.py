"""Hook specifications: the contract between the core and every plugin.

A plugin implements any of these with ``@clawcore.hookimpl``; the core calls
them only through the typed facade in :mod:`clawcore.hooks`, which holds the
rules for combining several plugins' answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pluggy

from clawcore.types import (
    AuditEvent,
    Decision,
    HookContext,
    Message,
    PromptSection,
    ToolCall,
    ToolResult,
    Verdict,
)

PROJECT = "clawcore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------
# Capabilities: called once when the runtime is built
# --------------------------------------------------------------------------


@hookspec
def config_schema() -> Mapping[str, Mapping[str, Any]] | None:
    """Called when the configuration is validated, to collect each plugin's schema.

    :returns: a mapping from a dotted section path (``"prism"``,
        ``"memory.embeddings.local"``) to the JSON Schema of that section, or
        None when the plugin has no configuration. Every key of a section must
        be declared: an object that lists ``properties`` refuses others unless it
        sets ``additionalProperties`` itself (one without ``properties`` takes
        any key). ``default`` values fill the effective config.

    All answers are merged; two plugins claiming the same path is an error.
    """


@hookspec
def register_embedding_providers(register: Callable[..., None]) -> None:
    """Called when the memory index chooses its embedding provider.

    Call ``register(name, factory)`` once per provider, where
    ``factory(settings, home)`` gets the provider's config section and
    ``$CLAWCORE_HOME`` and returns an
    :class:`~clawcore.types.EmbeddingProvider`, raising
    :class:`~clawcore.types.ProviderUnavailable` with an actionable message
    when it cannot work here (the chain then falls back).

    :param register: the registry's callback.
    :returns: None; answers are given through ``register``.
    """


@hookspec
def register_retrievers(register: Callable[..., None]) -> None:
    """Called when memory search is set up, to collect retrievers.

    Call ``register(name, factory)``; ``factory(memory)`` returns an object
    with ``search(query, max_results, min_score) -> SearchResponse``. The
    builtin ``hybrid`` retriever is the SQLite BM25 + vector search.

    :param register: the registry's callback.
    """


@hookspec
def register_sandbox_backends(register: Callable[..., None]) -> None:
    """Called when the runtime needs a sandbox backend.

    Call ``register(name, factory)``; ``factory(config, context)`` returns a
    :class:`~clawcore.types.SandboxBackend` or raises
    :class:`~clawcore.types.ProviderUnavailable`.

    :param register: the registry's callback.
    """


@hookspec
def register_tools(register: Callable[..., None]) -> None:
    """Called when the runtime builds its tool table.

    Call ``register(tool)`` with a :class:`~clawcore.types.Tool` per tool.
    A later registration of the same name is an error.

    :param register: the registry's callback.
    """


@hookspec
def register_models(register: Callable[..., None]) -> None:
    """Called when the runtime needs a chat model.

    Call ``register(name, factory)``; ``factory(settings)`` returns a
    :class:`~clawcore.types.ChatModel` or raises
    :class:`~clawcore.types.ProviderUnavailable`.

    :param register: the registry's callback.
    """


@hookspec
def register_commands(cli: Any) -> None:
    """Called when the ``clawcore`` command starts, to add plugin commands.

    :param cli: the root :class:`click.Group`; call ``cli.add_command(...)``
        or decorate with ``@cli.group()``.
    """


@hookspec
def decide_tool_call(call: ToolCall, context: HookContext) -> Decision | None:
    """Called before every tool call: the policy deciders.

    Every answer counts and the strictest wins (deny > confirm > allow). An
    implementation that raises makes the call denied (fail closed), and the
    failure is audited.

    :param call: the tool call about to run.
    :param context: the session it runs in.
    :returns: a :class:`~clawcore.types.Decision`, or None for no opinion.
    """


@hookspec
def record_audit_event(event: AuditEvent, context: HookContext | None) -> None:
    """Called for every audit event; each audit sink receives every event.

    Payloads have secrets redacted before this hook sees them.

    :param event: the event.
    :param context: the session it belongs to, or None for runtime events.
    """


# --------------------------------------------------------------------------
# Runtime hooks: the ten points where a monitor attaches
# --------------------------------------------------------------------------


@hookspec
def gateway_start(config: Mapping[str, Any], home: Any) -> None:
    """Called once when a runtime (or the gateway serving it) starts.

    Monitors restore persisted state and start background work here.

    :param config: the effective configuration.
    :param home: ``$CLAWCORE_HOME`` as a :class:`pathlib.Path`.
    """


@hookspec
def message_received(message: Message, context: HookContext) -> Verdict | None:
    """Called when an inbound message reaches a session, before the model sees it.

    :param message: the inbound message.
    :param context: the session.
    :returns: a :class:`~clawcore.types.Verdict`, or None for no opinion.
        All verdicts are collected.
    """


@hookspec
def before_prompt_build(context: HookContext) -> Sequence[PromptSection] | PromptSection | None:
    """Called before the system prompt is assembled for a model call.

    The agent asks again before every model call of a turn, after the tool results of
    the previous round arrived, so an answer may depend on them. Keep it cheap.

    :param context: the session.
    :returns: sections to add to the system prompt, or None. All answers are
        collected and sorted by ``order``.
    """


@hookspec
def before_tool_call(call: ToolCall, context: HookContext) -> Decision | None:
    """Called before any tool runs, after the policy deciders.

    Monitors answer here; answers combine with the policy's strictest-wins.
    An implementation that raises makes the call denied (fail closed).

    :param call: the tool call.
    :param context: the session.
    :returns: a :class:`~clawcore.types.Decision`, or None for no opinion.
    """


@hookspec
def after_tool_call(call: ToolCall, result: ToolResult, context: HookContext) -> Verdict | None:
    """Called after a tool ran, with its raw result.

    :param call: the tool call.
    :param result: what the tool returned, unredacted.
    :param context: the session.
    :returns: a :class:`~clawcore.types.Verdict`, or None. All verdicts are
        collected.
    """


@hookspec
def tool_result_persist(
    call: ToolCall, result: ToolResult, text: str, context: HookContext
) -> str | None:
    """Called before a tool result is written to the transcript and shown to the model.

    Implementations chain: each receives in ``text`` the previous one's
    replacement (plugins registered later run first, as in pluggy's order;
    builtins run last, so the builtin secret redaction always sees the final text).

    :param call: the tool call.
    :param result: the raw result.
    :param text: the text as it stands now.
    :param context: the session.
    :returns: replacement text, or None to keep ``text``.
    """


@hookspec
def before_message_write(message: Message, context: HookContext) -> Message | None:
    """Called before any message is written to the transcript.

    Implementations chain like :func:`tool_result_persist`.

    :param message: the message as it stands now.
    :param context: the session.
    :returns: a replacement message, or None to keep it.
    """


@hookspec
def message_sending(message: Message, context: HookContext) -> Decision | None:
    """Called before an outbound message leaves the session.

    A ``deny`` cancels the message; the user gets a notice instead. An
    implementation that raises cancels the message (fail closed).

    :param message: the outbound message.
    :param context: the session.
    :returns: a :class:`~clawcore.types.Decision`, or None for no opinion.
    """


@hookspec
def subagent_spawning(task: str, context: HookContext) -> Decision | None:
    """Called before a sub-agent is started.

    :param task: the instruction the sub-agent would get.
    :param context: the parent session.
    :returns: a :class:`~clawcore.types.Decision`, or None for no opinion.
        Combines strictest-wins; raising denies.
    """


@hookspec
def session_end(context: HookContext) -> None:
    """Called when a session closes.

    :param context: the session.
    """


# --------------------------------------------------------------------------
# Memory lifecycle
# --------------------------------------------------------------------------


@hookspec
def session_start(context: HookContext) -> None:
    """Called when a session opens, before its first message.

    :param context: the session.
    """


@hookspec
def before_compaction(messages: Sequence[Message], context: HookContext) -> None:
    """Called after the memory flush and before older messages are summarised.

    :param messages: the messages about to be summarised.
    :param context: the session.
    """


@hookspec
def after_compaction(summary: str, compaction_count: int, context: HookContext) -> None:
    """Called after older messages were replaced by a summary in the model's context.

    :param summary: the summary text.
    :param compaction_count: how many compactions this session has had now.
    :param context: the session.
    """
