"""Builtin plugin ``policy``: the ``tools`` config section and the tool-policy decider.

Every tool call passes :func:`decide_tool_call`: the tool policy of
:mod:`clawcore.security.policy` (names, profiles, argument rules), the
command analysis for ``bash``, the filesystem policy for file tools and the
network policy for ``web_fetch``. Monitors (PRISM) answer ``before_tool_call``
beside it; the strictest answer wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clawcore import hookimpl
from clawcore.config import Config
from clawcore.security.policy import TOOLS_SCHEMA, ToolPolicy
from clawcore.types import Decision, HookContext, ToolCall

__all__ = ["config_schema", "decide_tool_call", "policy_for"]

# One policy per effective config mapping: a runtime's config does not change while it runs.
_last: tuple[Mapping[str, Any] | None, Mapping[str, tuple[str, ...]], ToolPolicy | None] = (None, {}, None)


def policy_for(context: HookContext) -> ToolPolicy:
    """The :class:`ToolPolicy` of a context's effective config, built once per config."""
    global _last
    config, declared, policy = _last
    same_tools = declared is context.tool_groups or not (declared or context.tool_groups)
    if config is context.config and same_tools and policy is not None:
        return policy
    policy = ToolPolicy.from_config(Config(context.config, context.home), declared=context.tool_groups)
    _last = (context.config, context.tool_groups, policy)
    return policy


@hookimpl
def config_schema() -> Mapping[str, Mapping[str, Any]]:
    return {"tools": TOOLS_SCHEMA}


@hookimpl
def decide_tool_call(call: ToolCall, context: HookContext) -> Decision:
    return policy_for(context).decide(call)
