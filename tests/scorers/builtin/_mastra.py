"""Reads tests/testdata/mastra_evals/expected.json: Mastra's real scores on a fixed corpus.

The file is written by `generate.mjs` beside it, which runs the real `@mastra/evals` scorers
(pinned npm versions). Nothing here computes an expected value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from scorers.builder import Scorer
from scorers.builtin import (
    checks,
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_keyword_coverage_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
    create_tool_call_accuracy_scorer,
)
from scorers.types import ScorerRun

EXPECTED = Path(__file__).resolve().parents[2] / "testdata" / "mastra_evals" / "expected.json"


@cache
def expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXPECTED.read_text(encoding="utf-8"))
    return data


@cache
def run_of(index: int) -> ScorerRun:
    return ScorerRun.model_validate(expected()["runs"][index])


def cases(scorer: str) -> list[dict[str, Any]]:
    return [c for c in expected()["cases"] if c["scorer"] == scorer]


def _flags(text: str) -> int:
    return re.IGNORECASE if "i" in text else 0


FACTORIES: dict[str, Callable[[dict[str, Any]], Scorer]] = {
    "completeness": lambda o: create_completeness_scorer(),
    "content_similarity": lambda o: create_content_similarity_scorer(**o),
    "keyword_coverage": lambda o: create_keyword_coverage_scorer(),
    "textual_difference": lambda o: create_textual_difference_scorer(),
    "tone": lambda o: create_tone_scorer(**o),
    "tool_call_accuracy": lambda o: create_tool_call_accuracy_scorer(**o),
    "checks.includes": lambda o: checks.includes(**o),
    "checks.excludes": lambda o: checks.excludes(**o),
    "checks.equals": lambda o: checks.equals(**o),
    "checks.matches": lambda o: checks.matches(re.compile(o["pattern"], _flags(o.get("flags", ""))),
                                               exact=o.get("exact", False)),
    "checks.similarity": lambda o: checks.similarity(**o),
    "checks.called_tool": lambda o: checks.called_tool(**o),
    "checks.did_not_call": lambda o: checks.did_not_call(**o),
    "checks.tool_order": lambda o: checks.tool_order(**o),
    "checks.max_tool_calls": lambda o: checks.max_tool_calls(**o),
    "checks.used_no_tools": lambda o: checks.used_no_tools(),
    "checks.no_tool_errors": lambda o: checks.no_tool_errors(),
}
