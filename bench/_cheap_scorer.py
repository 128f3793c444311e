"""A scorer that costs almost nothing, so the ingest benchmark measures ingest."""

from __future__ import annotations

from typing import Any

from scorers import create_scorer


def _length(run: Any, results: Any) -> float:
    output = run.output or []
    text = output[-1].text if output else ""
    return min(1.0, len(text) / 1000)


output_length = create_scorer(id="output_length", description="answer length / 1000 (capped)") \
    .generate_score(_length)
