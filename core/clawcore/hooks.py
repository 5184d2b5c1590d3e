"""The typed facade over ``pm.hook``, and the rules for combining answers.

The rest of the core calls hooks only through :class:`Hooks`. Combination
rules live here and nowhere else:

* decision hooks (``decide_tool_call`` + ``before_tool_call``,
  ``message_sending``, ``subagent_spawning``): every answer counts, the
  strictest wins (deny > confirm > allow); an implementation that raises
  counts as a deny (fail closed) and is reported through ``on_failure``;
* verdict hooks (``message_received``, ``after_tool_call``): all verdicts are
  collected; one that raises counts as a suspicious verdict;
* transform hooks (``tool_result_persist``, ``before_message_write``): each
  implementation receives the previous one's output, in pluggy's call order
  (last registered first, builtins last); one that raises could not check the
  text (redact, mask), so the text is withheld (fail closed) and reported;
* registries (``register_*``): each plugin calls ``register``; a duplicate
  name is an error naming both plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pluggy

from clawcore.errors import PluginError
from clawcore.plugins import call_plugin
from clawcore.types import (
    Action,
    Decision,
    HookContext,
    Level,
    Message,
    PromptSection,
    Tool,
    ToolCall,
    ToolResult,
    Verdict,
)

__all__ = ["Hooks", "strictest"]

FailureHandler = Callable[[str, str, BaseException, "HookContext | None"], None]


def strictest(decisions: Sequence[Decision], *, default: Action = Action.ALLOW) -> Decision:
    """Combine decisions: the strictest action wins, reasons and rules of that action are kept.

    With no decisions at all the answer is ``default``.
    """
    if not decisions:
        return Decision(default)
    top = max(d.action.rank for d in decisions)
    winners = [d for d in decisions if d.action.rank == top]
    reasons = tuple(dict.fromkeys(r for d in winners for r in d.reasons))
    rules = tuple(dict.fromkeys(r for d in winners for r in d.rules))
    sources = ",".join(dict.fromkeys(d.source for d in winners if d.source))
    return Decision(winners[0].action, reasons, rules, sources)


def _withheld(what: str, hook: str, plugin: str, exc: BaseException) -> str:
    return f"[{what} withheld: {hook} in plugin {plugin!r} failed ({type(exc).__name__}) and could not check it]"


class Hooks:
    """Typed calls into the plugin manager.

    :param pm: the plugin manager.
    :param on_failure: called as ``on_failure(hook, plugin, exc, context)``
        when an implementation raises; the runtime audits it.
    """

    def __init__(self, pm: pluggy.PluginManager, on_failure: FailureHandler | None = None) -> None:
        self.pm = pm
        self._on_failure = on_failure or (lambda hook, plugin, exc, ctx: None)

    # -- per-implementation calls -------------------------------------------

    def _each(self, name: str, failing_context: HookContext | None, /, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Call each implementation of ``name`` on its own, in pluggy's order.

        Yields ``(plugin_name, result)``; a raised exception is yielded as the
        result after ``on_failure`` saw it. Each call goes through
        ``subset_hook_caller`` so tracing and wrappers still apply.
        """
        for impl in reversed(getattr(self.pm.hook, name).get_hookimpls()):
            try:
                results = call_plugin(self.pm, name, impl, **kwargs)
            except Exception as exc:  # fail closed is decided by the caller
                self._on_failure(name, impl.plugin_name, exc, failing_context)
                yield impl.plugin_name, exc
                continue
            for result in results:
                yield impl.plugin_name, result

    def _decide(self, names: Sequence[str], failing_context: HookContext | None, /, **kwargs: Any) -> Decision:
        decisions: list[Decision] = []
        for name in names:
            for plugin, answer in self._each(name, failing_context, **kwargs):
                if isinstance(answer, BaseException):
                    decisions.append(
                        Decision.deny(
                            f"{name} in plugin {plugin!r} failed ({type(answer).__name__}: {answer}); "
                            "denied because a security decision must not fail open",
                            rules=("hook-failure",),
                            source=plugin,
                        )
                    )
                elif isinstance(answer, Decision):
                    decisions.append(answer if answer.source else replace(answer, source=plugin))
                elif answer is not None:  # a decider that answered something else decided nothing: deny
                    wrong = self._wrong_type(name, plugin, answer, "a Decision", failing_context)
                    decisions.append(Decision.deny(f"{name} in plugin {plugin!r} {wrong}", rules=("hook-failure",),
                                                   source=plugin))
        return strictest(decisions)

    def _verdicts(self, name: str, failing_context: HookContext, /, **kwargs: Any) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for plugin, answer in self._each(name, failing_context, **kwargs):
            if isinstance(answer, BaseException):
                verdicts.append(
                    Verdict(
                        Level.SUSPICIOUS,
                        0.0,
                        (f"monitor {plugin!r} failed: {type(answer).__name__}: {answer}",),
                        ("hook-failure",),
                        plugin,
                    )
                )
            elif isinstance(answer, Verdict):
                verdicts.append(answer if answer.source else replace(answer, source=plugin))
            else:  # a monitor that answered something else did not judge the content: as if it had failed
                wrong = self._wrong_type(name, plugin, answer, "a Verdict", failing_context)
                verdicts.append(Verdict(Level.SUSPICIOUS, 0.0, (f"monitor {plugin!r} failed: {wrong}",),
                                        ("hook-failure",), plugin))
        return verdicts

    def _wrong_type(self, name: str, plugin: str, answer: object, expected: str,
                    context: HookContext | None) -> TypeError:
        """Report an answer of the wrong type as a failure of the hook, and return it as one."""
        wrong = TypeError(f"returned {type(answer).__name__}, not {expected}")
        self._on_failure(name, plugin, wrong, context)
        return wrong

    # -- decisions -----------------------------------------------------------

    def decide_tool_call(self, call: ToolCall, context: HookContext) -> Decision:
        """Policy deciders and monitors together, strictest wins."""
        return self._decide(("decide_tool_call", "before_tool_call"), context, call=call, context=context)

    def message_sending(self, message: Message, context: HookContext) -> Decision:
        return self._decide(("message_sending",), context, message=message, context=context)

    def subagent_spawning(self, task: str, context: HookContext) -> Decision:
        return self._decide(("subagent_spawning",), context, task=task, context=context)

    # -- verdicts ------------------------------------------------------------

    def message_received(self, message: Message, context: HookContext) -> list[Verdict]:
        return self._verdicts("message_received", context, message=message, context=context)

    def after_tool_call(self, call: ToolCall, result: ToolResult, context: HookContext) -> list[Verdict]:
        return self._verdicts("after_tool_call", context, call=call, result=result, context=context)

    # -- transforms ----------------------------------------------------------

    def tool_result_persist(self, call: ToolCall, result: ToolResult, context: HookContext) -> str:
        """The text to persist: each implementation may replace the previous text.

        An implementation that raises could not check the text (redact an injection, mask a secret):
        the text is withheld rather than kept unchecked, and the failure is reported.
        """
        text = result.content
        for impl in reversed(self.pm.hook.tool_result_persist.get_hookimpls()):
            answer = self._transform("tool_result_persist", impl, context, call=call, result=result, text=text, context=context)
            if answer is not None and not isinstance(answer, (str, BaseException)):
                answer = self._wrong_type("tool_result_persist", impl.plugin_name, answer, "a str", context)
            if isinstance(answer, BaseException):
                text = _withheld("tool result", "tool_result_persist", impl.plugin_name, answer)
            elif answer is not None:
                text = answer
        return text

    def before_message_write(self, message: Message, context: HookContext) -> Message:
        """The message as the transcript will hold it; a failing implementation withholds its text and
        tool-call arguments (the calls themselves stay, so their results still pair with them)."""
        for impl in reversed(self.pm.hook.before_message_write.get_hookimpls()):
            answer = self._transform("before_message_write", impl, context, message=message, context=context)
            if answer is not None and not isinstance(answer, (Message, BaseException)):
                answer = self._wrong_type("before_message_write", impl.plugin_name, answer, "a Message", context)
            if isinstance(answer, BaseException):
                message = replace(
                    message, content=_withheld("message", "before_message_write", impl.plugin_name, answer),
                    tool_calls=tuple(replace(call, arguments={}) for call in message.tool_calls))
            elif isinstance(answer, Message):
                message = answer
        return message

    def _transform(self, name: str, impl: pluggy.HookImpl, failing_context: HookContext, /, **kwargs: Any) -> Any:
        try:
            results = call_plugin(self.pm, name, impl, **kwargs)
        except Exception as exc:  # reported; the caller withholds what could not be checked
            self._on_failure(name, impl.plugin_name, exc, failing_context)
            return exc
        return results[0] if results else None

    # -- notifications -------------------------------------------------------

    def before_prompt_build(self, context: HookContext) -> list[PromptSection]:
        sections: list[PromptSection] = []
        for plugin, answer in self._each("before_prompt_build", context, context=context):
            if isinstance(answer, PromptSection):
                sections.append(answer)
            elif isinstance(answer, (list, tuple)) and all(isinstance(s, PromptSection) for s in answer):
                sections.extend(answer)
            elif not isinstance(answer, BaseException):
                self._wrong_type("before_prompt_build", plugin, answer, "a PromptSection or a list of them", context)
        return sorted(sections, key=lambda s: s.order)

    def notify(self, name: str, failing_context: HookContext | None, /, **kwargs: Any) -> None:
        """Fire a notification hook (``session_start``, ``session_end``,
        ``gateway_start``, ``before_compaction``, ``after_compaction``,
        ``record_audit_event``); failures are reported, never raised."""
        for _ in self._each(name, failing_context, **kwargs):
            pass

    # -- registries ----------------------------------------------------------

    def registry(self, hook_name: str) -> dict[str, Any]:
        """Collect the ``register(name, value)`` calls of a ``register_*`` hook."""
        return self._registrations(hook_name, lambda add: add)

    def tools(self) -> dict[str, Tool]:
        """Every registered tool by name (``register(tool)``)."""
        return self._registrations("register_tools", lambda add: lambda tool: add(tool.name, tool))

    def _registrations(self, hook_name: str, adapt: Callable[[Callable[[str, Any], None]], Callable[..., None]]
                       ) -> dict[str, Any]:
        """Run each plugin's ``register_*`` hook with a ``register`` callback; ``adapt`` gives its signature.

        Two plugins registering one name is an error naming both. A plugin whose hook raises loses its own
        registrations, not everyone's: the failure is reported through ``on_failure``.
        """
        found: dict[str, Any] = {}
        owners: dict[str, str] = {}
        for impl in reversed(getattr(self.pm.hook, hook_name).get_hookimpls()):
            plugin = impl.plugin_name
            mine: dict[str, Any] = {}

            def add(name: str, value: Any, _plugin: str = plugin, _mine: dict[str, Any] = mine) -> None:
                if name in found or name in _mine:
                    raise PluginError(f"{hook_name}: {name!r} is registered by both "
                                      f"{owners.get(name, _plugin)!r} and {_plugin!r}")
                _mine[name] = value

            try:
                call_plugin(self.pm, hook_name, impl, register=adapt(add))
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported; the other plugins' registrations stand
                self._on_failure(hook_name, plugin, exc, None)
                continue
            found.update(mine)
            owners.update(dict.fromkeys(mine, plugin))
        return found

    def embedding_providers(self) -> Mapping[str, Any]:
        return self.registry("register_embedding_providers")

    def retrievers(self) -> Mapping[str, Any]:
        return self.registry("register_retrievers")

    def sandbox_backends(self) -> Mapping[str, Any]:
        return self.registry("register_sandbox_backends")

    def models(self) -> Mapping[str, Any]:
        return self.registry("register_models")
