"""Keyword coverage: the share of the input's keywords that the output repeats."""

from __future__ import annotations

import re
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._data import load
from scorers.builtin._js import JS_WHITESPACE, js_len, trim
from scorers.builtin._messages import input_text, output_text
from scorers.types import ScorerRun

__all__ = ["create_keyword_coverage_scorer", "extract_keywords"]

_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
# keyword-extractor's punctuation: `^'` and `'$` are anchored to the word's ends.
_PUNCTUATION = re.compile(r"""\.|,|;|!|\?|\(|\)|:|"|^'|'\Z|“|”|‘|’""")
_ONE_CHAR_JUNK = re.compile(r"_|@|&|#")
_ONE_WS = re.compile("[" + re.escape(JS_WHITESPACE) + "]")
_ASCII_DIGITS = frozenset("0123456789")


def _stopwords() -> frozenset[str]:
    return frozenset(load("keyword_extractor_stopwords_en.json")["stopwords"])


def extract_keywords(text: str) -> list[str]:
    """`keyword-extractor`'s `extract` with Mastra's options (English, digits removed,
    lower-cased, de-duplicated): the words of `text` that are not stop words, in order."""
    if not text:
        return []
    stripped = trim(_HTML_TAG.sub("", text))
    if not stripped:
        return []
    stopwords = _stopwords()
    results: list[str] = []
    seen: set[str] = set()
    for raw in _ONE_WS.split(stripped):
        is_url = _URL.search(raw) is not None
        word = raw if is_url else _PUNCTUATION.sub("", raw)
        if js_len(word) == 1:
            word = _ONE_CHAR_JUNK.sub("", word)
        if word and all(ch in _ASCII_DIGITS for ch in word):
            word = ""
        if not word:
            continue
        lower = word.lower()
        if lower in stopwords:
            continue
        result = word if is_url else lower
        if result not in seen:
            seen.add(result)
            results.append(result)
    return results


def create_keyword_coverage_scorer() -> Scorer:
    """The fraction of the input's keywords found among the output's keywords (0..1).

    Mastra's `createKeywordCoverageScorer`: keywords are the non-stop-words of each text
    (`keyword-extractor`'s English SMART list); an input without keywords scores 1.

    Returns:
        An agent scorer with id `keyword_coverage`.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        first = input_text(run)
        second = output_text(run)
        return {"referenceKeywords": extract_keywords(first),
                "responseKeywords": extract_keywords(second)}

    def analyze(results: StepResults) -> dict[str, int]:
        step = results.preprocess_step_result
        reference, response = step["referenceKeywords"], set(step["responseKeywords"])
        if not reference and not response:
            return {"totalKeywordsLength": 0, "matchedKeywordsLength": 0}
        matched = [k for k in reference if k in response]
        return {"totalKeywordsLength": len(reference), "matchedKeywordsLength": len(matched)}

    def generate_score(results: StepResults) -> float:
        analysis = results.analyze_step_result
        total = analysis["totalKeywordsLength"]
        if not total:
            return 1.0
        return float(analysis["matchedKeywordsLength"] / total)

    return (
        create_scorer(id="keyword_coverage", name="Keyword Coverage Scorer", type="agent",
                      description="The fraction of the input's keywords that the output "
                                  "contains (keyword-extractor's English stop words removed).")
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(generate_score)
    )
