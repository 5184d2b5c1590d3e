"""Value types that cross module and plugin boundaries.

Everything a hook receives or returns is one of these frozen dataclasses or
protocols, so that a plugin author never has to guess at dictionary keys.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = [
    "UNREADABLE_ARGUMENTS",
    "Action",
    "AuditEvent",
    "ChatModel",
    "Decision",
    "EmbeddingProvider",
    "ExecResult",
    "HookContext",
    "Level",
    "Message",
    "ModelReply",
    "PromptSection",
    "ProviderUnavailable",
    "SandboxBackend",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Verdict",
]


# --------------------------------------------------------------------------
# Decisions and verdicts
# --------------------------------------------------------------------------


class Action(str, enum.Enum):
    """What happens to a tool call, message or sub-agent: ordered by strictness."""

    ALLOW = "allow"
    CONFIRM = "confirm"
    DENY = "deny"

    @property
    def rank(self) -> int:
        return _ACTION_RANK[self]


_ACTION_RANK = {Action.ALLOW: 0, Action.CONFIRM: 1, Action.DENY: 2}


_E = TypeVar("_E", bound=enum.Enum)


def _member(kind: type[_E], value: object, what: str) -> _E:
    """``value`` as a member of ``kind`` (its value spelled as a string counts), or a one-line ValueError."""
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(str(member.value) for member in kind)
        raise ValueError(f"{what} must be one of {allowed}, not {value!r}") from None


def _texts(value: object) -> tuple[str, ...]:
    """Reasons or rule ids as a tuple of strings: one string is one entry, not its characters."""
    if isinstance(value, str):
        return (value,) if value else ()
    if not isinstance(value, (tuple, list)) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"reasons and rules must be strings, not {value!r}")
    return tuple(value)


def _source(value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"source must be the name of a plugin, not {value!r}")


@dataclass(frozen=True)
class Decision:
    """A decider's answer about one action.

    Decisions from several deciders combine strictest-wins
    (deny > confirm > allow); see :func:`clawcore.hooks.strictest`.
    """

    action: Action
    reasons: tuple[str, ...] = ()
    #: Stable identifiers of the rules that produced the decision.
    rules: tuple[str, ...] = ()
    #: Name of the plugin (or builtin) that decided.
    source: str = ""

    def __post_init__(self) -> None:
        # `Decision("deny", "a reason")` is what a plugin author writes; anything else is refused here, in
        # the plugin's hook, where raising means deny and names the plugin.
        object.__setattr__(self, "action", _member(Action, self.action, "Decision action"))
        object.__setattr__(self, "reasons", _texts(self.reasons))
        object.__setattr__(self, "rules", _texts(self.rules))
        _source(self.source)

    @classmethod
    def allow(cls, *reasons: str, rules: Sequence[str] = (), source: str = "") -> Decision:
        return cls(Action.ALLOW, tuple(reasons), tuple(rules), source)

    @classmethod
    def confirm(cls, *reasons: str, rules: Sequence[str] = (), source: str = "") -> Decision:
        return cls(Action.CONFIRM, tuple(reasons), tuple(rules), source)

    @classmethod
    def deny(cls, *reasons: str, rules: Sequence[str] = (), source: str = "") -> Decision:
        return cls(Action.DENY, tuple(reasons), tuple(rules), source)


class Level(str, enum.Enum):
    """How a monitor judges a piece of content."""

    CLEAN = "clean"
    SUSPICIOUS = "suspicious"
    MALICIOUS = "malicious"

    @property
    def rank(self) -> int:
        return _LEVEL_RANK[self]


_LEVEL_RANK = {Level.CLEAN: 0, Level.SUSPICIOUS: 1, Level.MALICIOUS: 2}


@dataclass(frozen=True)
class Verdict:
    """A monitor's judgement of content (a message, a tool result).

    ``score`` is the risk the content adds, 0.0–1.0; ``level`` is the
    monitor's reading of it. A verdict never blocks by itself: a monitor that
    wants to block answers the decision hooks.
    """

    level: Level = Level.CLEAN
    score: float = 0.0
    reasons: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", _member(Level, self.level, "Verdict level"))
        score = self.score
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise ValueError(f"Verdict score must be a number from 0.0 to 1.0, not {score!r}")
        object.__setattr__(self, "score", float(score))
        object.__setattr__(self, "reasons", _texts(self.reasons))
        object.__setattr__(self, "rules", _texts(self.rules))
        _source(self.source)

    @property
    def flagged(self) -> bool:
        return self.level is not Level.CLEAN


# --------------------------------------------------------------------------
# Messages, tools, sandbox
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One message of a conversation as it is written to the transcript."""

    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    #: For role "tool": the id of the call this answers.
    tool_call_id: str | None = None
    #: For role "assistant": the tool calls the model asked for.
    tool_calls: tuple[ToolCall, ...] = ()
    #: Channel the message came from or goes to ("cli", "gateway", ...).
    channel: str = "local"
    metadata: Mapping[str, Any] = field(default_factory=dict)


