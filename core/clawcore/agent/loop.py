"""The agent turn loop: one :class:`Session` per conversation, one :meth:`Session.send` per turn.

A turn fires the runtime hooks in this order::

    message_received → before_message_write (user)
    → before_prompt_build → [memory flush → compaction, when due] → model call
    → for each tool call: runtime.call_tool (decide_tool_call + before_tool_call,
      the tool in its sandbox, after_tool_call, tool_result_persist)
      → before_message_write (tool result)
    → … before_prompt_build and more model calls while the model asks for tools
      (at most agent.maxToolRounds; the last one's tool calls are not run) …
    → before_message_write (reply) → message_sending → the reply

``session_start`` fires when a session opens, ``session_end`` when it closes.
Every message goes to the session's JSONL transcript; the model's context is
compacted near its limit, after a silent memory flush
(:mod:`clawcore.memory.flush`).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Self

import jsonschema

from clawcore.agent.compaction import estimate_tokens, plan_compaction, summarise
from clawcore.agent.prompt import MEMORY_SECTION, build_system_prompt, sandbox_section
from clawcore.agent.subagent import SPAWN_SUBAGENT, is_subagent
from clawcore.config import parse_size
from clawcore.errors import ClawcoreError, PluginError
from clawcore.memory.flush import MemoryFlush, resolve_timezone, should_run_memory_flush
from clawcore.sessions.history import SessionHistory, paired
from clawcore.sessions.store import SessionStore
from clawcore.sessions.transcript import Transcript, message_to_entry
from clawcore.text import well_formed
from clawcore.types import (
    UNREADABLE_ARGUMENTS,
    Action,
    ChatModel,
    HookContext,
    Message,
    PromptSection,
    ProviderUnavailable,
    Tool,
    ToolCall,
)

if TYPE_CHECKING:
    from clawcore.runtime import Runtime

__all__ = ["SEND_REPLY", "ModelUnavailable", "Session", "TurnReply", "resolve_model"]

#: The name a reply goes by when ``message_sending`` asks for it to be confirmed (its one argument: ``text``).
SEND_REPLY = "send_reply"


class ModelUnavailable(ClawcoreError):
    """The chat model cannot be built or did not answer."""


@dataclass(frozen=True)
class TurnReply:
    """What one :meth:`Session.send` produced."""

    #: The text for the user (a notice when ``message_sending`` withheld the reply).
    text: str
    #: Tool calls the model made during the turn, in order, as the transcript holds them (secrets masked).
    tool_calls: tuple[ToolCall, ...] = ()
    #: True when a ``message_sending`` decision cancelled the reply.
    withheld: bool = False
    reasons: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    #: Memory flushes and compactions that ran during the turn.
    flushes: int = 0
    compactions: int = 0


@dataclass(frozen=True)
class AgentSettings:
    """The ``agent`` config section, read once per session."""

    model: str = "openai"
    system_prompt: str | None = None
    max_tool_rounds: int = 12
    compaction_enabled: bool = True
    reserve_tokens_floor: int = 20000
    keep_recent_tokens: int = 8000
    flush_enabled: bool = True
    soft_threshold_tokens: int = 4000
    max_transcript_bytes: int = 2 * 1024 * 1024
    flush_max_rounds: int = 3
    timezone: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AgentSettings:
        agent = config.get("agent") or {}
        compaction = agent.get("compaction") or {}
        flush = compaction.get("memoryFlush") or {}
        return cls(
            model=str(agent.get("model", cls.model)),
            system_prompt=agent.get("systemPrompt"),
            max_tool_rounds=int(agent.get("maxToolRounds", cls.max_tool_rounds)),
            compaction_enabled=bool(compaction.get("enabled", True)),
            reserve_tokens_floor=int(compaction.get("reserveTokensFloor", cls.reserve_tokens_floor)),
            keep_recent_tokens=int(compaction.get("keepRecentTokens", cls.keep_recent_tokens)),
            flush_enabled=bool(flush.get("enabled", True)),
            soft_threshold_tokens=int(flush.get("softThresholdTokens", cls.soft_threshold_tokens)),
            max_transcript_bytes=parse_size(flush.get("maxTranscriptSize", cls.max_transcript_bytes)),
            flush_max_rounds=int(flush.get("maxRounds", cls.flush_max_rounds)),
            timezone=config.get("timezone"),
        )


def resolve_model(runtime: Runtime, name: str | None = None) -> ChatModel:
    """The chat model named ``name`` (default ``agent.model``), built from its ``models.<name>`` section.

    :raises PluginError: no plugin registers that model.
    :raises ModelUnavailable: the model's factory refused (no key, ...).
    """
    name = name or str(runtime.config.get("agent.model", "openai"))
    models = runtime.hooks.models()
    if name not in models:
        hint = "pip install clawcore-models-openai" if name == "openai" else f"install the plugin offering {name!r}"
        raise PluginError(f"chat model {name!r} is not available (have: {', '.join(sorted(models)) or 'none'}); "
                          f"{hint} or set agent.model")
    try:
        return models[name](runtime.config.section(f"models.{name}"))
    except ProviderUnavailable as exc:
        raise ModelUnavailable(f"chat model {name!r}: {exc}") from None


class Session:
    """One conversation: its transcript, its model context, its counters.

    Open with :meth:`Runtime.session`; use as a context manager or call
    :meth:`close` so ``session_end`` fires.
    """

    def __init__(
        self,
        runtime: Runtime,
        session_id: str | None = None,
        *,
        model: ChatModel | None = None,
        channel: str = "local",
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.runtime = runtime
        self.settings = AgentSettings.from_config(runtime.config.data)
        self.store = SessionStore(runtime.home)
        self._tz = resolve_timezone(self.settings.timezone)
        self._clock = clock or (lambda: dt.datetime.now(self._tz))
        self.model = model or resolve_model(runtime, self.settings.model)
        self.resumed = session_id is not None and self.store.exists(session_id)
        if not self.resumed:
            session_id, _ = self.store.create(session_id, channel=channel)
        assert session_id is not None
        self.id = session_id
        self._claim = self.store.claim(session_id)  # before reading: no other writer adds to it meanwhile
        try:
            self.transcript: Transcript = self.store.open(session_id)
            history = SessionHistory.from_entries(self.transcript.read().entries) if self.resumed else SessionHistory()
            self._start(history, channel)
        except BaseException:
            os.close(self._claim)  # a session that did not open holds nothing
            raise

    def _start(self, history: SessionHistory, channel: str) -> None:
        runtime = self.runtime
        self.channel = channel if not self.resumed else history.channel
        self.context: HookContext = runtime.context(self.id, channel=self.channel)
        self.messages: list[Message] = [m for _, m in history.context]
        self.summary: str | None = history.summary
        self.compaction_count = history.compaction_count
        self.memory_flush_compaction_count: int | None = history.memory_flush_compaction_count
        self._seq = history.next_seq
        self._seq_of: list[int] = [seq for seq, _ in history.context]
        self._reported_tokens = 0
        self._last_sections: Sequence[PromptSection] = ()
        self._flush_total = 0
        self._closed = False
        runtime.start()
        runtime.hooks.notify("session_start", self.context, context=self.context)

    # -- the turn ------------------------------------------------------------

    def send(self, text: str) -> TurnReply:
        """Run one turn for the user's ``text`` and return the reply.

        :raises ModelUnavailable: the model could not be reached; the user's
            message stays in the transcript.
        """
        if self._closed:
            raise ClawcoreError(f"session {self.id!r} is closed")
        hooks = self.runtime.hooks
        inbound = Message("user", text, channel=self.channel)
        for verdict in hooks.message_received(inbound, self.context):
            if verdict.flagged:
                self.runtime.audit("monitor.verdict", {
                    "hook": "message_received", "level": verdict.level.value, "score": verdict.score,
                    "rules": list(verdict.rules), "source": verdict.source}, session_id=self.id)
        self._write(inbound, keep=True)

        tools = [tool for tool in self.runtime.tools.values() if self._offers(tool.name)]
        calls: list[ToolCall] = []
        input_tokens = output_tokens = 0
        flushes_before, compactions_before = self._flush_total, self.compaction_count
        reply_text = ""
        rounds = max(1, self.settings.max_tool_rounds)
        # `rounds` rounds of tools, then one more call that reads the last round's results.
        for round_number in range(1, rounds + 2):
            # Built again for every model call: what the last round's tools returned may change them
            # (a monitor's security notice once untrusted content arrived), and the model reads it now.
            sections = self._prompt_sections()
            self._maintain(sections)
            self._make_room()
            system = self._system_prompt(sections)
            try:
                answer = self.model.complete([Message("system", system), *self.messages], tools)
            except ProviderUnavailable as exc:
                raise ModelUnavailable(str(exc)) from None
            input_tokens += answer.input_tokens
            output_tokens += answer.output_tokens
            self._reported_tokens = answer.input_tokens + answer.output_tokens
            # Some servers omit call ids; the chat format needs them to pair results with calls.
            requested = tuple(c if c.id else ToolCall(c.name, c.arguments, _new_call_id()) for c in answer.tool_calls)
            assistant = Message("assistant", answer.content, tool_calls=requested, channel=self.channel)
            # What was written (secrets redacted by before_message_write) is what may leave.
            assistant = self._write(assistant, keep=True,
                                    usage={"input": answer.input_tokens, "output": answer.output_tokens})
            reply_text = assistant.content
            if not requested:
                break
            # The caller sees the calls as written (a canary masked); the tools get them as the model made them.
            written = {c.id: c for c in assistant.tool_calls}
            calls.extend(written.get(call.id, call) for call in requested)
            if round_number > rounds:
                reply_text = self._stop(requested, reply_text)
                break
            try:
                # The results of one reply share one budget: together they are what the next call must fit.
                limit = self._result_limit(len(requested))
                for call in requested:
                    result_text = _cut(self._run_tool(call), limit, "it is larger than this model's context allows")
                    self._write(Message("tool", result_text, tool_call_id=call.id, channel=self.channel), keep=True)
            except BaseException:
                self._answer_open_calls()
                raise

        outbound = Message("assistant", reply_text, channel=self.channel)
        decision = hooks.message_sending(outbound, self.context)
        if decision.action is Action.CONFIRM:
            # Asked like a tool call, as `send_reply`; with no one to ask, the reply is withheld.
            decision = self.runtime.settle(ToolCall(SEND_REPLY, {"text": reply_text}), decision, self.context,
                                           kind="message.decision")
        withheld = decision.action is Action.DENY
        if withheld:
            self.runtime.audit("message.withheld", {"reasons": list(decision.reasons), "rules": list(decision.rules),
                                                    "source": decision.source}, session_id=self.id)
            self.transcript.append({"type": "notice", "event": "message_withheld",
                                    "reasons": list(decision.reasons)})
            reply_text = "[reply withheld: " + ("; ".join(decision.reasons) or "by policy") + "]"
        return TurnReply(reply_text, tuple(calls), withheld, decision.reasons if withheld else (),
                         input_tokens, output_tokens, self._flush_total - flushes_before,
                         self.compaction_count - compactions_before)

    def _offers(self, name: str) -> bool:
        """A sub-agent is not offered what it may not use: it cannot start sub-agents of its own."""
        return not (name == SPAWN_SUBAGENT.name and is_subagent(self.id))

    def _stop(self, requested: Sequence[ToolCall], text: str) -> str:
        """End a turn at ``maxToolRounds``: the last round's calls are not run, the user is told; returns the reply.

        Their results could not reach the model this turn, so they do not run; each is answered saying so,
        and the reply the user sees goes to the transcript and the context: the model learns it was stopped.
        """
        rounds = self.settings.max_tool_rounds
        self.runtime.audit("agent.max_tool_rounds", {"rounds": rounds, "not_run": [c.name for c in requested]},
                           session_id=self.id)
        for call in requested:
            self._write(Message("tool", f"[not run: this turn reached agent.maxToolRounds ({rounds}); ask for it "
                                "again in the next turn if it is still needed]", tool_call_id=call.id,
                                channel=self.channel), keep=True)
        notice = f"(stopped after {rounds} rounds of tool calls; raise agent.maxToolRounds to allow more)"
        # The model's own text is in the message before; this one adds what the user was told.
        self._write(Message("assistant", notice, channel=self.channel, metadata={"stopped": "maxToolRounds"}),
                    keep=True)
        return f"{text}\n\n{notice}" if text else notice

    def _answer_open_calls(self) -> None:
        """Answer every tool call of the context still without a result, as a resumed session would.

        Something escaped mid-round (Ctrl-C, a full disk): the chat API refuses a context with an
        unanswered call, so without this every later turn of the live session would fail.
        """
        context = paired(zip(self._seq_of, self.messages, strict=True))
        self._seq_of = [seq for seq, _ in context]
        self.messages = [message for _, message in context]

    def _run_tool(self, call: ToolCall) -> str:
        tool = self.runtime.tools.get(call.name)
        if tool is not None and not self._offers(call.name):
            # Refused before the policy runs: nobody is asked to confirm what could never run.
            self.runtime.audit("tool.not_offered", {"tool": call.name, "call_id": call.id}, session_id=self.id)
            return f"error: {call.name} is not available in this session"
        if tool is not None:
            refusal = _argument_problem(tool, call.arguments)
            if refusal:
                kind, problem = refusal
                self.runtime.audit(kind, {"tool": call.name, "call_id": call.id, "problem": problem},
                                   session_id=self.id)
                if kind == "tool.invalid_schema":
                    return f"error: {call.name} cannot run: its parameter schema is broken ({problem})"
                return f"error: invalid arguments for {call.name}: {problem}"
        result = self.runtime.call_tool(call.name, call.arguments, context=self.context, call_id=call.id)
        return result.content

    def _result_limit(self, results: int) -> int:
        """Characters each of ``results`` results of one reply may keep: together a quarter of the window
        left after ``reserveTokensFloor`` (at four characters a token).

        The current turn cannot be compacted away, so results larger than the context would make every
        request of the turn fail; the model is told what was left out and can ask for parts.
        """
        budget = max(256, (self.model.context_window - self.settings.reserve_tokens_floor) // 4) * 4
        return max(_MIN_RESULT_CHARS, budget // max(1, results))

    def _make_room(self) -> None:
        """Cut the current turn's tool results, oldest first, while the context is past the compaction threshold.

        Compaction keeps the current turn whole, so a turn of many rounds can outgrow the window on its own;
        the model has read the oldest results already. The transcript keeps them as the model first saw them.
        """
        excess = (self.context_tokens - self._compact_at()) * 4  # characters, at four a token
        last_user = max((i for i, m in enumerate(self.messages) if m.role == "user"), default=0)
        for index in range(last_user, len(self.messages)):
            message = self.messages[index]
            if excess <= 0:
                return
            if message.role != "tool" or len(message.content) <= _MIN_RESULT_CHARS:
                continue
            cut = _cut(message.content, max(_MIN_RESULT_CHARS, len(message.content) - excess - _NOTE_CHARS),
                       "this turn outgrew the model's context")
            excess -= len(message.content) - len(cut)
            self.messages[index] = replace(message, content=cut)

    # -- prompt ----------------------------------------------------------------

    def _prompt_sections(self) -> list[PromptSection]:
        sections = [MEMORY_SECTION]
        try:
            sections.append(sandbox_section(self.runtime.sandbox_for(self.id).info()))
        except ClawcoreError as exc:
            sections.append(PromptSection("Sandbox", f"Shell commands are unavailable here: {exc}", order=20))
        sections.extend(self.runtime.hooks.before_prompt_build(self.context))
        return sections

    def _system_prompt(self, sections: Sequence[PromptSection]) -> str:
        return build_system_prompt(sections, now=self._now(), extra=self.settings.system_prompt, summary=self.summary)

    # -- transcript ------------------------------------------------------------

    def _write(self, message: Message, *, keep: bool, silent: bool = False, **extra: Any) -> Message:
        """``before_message_write``, then the transcript; ``keep`` adds it to the model's context.

        Text enters well-formed (a lone surrogate from a model, a tool or a client is U+FFFD), as the
        transcript stores it: the context and the transcript hold the same text, and both can be encoded.
        """
        message = replace(message, content=well_formed(message.content))
        message = self.runtime.hooks.before_message_write(message, self.context)
        seq = self._seq
        self._seq += 1
        self.transcript.append(message_to_entry(message, seq, silent=True if silent else None, **extra))
        if keep:
            self.messages.append(message)
            self._seq_of.append(seq)
        return message

    # -- flush and compaction -------------------------------------------------

    def _now(self) -> dt.datetime:
        """The clock's time in the configured ``timezone`` (daily notes are dated in it)."""
        now = self._clock()
        return now.astimezone(self._tz) if now.tzinfo is not None else now.replace(tzinfo=self._tz)

    @property
    def context_tokens(self) -> int:
        """The context's size now: the larger of the estimate and the model's last report."""
        return max(estimate_tokens(self.messages, self._system_prompt(self._last_sections)),
                   self._reported_tokens)

    def _active_bytes(self) -> int:
        return sum(len(m.content.encode("utf-8")) + sum(len(str(c.arguments)) for c in m.tool_calls)
                   for m in self.messages)

    def _compact_at(self) -> int:
        """Tokens at which the context is compacted: ``window − reserveTokensFloor``, at least half the window."""
        window = self.model.context_window
        return max(window - self.settings.reserve_tokens_floor, window // 2)

    def _maintain(self, sections: Sequence[PromptSection]) -> None:
        """Flush memory when due, then compact when due — never the other way round."""
        self._last_sections = sections
        if not self.settings.compaction_enabled:
            return
        window = self.model.context_window
        tokens = self.context_tokens
        over_size = self._active_bytes() >= self.settings.max_transcript_bytes
        compact_at = self._compact_at()
        flushed_this_cycle = (self.memory_flush_compaction_count is not None
                              and self.memory_flush_compaction_count == self.compaction_count)
        due = should_run_memory_flush(
            total_tokens=tokens, context_window_tokens=window,
            reserve_tokens_floor=self.settings.reserve_tokens_floor,
            soft_threshold_tokens=self.settings.soft_threshold_tokens,
            compaction_count=self.compaction_count,
            memory_flush_compaction_count=self.memory_flush_compaction_count,
        ) or (over_size and not flushed_this_cycle)
        saved = True
        if due and self.settings.flush_enabled:
            saved = self._flush(sections, tokens, "size" if over_size else "threshold")
        if tokens >= compact_at or over_size:
            if not saved and tokens < window and not over_size:
                return  # the flush failed (the model erred): compact next turn, after a flush that works
            self._compact(tokens)

    def _flush(self, sections: Sequence[PromptSection], tokens: int, reason: str) -> bool:
        """Run the silent flush turn and record it; False when it failed (the cycle stays unflushed)."""
        def write(message: Message, extra: Mapping[str, Any]) -> None:
            self._write(message, keep=False, silent=True, **extra)

        flush = MemoryFlush(self.runtime, self.model, self.context, write, max_rounds=self.settings.flush_max_rounds)
        system_prompt = self._system_prompt(sections)
        messages = self.messages
        if tokens >= self.model.context_window:
            # The model would refuse the whole context: the flush reads its newest part, as much as
            # fits under the compaction threshold (a resumed session, a model switched to a smaller window).
            plan = plan_compaction(messages, max(1, self._compact_at() - estimate_tokens([], system_prompt)))
            messages = plan.recent(messages) if plan is not None else messages
        outcome = flush.run(system_prompt, messages, self._now())
        # Recorded with the count of the cycle it belongs to, before any compaction increments it. A flush
        # that failed does not count: the cycle's notes are still unsaved, and the next turn tries again.
        if not outcome.error:
            self.memory_flush_compaction_count = self.compaction_count
        self._flush_total += 1
        self.transcript.append({
            "type": "flush", "compactionCount": self.compaction_count, "reason": reason, "tokens": tokens,
            "path": outcome.path, "writes": outcome.writes, "refused": outcome.refused,
            "nothingToStore": outcome.writes == 0 and not outcome.error,
            **({"error": outcome.error} if outcome.error else {}),
            **({"restoredMemoryMd": True} if outcome.restored_memory_md else {}),
        })
        self.runtime.audit("memory.flush", {"path": outcome.path, "writes": outcome.writes, "reason": reason,
                                            "compaction_count": self.compaction_count, "error": outcome.error},
                           session_id=self.id)
        if outcome.writes:
            try:
                self.runtime.memory.sync()
            except Exception as exc:  # noqa: BLE001 - the note is on disk; the next sync indexes it
                self.runtime.audit("memory.sync_failed", {"error": f"{type(exc).__name__}: {exc}"},
                                   session_id=self.id)
        return not outcome.error

    def _compact(self, tokens: int) -> None:
        keep = min(self.settings.keep_recent_tokens,
                   max(1, (self.model.context_window - self.settings.reserve_tokens_floor) // 3))
        plan = plan_compaction(self.messages, keep)
        if plan is None:
            return
        older = plan.older(self.messages)
        self.runtime.hooks.notify("before_compaction", self.context, messages=older, context=self.context)
        try:
            summary = summarise(self.model, older, self.summary, budget_tokens=self._compact_at())
        except ProviderUnavailable as exc:
            raise ModelUnavailable(f"compaction failed: {exc}") from None
        self.summary = summary.text
        self.messages = plan.recent(self.messages)
        self._seq_of = self._seq_of[plan.keep_from:]
        self.compaction_count += 1
        self._reported_tokens = 0
        self.transcript.append({
            "type": "compaction", "compactionCount": self.compaction_count, "summary": summary.text,
            "firstKeptSeq": self._seq_of[0] if self._seq_of else self._seq,
            "summarisedMessages": len(older), "tokensBefore": tokens,
            "tokensAfter": self.context_tokens,  # counted as tokensBefore was: system prompt, summary, messages
            "usage": {"input": summary.input_tokens, "output": summary.output_tokens},
        })
        self.runtime.hooks.notify("after_compaction", self.context, summary=summary.text,
                                  compaction_count=self.compaction_count, context=self.context)

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Fire ``session_end``; idempotent."""
        if not self._closed:
            self._closed = True
            try:
                self.runtime.hooks.notify("session_end", self.context, context=self.context)
                self.runtime.release_sandbox(self.id)
            finally:
                os.close(self._claim)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _argument_problem(tool: Tool, arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why the call must not run — ``(audit kind, one line)`` — or None when ``arguments`` fit the schema.

    A schema that cannot be checked (not a schema, a ``pattern`` that is no regex, ...) is the tool's
    fault, and the tool does not run: arguments nobody could check are not passed on.
    """
    if UNREADABLE_ARGUMENTS in arguments:
        raw = str(arguments[UNREADABLE_ARGUMENTS])
        return "tool.invalid_arguments", f"the arguments are not a JSON object ({raw[:200]!r}); send them again as one"
    try:
        validator = jsonschema.Draft202012Validator(dict(tool.parameters))
        error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    except Exception as exc:  # noqa: BLE001 - any failure to validate is the schema's
        detail = (str(exc).strip().splitlines() or [""])[0][:200]
        return "tool.invalid_schema", f"{type(exc).__name__}: {detail}"
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return "tool.invalid_arguments", f"{where + ': ' if where else ''}{error.message}"


#: A tool result is never cut below this many characters; the note saying what was left out is about this long.
_MIN_RESULT_CHARS = 200
_NOTE_CHARS = 120


def _cut(text: str, limit: int, why: str) -> str:
    """``text`` in about ``limit`` characters, its first three quarters and last quarter kept, with a note."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[len(text) - limit // 4:]
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[… {left_out} characters of this result left out: {why}; ask for a smaller part …]\n{tail}"


def _new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]
