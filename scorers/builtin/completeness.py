"""Completeness: how many of the input's words and verb bases the output covers."""

from __future__ import annotations

from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._elements import extract_elements, normalize_string
from scorers.builtin._js import trim
from scorers.builtin._messages import input_messages, output_messages
from scorers.types import ScorerRun

__all__ = ["calculate_coverage", "create_completeness_scorer"]


def calculate_coverage(original: list[str], simplified: list[str]) -> float:
    """The fraction of `original` elements matched by some `simplified` element.

    Words of 3 characters or fewer must be equal; longer ones match when one contains the
    other and the shorter is more than 60 % of the longer. Empty `original`: 1 when
    `simplified` is empty too, else 0 (Mastra's `calculateCoverage`).
    """
    if not original:
        return 1.0 if not simplified else 0.0
    normalized = [normalize_string(s) for s in simplified]
    covered = 0
    for element in original:
        elem = normalize_string(element)
        for simp in normalized:
            if len(elem) <= 3:
                if elem == simp:
                    break
                continue
            longer, shorter = (elem, simp) if len(elem) > len(simp) else (simp, elem)
            if shorter in longer and len(shorter) / len(longer) > 0.6:
                break
        else:
            continue
        covered += 1
    return covered / len(original)


def create_completeness_scorer() -> Scorer:
    """How completely the output covers the input's content words (0..1).

    Mastra's `createCompletenessScorer`. Mastra extracts the elements with the `compromise`
    tagger; scorecar uses small English rules instead (`scorers.builtin._elements`), which
    track Mastra's scores within a mean absolute difference of 0.01 rather than exactly.

    Returns:
        An agent scorer with id `completeness`.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        inputs, outputs = input_messages(run), output_messages(run)
        if inputs is None or outputs is None:
            raise ValueError("Inputs cannot be null or undefined")
        input_elements = extract_elements(trim(", ".join(m.text for m in inputs)))
        output_elements = extract_elements(trim(", ".join(m.text for m in outputs)))
        output_set = set(output_elements)
        return {
            "inputElements": input_elements,
            "outputElements": output_elements,
            "missingElements": [e for e in input_elements if e not in output_set],
            "elementCounts": {"input": len(input_elements), "output": len(output_elements)},
        }

    def generate_score(results: StepResults) -> float:
        step = results.preprocess_step_result
        return calculate_coverage(step["inputElements"], step["outputElements"])

    return (
        create_scorer(id="completeness", name="Completeness Scorer", type="agent",
                      description="The fraction of the input's words (verbs in their base "
                                  "form) that the output covers.")
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
