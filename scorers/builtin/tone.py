"""Tone: AFINN sentiment of the output, against a reference tone or across its sentences."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._data import load
from scorers.builtin._js import JS_WHITESPACE, trim
from scorers.builtin._messages import output_text
from scorers.types import ScorerRun

__all__ = ["Sentiment", "analyze_sentiment", "create_tone_scorer"]

_PUNCTUATION = re.compile(r"""[.,/#!?$%^&*;:{}=_`"~()]""")
_WS_RUN_2 = re.compile("[" + re.escape(JS_WHITESPACE) + "]{2,}")
_SENTENCE = re.compile(r"[^.!?]+[.!?]+")
# `negators[token]` on a plain JavaScript object is also truthy for names that object
# inherits; these two are the lower-case ones a lower-cased token can be.
_INHERITED_NAMES = frozenset({"constructor", "__proto__"})


@dataclass(frozen=True)
class Sentiment:
    """The result of `analyze_sentiment` (the `sentiment` package's fields we use)."""

    score: int
    comparative: float
    tokens: list[str]


def _tokenize(text: str) -> list[str]:
    text = text.lower().replace("\n", " ")
    text = _PUNCTUATION.sub(" ", text)
    text = trim(_WS_RUN_2.sub(" ", text))
    return text.split(" ")


def analyze_sentiment(text: str) -> Sentiment:
    """The `sentiment` package's `analyze` (AFINN-165 + emoji lexicon, English negators):
    `score` is the sum of token valences, `comparative` that sum per token."""
    data = load("sentiment_en.json")
    labels: dict[str, int] = data["labels"]
    negators = frozenset(data["negators"]) | _INHERITED_NAMES
    tokens = _tokenize(text)
    score = 0
    # Same order as the package (last token first), so the sum is bit-for-bit the same.
    for i in range(len(tokens) - 1, -1, -1):
        token = tokens[i]
        if token not in labels:
            continue
        value = labels[token]
        if i > 0 and tokens[i - 1] in negators:
            value = -value
        score += value
    comparative = score / len(tokens) if tokens else 0.0
    return Sentiment(score=score, comparative=comparative, tokens=tokens)


def create_tone_scorer(reference_tone: str | None = None) -> Scorer:
    """How steady (or how close to a reference) the output's sentiment is (0..1).

    Mastra's `createToneScorer`. With `reference_tone`, the score is
    `max(0, 1 − |comparative(output) − comparative(reference)|)`; without it, the output is
    split into sentences and the score is `max(0, 1 − variance of their comparatives)`.

    Args:
        reference_tone: a text whose sentiment the output should match; empty means none.

    Returns:
        An agent scorer with id `tone`.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        message = output_text(run)
        response = analyze_sentiment(message)
        if reference_tone:
            reference = analyze_sentiment(reference_tone)
            difference = abs(response.comparative - reference.comparative)
            return {"score": max(0, 1 - difference),
                    "responseSentiment": response.comparative,
                    "referenceSentiment": reference.comparative,
                    "difference": difference}
        sentences = _SENTENCE.findall(message) or [message]
        values = [analyze_sentiment(s).comparative for s in sentences]
        total = 0.0
        for v in values:  # a left fold, as JavaScript's reduce (not math.fsum)
            total += v
        average = total / len(values)
        squares = 0.0
        for v in values:
            squares += (v - average) ** 2
        variance = squares / len(values)
        return {"score": max(0, 1 - variance), "avgSentiment": average,
                "sentimentVariance": variance}

    def generate_score(results: StepResults) -> float:
        return float(results.preprocess_step_result["score"])

    return (
        create_scorer(id="tone", name="Tone Scorer", type="agent",
                      description="Analyzes the tone and sentiment of agent responses using "
                                  "sentiment analysis. Can compare against a reference tone or "
                                  "evaluate sentiment stability.")
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
