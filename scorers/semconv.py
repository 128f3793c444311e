"""Names scorecar writes into OpenTelemetry data, shared by the transforms (loop guard) and the
exporters (DESIGN §3.7, §7). Kept here, the lowest package, so exporters need not import
transforms.
"""

from __future__ import annotations

__all__ = [
    "ATTR_EVALUATION_EXPLANATION",
    "ATTR_EVALUATION_NAME",
    "ATTR_EVALUATION_SCORE_LABEL",
    "ATTR_EVALUATION_SCORE_VALUE",
    "ATTR_SCORE_ID",
    "ATTR_SCORER_ID",
    "EVALUATION_EVENT",
    "INSTRUMENTATION_SCOPE",
]

INSTRUMENTATION_SCOPE = "scorecar"
"""The instrumentation scope of every span and log record scorecar exports; the transforms
ignore spans of this scope (loop guard)."""

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The span event name and log record `event.name` of one score (OTel GenAI semconv)."""

ATTR_EVALUATION_NAME = "gen_ai.evaluation.name"
ATTR_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
ATTR_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
ATTR_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
ATTR_SCORE_ID = "scorecar.score.id"
ATTR_SCORER_ID = "scorecar.scorer.id"