#: The key a model plugin puts the raw text under when a call's arguments are not a JSON object
#: (``{UNREADABLE_ARGUMENTS: '{not json'}``): the loop tells the model so and runs nothing.
UNREADABLE_ARGUMENTS = "__unreadable_arguments__"


@dataclass(frozen=True)
class ToolCall:
    """A request to run one tool with arguments."""

    name: str
    arguments: Mapping[str, Any]
    id: str = ""


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned.

    ``untrusted`` marks content that came from outside the user's control
    (a web page, a command's output, a file): monitors treat it as data,
    never as instructions.
    """

    content: str
    is_error: bool = False
    untrusted: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command in a sandbox backend."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    #: True when stdout or stderr was cut at the output cap.
    truncated: bool = False
    duration_s: float = 0.0
    backend: str = ""


@dataclass(frozen=True)
class PromptSection:
    """A titled section a plugin adds to the system prompt."""

    title: str
    body: str
    #: Lower sorts first.
    order: int = 100


@dataclass(frozen=True)
class HookContext:
    """Where a runtime hook fires: the session, its conversation, the workspace.

    ``record`` appends an audit event to the runtime's audit sinks; monitors
    use it for their own verdicts and escalations.
    """

    session_id: str
    home: Path
    workspace: Path
    config: Mapping[str, Any]
    conversation_id: str = ""
    channel: str = "local"
    record: Callable[[str, Mapping[str, Any]], None] = field(
        default=lambda kind, data: None, repr=False, compare=False
    )
    #: Names of the registered tools declared ``high_risk``: monitors treat them as they treat bash.
    high_risk_tools: frozenset[str] = frozenset()
    #: The policy groups each registered tool declares (``Tool.groups``), by tool name.
    tool_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class AuditEvent:
    """One audit record before it is chained: a kind and a JSON-able payload."""

    kind: str
    data: Mapping[str, Any]
    session_id: str = ""
    ts: float = 0.0


# --------------------------------------------------------------------------
# Capabilities plugins provide
# --------------------------------------------------------------------------


class ProviderUnavailable(RuntimeError):
    """A capability (embedding provider, model, backend) cannot work here.

    The message says why and what to do; callers fall back to the next
    provider in their chain.
    """


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into vectors of a fixed dimension.

    ``name``, ``model`` and ``dims`` are written into the index meta: a change
    of any of them rebuilds the index instead of mixing vector spaces.
    """

    name: str
    model: str
    dims: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; one L2-normalised vector per text, in order."""
        ...


@runtime_checkable
class SandboxBackend(Protocol):
    """Executes shell commands behind a boundary."""

    name: str

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c``; never raises for a failing command."""
        ...

    def info(self) -> str:
        """One paragraph describing the boundary, for the system prompt."""
        ...

    def close(self) -> None:
        """Release everything the backend holds (processes, containers)."""
        ...


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call.

    ``handler(arguments, context)`` returns a :class:`ToolResult`; ``context``
    is the runtime's :class:`clawcore.agent.tools.ToolContext`.
    ``groups`` are the policy groups it belongs to (``fs``, ``runtime``,
    ``memory``, ``web``, ...).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[[Mapping[str, Any], Any], ToolResult]
    groups: tuple[str, ...] = ()
    #: True for tools that change state or reach outside (write, bash, web).
    high_risk: bool = False


@dataclass(frozen=True)
class ModelReply:
    """One completion from a chat model."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0


@runtime_checkable
class ChatModel(Protocol):
    """A chat model with tool calling."""

    name: str
    context_window: int

    def complete(
        self, messages: Sequence[Message], tools: Sequence[Tool] = ()
    ) -> ModelReply:
        ...
