"""Textual difference: a longest-common-subsequence ratio of the input and output texts."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._js import collapse_ws, js_len, split_ws, trim, utf16
from scorers.builtin._messages import input_text, output_text
from scorers.types import ScorerRun

__all__ = ["count_changes", "create_textual_difference_scorer", "lcs_length", "lcs_ratio"]


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common subsequence of two sequences.

    Bit-parallel (Hyyrö 2004): one big-integer add and a few logic operations per item of `b`,
    so long answers stay fast; equal to the textbook dynamic programme.
    """
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    masks: dict[Any, int] = {}
    for i, item in enumerate(b):
        masks[item] = masks.get(item, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for item in a:
        u = v & masks.get(item, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def lcs_ratio(first: str, second: str) -> float:
    """`2·LCS / (len(a) + len(b))` over UTF-16 code units; equal strings give 1, an empty one 0.

    Mastra's `calculateRatio` (not difflib's ratio).
    """
    if first == second:
        return 1.0
    if not first or not second:
        return 0.0
    matches = lcs_length(*utf16(first, second))
    return 2 * matches / (js_len(first) + js_len(second))


def _words(text: str) -> list[str]:
    return [w for w in split_ws(text) if w]


def count_changes(first: str, second: str) -> int:
    """Mastra's `countChanges`: roughly how many words were inserted, deleted or replaced."""
    first_normalized = trim(collapse_ws(first))
    second_normalized = trim(collapse_ws(second))
    if first_normalized == second_normalized:
        if first != second:
            return abs(len(_words(first)) - len(_words(second))) or 1
        return 0
    first_words = _words(first_normalized)
    second_words = _words(second_normalized)
    if not first_words and not second_words:
        return 0
    if not first_words:
        return len(second_words)
    if not second_words:
        return len(first_words)
    # Mastra matches greedily, each word of the second text used at most once: that pairs
    # min(count in first, count in second) copies of every word (a multiset intersection).
    matching = sum((Counter(first_words) & Counter(second_words)).values())
    return max(len(first_words), len(second_words)) - matching


def create_textual_difference_scorer() -> Scorer:
    """How much of the input text the output keeps, as a character LCS ratio (0..1).

    Mastra's `createTextualDifferenceScorer`. The preprocess step also reports `confidence`
    (1 − relative length difference), `changes` (changed words) and `lengthDiff`.

    Returns:
        An agent scorer with id `textual_difference`.
    """

    async def preprocess(run: ScorerRun) -> dict[str, Any]:
        first = input_text(run)
        second = output_text(run)
        if len(first) * len(second) > _OFF_LOOP_AREA:
            # Long texts: keep the event loop (and the run's timeout) responsive.
            return await asyncio.to_thread(_compare, first, second)
        return _compare(first, second)

    return (
        create_scorer(id="textual_difference", name="Textual Difference Scorer", type="agent",
                      description="Calculate textual difference between input and output using "
                                  "sequence matching algorithms.")
        .preprocess(preprocess)
        .generate_score(_score)
    )


_OFF_LOOP_AREA = 4_000_000


def _score(results: StepResults) -> float:
    return float(results.preprocess_step_result["ratio"])


def _compare(first: str, second: str) -> dict[str, Any]:
    ratio = lcs_ratio(first, second)
    changes = count_changes(first, second)
    first_len, second_len = js_len(first), js_len(second)
    max_length = max(first_len, second_len)
    length_diff = abs(first_len - second_len) / max_length if max_length > 0 else 0
    return {"ratio": ratio, "confidence": 1 - length_diff, "changes": changes,
            "lengthDiff": length_diff}
