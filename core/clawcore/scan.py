"""Dry-run the whole security stack over a batch of cases (``clawcore scan``).

Each case runs in a fresh session context with the runtime's effective
config, through the same :class:`~clawcore.hooks.Hooks` deciders and monitors
as a real tool call — nothing is executed, read, fetched or written:

===========  ===============================================================
``exec``     ``command`` → a ``bash`` call through ``decide_tool_call`` + ``before_tool_call``
``path``     ``path`` + ``op`` → a ``read_file`` or ``write_file`` call
``url``      ``url`` → a ``web_fetch`` call (static network checks, no DNS)
``text``     ``text`` + ``hook`` → ``message_received`` (the default) or ``after_tool_call`` verdicts
``secret``   ``text`` → the secret scanner
===========  ===============================================================

The case format is the one of the security evaluation corpora:
``{"id", "kind", <fields>}``; other keys (``label``, ``note``) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clawcore.types import Action, HookContext, Level, Message, ToolCall, ToolResult

if TYPE_CHECKING:
    from clawcore.runtime import Runtime

__all__ = ["CaseError", "ScanResult", "Scanner", "read_cases"]

KINDS = ("exec", "path", "url", "text", "secret")


class CaseError(ValueError):
    """A case is malformed; the message names the problem."""


@dataclass(frozen=True)
class ScanResult:
    """The stack's answer on one case."""

    id: str
    decision: str
    flagged: bool
    reasons: tuple[str, ...] = ()
    findings: tuple[Any, ...] = ()
    error: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "decision": self.decision,
            "flagged": self.flagged,
            "reasons": list(self.reasons),
            "findings": list(self.findings),
        }
        if self.error:
            out["error"] = self.error
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


class Scanner:
    """Judges cases with a runtime's hooks and config.

    :param runtime: the runtime whose plugins and effective config are used.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.hooks = runtime.hooks
        self._count = 0

    def context(self, case_id: str) -> HookContext:
        """A fresh session for one case; its audit records are dropped (a scan is a dry run)."""
        self._count += 1
        return HookContext(
            session_id=f"scan-{self._count}",
            home=self.runtime.home,
            workspace=self.runtime.workspace,
            config=self.runtime.config.data,
            conversation_id=f"scan-{self._count}",
            channel="scan",
            high_risk_tools=self.runtime.high_risk_tools,
            tool_groups=self.runtime.tool_groups,
        )

    def scan(self, case: Mapping[str, Any]) -> ScanResult:
        """Judge one case; a malformed case gives a result with ``error`` set and decision ``deny``."""
        case_id = str(case.get("id", "")) if isinstance(case, Mapping) else ""
        try:
            if not isinstance(case, Mapping):
                raise CaseError("a case must be a JSON object")
            kind = case.get("kind")
            if kind not in KINDS:
                raise CaseError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
            context = self.context(case_id)
            return getattr(self, f"_{kind}")(case_id, case, context)
        except CaseError as exc:
            return ScanResult(case_id, Action.DENY.value, False, (), (), str(exc))

    def scan_all(self, cases: Iterable[Mapping[str, Any] | CaseError]) -> Iterator[ScanResult]:
        for case in cases:
            if isinstance(case, CaseError):
                yield ScanResult("", Action.DENY.value, False, (), (), str(case))
            else:
                yield self.scan(case)

    # -- kinds ---------------------------------------------------------------

    def _tool(self, case_id: str, call: ToolCall, context: HookContext) -> ScanResult:
        from clawcore.security.secrets import redact

        decision = self.hooks.decide_tool_call(call, context)
        return ScanResult(
            case_id,
            decision.action.value,
            decision.action is not Action.ALLOW,
            tuple(redact(reason) for reason in decision.reasons),  # reasons quote the input, credentials too
            decision.rules,
        )

    def _exec(self, case_id: str, case: Mapping[str, Any], context: HookContext) -> ScanResult:
        return self._tool(case_id, ToolCall("bash", {"command": _field(case, "command")}, case_id), context)

    def _path(self, case_id: str, case: Mapping[str, Any], context: HookContext) -> ScanResult:
        op = case.get("op", "read")
        if op not in ("read", "write"):
            raise CaseError(f"op {op!r} is not read or write")
        path = _field(case, "path")
        call = (
            ToolCall("read_file", {"path": path}, case_id)
            if op == "read"
            else ToolCall("write_file", {"path": path, "content": ""}, case_id)
        )
        return self._tool(case_id, call, context)

    def _url(self, case_id: str, case: Mapping[str, Any], context: HookContext) -> ScanResult:
        return self._tool(case_id, ToolCall("web_fetch", {"url": _field(case, "url")}, case_id), context)

    def _text(self, case_id: str, case: Mapping[str, Any], context: HookContext) -> ScanResult:
        text = _field(case, "text")
        hook = case.get("hook", "message_received")
        if hook == "message_received":
            verdicts = self.hooks.message_received(Message("user", text, channel="scan"), context)
        elif hook == "after_tool_call":
            call = ToolCall(str(case.get("tool", "web_fetch")), {}, case_id)
            verdicts = self.hooks.after_tool_call(call, ToolResult(text, untrusted=True), context)
        else:
            raise CaseError(f"hook {hook!r} is not message_received or after_tool_call")
        flagged = [v for v in verdicts if v.flagged]
        worst = max((v.level for v in verdicts), key=lambda level: level.rank, default=Level.CLEAN)
        decision = {
            Level.CLEAN: Action.ALLOW,
            Level.SUSPICIOUS: Action.CONFIRM,
            Level.MALICIOUS: Action.DENY,
        }[worst]
        reasons = tuple(dict.fromkeys(r for v in flagged for r in v.reasons))
        if not verdicts:  # an allow nobody gave: say so, or a disabled monitor would read as a clean corpus
            reasons = ("no monitor judged this text (none installed, or every one disabled)",)
        findings = tuple(
            {"source": v.source, "level": v.level.value, "score": round(v.score, 4), "rules": list(v.rules)}
            for v in verdicts
        )
        return ScanResult(case_id, decision.value, bool(flagged), reasons, findings)

    def _secret(self, case_id: str, case: Mapping[str, Any], context: HookContext) -> ScanResult:
        from clawcore.security.secrets import scan_text

        found = scan_text(_field(case, "text"))
        reasons = tuple(dict.fromkeys(f.description for f in found))
        decision = Action.DENY if found else Action.ALLOW
        return ScanResult(case_id, decision.value, bool(found), reasons, tuple(f.to_dict() for f in found))


def _field(case: Mapping[str, Any], name: str) -> str:
    value = case.get(name)
    if not isinstance(value, str):
        raise CaseError(f"field {name!r} must be a string")
    return value


def read_cases(lines: Iterable[str]) -> Iterator[Mapping[str, Any] | CaseError]:
    """Parse JSON lines; a bad line yields a :class:`CaseError` naming its line number."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            yield CaseError(f"line {number}: not JSON ({exc.msg})")
            continue
        if not isinstance(case, dict):
            yield CaseError(f"line {number}: a case must be a JSON object")
            continue
        yield case
