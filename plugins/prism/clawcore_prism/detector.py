"""The heuristic detector: canonicalise, run the rules, ask the classifier, combine.

One call, :meth:`Detector.scan`, serves every hook. ``scope`` is ``direct``
for messages a person or channel sends and ``indirect`` for content that
reached the session through a tool. The result keeps the rules that fired
and the segments that scored high, so the plugin can audit them and redact
exactly those segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clawcore.text import well_formed

from clawcore_prism.canonical import canonicalise, segments
from clawcore_prism.classifier import Classifier
from clawcore_prism.quotes import elide, mentions
from clawcore_prism.rules import OBFUSCATION_WEIGHTS, RULES, Rule, Scope, combine, match_rules

__all__ = ["Detection", "Detector"]

#: Score at which the classifier's opinion is named in the rules list (``classifier.segment``...).
_NAMED_AT = 0.5


@dataclass(frozen=True)
class Detection:
    """What the detector found in one text."""

    score: float
    rules: tuple[str, ...] = ()
    #: Canonical segments that scored at or above the suspicious threshold (for redaction).
    flagged_segments: tuple[str, ...] = ()
    rule_score: float = 0.0
    classifier_score: float = 0.0
    obfuscation: tuple[str, ...] = ()


class Detector:
    """Rules and the optional classifier behind one ``scan``.

    :param classifier: the shipped classifier, or None for rules only.
    :param rules: the rule set (default :data:`~clawcore_prism.rules.RULES`).
    """

    def __init__(self, classifier: Classifier | None = None, rules: Sequence[Rule] = RULES) -> None:
        self.classifier = classifier
        self.rules = tuple(rules)

    def scan(self, text: str, scope: Scope) -> Detection:
        """Score ``text``; cost is linear in its length."""
        if not text or not text.strip():
            return Detection(0.0)
        canonical = canonicalise(well_formed(text))  # a lone surrogate has no UTF-8 form for the rules' prefilter
        hits = match_rules(canonical.text, scope, self.rules)
        quoted = mentions(canonical.text) if scope == "indirect" else []
        mentioned = [hit for hit in hits if any(start <= hit.start and hit.end <= end for start, end in quoted)]
        if mentioned:
            # Rules fired inside quoted examples of attacks: recorded for the audit log, not counted.
            hits = [hit for hit in hits if hit not in mentioned]
        fired = [hit.rule for hit in hits] + ["quoted." + hit.rule for hit in mentioned]
        rule_score = combine(hit.weight for hit in hits)
        cls_score = 0.0
        flagged: list[str] = []
        pieces: list[str] = []
        if self.classifier is not None:
            if scope == "indirect":
                elided = elide(canonical.text, quoted)
                pieces = segments(elided.text)
                scores = self.classifier.segment_scores(pieces)
                if scores:
                    cls_score = max(scores)
                    # Redaction looks for what the document says: quoted words go back into flagged segments.
                    flagged = [elided.restore(p) for p, s in zip(pieces, scores) if s >= _NAMED_AT]
                if cls_score >= _NAMED_AT:
                    fired.append("classifier.segment")
            else:
                cls_score = self.classifier.message_score(canonical.text)
                if cls_score >= _NAMED_AT:
                    fired.append("classifier.message")
        evidence = [rule_score, cls_score]
        if canonical.obfuscation and max(rule_score, cls_score) >= 0.4:
            # Hiding tricks count only next to other evidence: an emoji's variation selector is no attack.
            evidence.extend(OBFUSCATION_WEIGHTS.get(name, 0.1) for name in canonical.obfuscation)
            fired.extend("obfuscation." + name for name in canonical.obfuscation)
        score = combine(evidence)
        if hits and scope == "indirect":
            # What a rule matched goes too: its line, unless a flagged segment already holds the match.
            text = canonical.text
            for hit in hits:
                if any(text[hit.start:hit.end] in segment for segment in flagged):
                    continue
                start = text.rfind("\n", 0, hit.start) + 1
                end = text.find("\n", hit.end)
                flagged.append(text[start:end if end >= 0 else len(text)].strip())
        return Detection(
            score=round(score, 4),
            rules=tuple(dict.fromkeys(fired)),
            flagged_segments=tuple(dict.fromkeys(s for s in flagged if s)),
            rule_score=round(rule_score, 4),
            classifier_score=round(cls_score, 4),
            obfuscation=canonical.obfuscation,
        )
