"""Content similarity: the Dice coefficient of the input's and output's character bigrams."""

from __future__ import annotations

from collections import Counter
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._js import collapse_ws, js_len, remove_ws, trim, utf16
from scorers.builtin._messages import input_text, output_text
from scorers.types import ScorerRun

__all__ = ["compare_two_strings", "create_content_similarity_scorer"]


def compare_two_strings(first: str, second: str) -> float:
    """`string-similarity`'s `compareTwoStrings`: Dice's coefficient on character bigrams.

    Whitespace is removed first. Bigrams are pairs of UTF-16 code units, as in JavaScript.
    Equal strings (both empty included) give 1; a string shorter than 2 units gives 0.
    For example `compare_two_strings("night", "nacht") == 0.25`.
    """
    first = remove_ws(first)
    second = remove_ws(second)
    if first == second:
        return 1.0
    first_len, second_len = js_len(first), js_len(second)
    if first_len < 2 or second_len < 2:
        return 0.0
    a, b = utf16(first, second)
    bigrams = Counter(zip(a, a[1:]))
    intersection = 0
    for bigram in zip(b, b[1:]):
        if bigrams[bigram] > 0:
            bigrams[bigram] -= 1
            intersection += 1
    return (2.0 * intersection) / (first_len + second_len - 2)


def create_content_similarity_scorer(ignore_case: bool = True,
                                     ignore_whitespace: bool = True) -> Scorer:
    """How alike the input and output texts are, character by character (0..1).

    Mastra's `createContentSimilarityScorer`: the texts are optionally lower-cased and
    whitespace-collapsed, then compared with `compare_two_strings`.

    Args:
        ignore_case: compare lower-cased texts.
        ignore_whitespace: collapse whitespace runs to one space and trim (the comparison
            removes all whitespace anyway, so this only shows in the step result).

    Returns:
        An agent scorer with id `content_similarity`.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        processed_input = input_text(run)
        processed_output = output_text(run)
        if ignore_case:
            processed_input = processed_input.lower()
            processed_output = processed_output.lower()
        if ignore_whitespace:
            processed_input = trim(collapse_ws(processed_input))
            processed_output = trim(collapse_ws(processed_output))
        return {"processedInput": processed_input, "processedOutput": processed_output}

    def generate_score(results: StepResults) -> float:
        step = results.preprocess_step_result
        return compare_two_strings(step["processedInput"], step["processedOutput"])

    return (
        create_scorer(id="content_similarity", name="Content Similarity Scorer", type="agent",
                      description="Calculates content similarity between input and output "
                                  "messages using string comparison algorithms.")
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
