"""The ``prism`` config section: its JSON Schema and the typed settings read from it.

Defaults (the reasoning is in docs/prism.md): one malicious verdict (score
≈ 0.9) lifts a session over ``warn`` and ``confirm`` at once; a second one
blocks high-risk tools and outbound messages; a sustained attack blocks
sub-agents and finally locks the session. Risk halves every ``halfLife``,
so an idle session drifts back down instead of expiring all at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clawcore.config import parse_duration, validate
from clawcore.errors import ConfigError
from clawcore.http_api import CLEARTEXT_RULE

__all__ = ["SCHEMA", "PrismSettings", "Thresholds"]

_NUMBER = {"type": "number", "minimum": 0}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "PRISM runtime monitor: detection, accumulating risk, escalating responses.",
    "x-ascending": ["suspicious", "malicious"],
    "properties": {
        "enabled": {"type": "boolean", "default": True},
        "thresholds": {
            "type": "object",
            "additionalProperties": False,
            "description": "Session risk at which each response starts (each must not be below the one before).",
            "x-ascending": ["warn", "confirm", "block", "blockSubagents", "lock"],
            "properties": {
                "warn": {**_NUMBER, "default": 0.4},
                "confirm": {**_NUMBER, "default": 0.8},
                "block": {**_NUMBER, "default": 1.6},
                "blockSubagents": {**_NUMBER, "default": 2.4},
                "lock": {**_NUMBER, "default": 4.0},
            },
        },
        "suspicious": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                       "description": "Detection score at which content is suspicious."},
        "malicious": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.85,
                      "description": "Detection score at which content is malicious."},
        "halfLife": {"type": ["string", "number"], "format": "positive-duration", "default": "30m",
                     "description": "Risk halves every halfLife."},
        "failMode": {"type": "string", "enum": ["soft", "closed"], "default": "soft",
                     "description": "When the LLM check fails: soft keeps the heuristic verdict, closed flags it."},
        "classifier": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enabled": {"type": "boolean", "default": True},
                "riskWeight": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                               "description": "Share of a verdict's score added to risk when only the classifier "
                                              "flagged it (no rule, no LLM verdict)."},
            },
        },
        "llm": {
            "type": "object",
            "additionalProperties": False,
            "description": "LLM-assisted scanning of the ambiguous band only.",
            "properties": {
                "model": {"type": ["string", "null"], "default": None,
                          "description": "A model name registered through register_models; null disables."},
                # Open to any model's settings; an OpenAI-compatible endpoint's baseUrl is checked as
                # models.openai's is (plain http only to loopback unless allowInsecureHttp: true).
                "settings": {"type": "object", "default": {}, "description": "Passed to the model factory.",
                             "allOf": [CLEARTEXT_RULE]},
                "band": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1},
                         "minItems": 2, "maxItems": 2, "x-ascending": True, "default": [0.3, 0.7]},
                "timeout": {"type": ["string", "number"], "format": "positive-duration", "default": "5s"},
                "failureRisk": {**_NUMBER, "default": 0.1},
            },
        },
        "canary": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"enabled": {"type": "boolean", "default": True}},
        },
        "taint": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enabled": {"type": "boolean", "default": True},
                "highRiskTools": {"type": "array", "items": {"type": "string"},
                                  "default": ["bash", "write_file", "edit_file", "web_fetch"],
                                  "description": "Tools that act or reach outside; others match by name (send, post, ...)."},
            },
        },
        "stateDir": {"type": "string", "default": "prism",
                     "description": "Where risk state is kept; relative paths are under $CLAWCORE_HOME."},
        "reloadInterval": {"type": ["string", "number"], "format": "duration", "default": "2s",
                           "description": "How often the config file is checked for changes."},
        "recentEvents": {"type": "integer", "minimum": 0, "default": 20},
    },
}


@dataclass(frozen=True)
class Thresholds:
    """Risk at which each step of the ladder starts."""

    warn: float = 0.4
    confirm: float = 0.8
    block: float = 1.6
    block_subagents: float = 2.4
    lock: float = 4.0


@dataclass(frozen=True)
class PrismSettings:
    """The effective ``prism`` section, typed."""

    enabled: bool = True
    thresholds: Thresholds = Thresholds()
    suspicious: float = 0.5
    malicious: float = 0.85
    half_life_s: float = 1800.0
    fail_mode: Literal["soft", "closed"] = "soft"
    classifier: bool = True
    classifier_risk_weight: float = 0.5
    llm_model: str | None = None
    llm_settings: Mapping[str, Any] | None = None
    llm_band: tuple[float, float] = (0.3, 0.7)
    llm_timeout_s: float = 5.0
    llm_failure_risk: float = 0.1
    canary: bool = True
    taint: bool = True
    high_risk_tools: tuple[str, ...] = ("bash", "write_file", "edit_file", "web_fetch")
    state_dir: str = "prism"
    reload_interval_s: float = 2.0
    recent_events: int = 20

    @classmethod
    def from_section(cls, section: Mapping[str, Any] | None) -> PrismSettings:
        """Validate and read a ``prism`` section (defaults fill what is missing).

        :raises ConfigError: one line per problem, key path first.
        """
        section = dict(section or {})
        problems = validate({"prism": section}, {"type": "object", "properties": {"prism": SCHEMA}})
        if problems:
            raise ConfigError(problems)
        t = section.get("thresholds", {})
        thresholds = Thresholds(
            float(t.get("warn", 0.4)), float(t.get("confirm", 0.8)), float(t.get("block", 1.6)),
            float(t.get("blockSubagents", 2.4)), float(t.get("lock", 4.0)),
        )
        llm = section.get("llm", {})
        band = tuple(float(x) for x in llm.get("band", (0.3, 0.7)))
        taint = section.get("taint", {})
        suspicious = float(section.get("suspicious", 0.5))
        malicious = float(section.get("malicious", 0.85))
        return cls(
            enabled=bool(section.get("enabled", True)),
            thresholds=thresholds,
            suspicious=suspicious,
            malicious=malicious,
            half_life_s=parse_duration(section.get("halfLife", "30m")),
            fail_mode=section.get("failMode", "soft"),
            classifier=bool(section.get("classifier", {}).get("enabled", True)),
            classifier_risk_weight=float(section.get("classifier", {}).get("riskWeight", 0.5)),
            llm_model=llm.get("model"),
            llm_settings=dict(llm.get("settings", {})),
            llm_band=(band[0], band[1]),
            llm_timeout_s=parse_duration(llm.get("timeout", "5s")),
            llm_failure_risk=float(llm.get("failureRisk", 0.1)),
            canary=bool(section.get("canary", {}).get("enabled", True)),
            taint=bool(taint.get("enabled", True)),
            high_risk_tools=tuple(taint.get("highRiskTools", cls.high_risk_tools)),
            state_dir=str(section.get("stateDir", "prism")),
            reload_interval_s=parse_duration(section.get("reloadInterval", "2s")),
            recent_events=int(section.get("recentEvents", 20)),
        )
