"""Answer relevancy (LLM judge): how relevant the answer's statements are to the user's question.

Port of Mastra's `createAnswerRelevancyScorer`. The judge splits the answer into statements and
marks each `yes` / `unsure` / `no` for relevance to the question, with a reason (analyze); the
score is `(yes + uncertainty_weight * unsure) / n`, rounded to 2 decimals (0 without statements),
and the judge explains it (reason).

Difference from Mastra, on purpose: Mastra extracts the statements in one judge call and judges
them in a second; here one structured call does both (each result carries its statement), so a
run costs 2 judge calls (1 with `reason=False`) instead of 3. The preprocess step is a function
that reads the question and the answer, so a run whose content was not captured is not scorable
before any judge call.
"""

from __future__ import annotations

from typing import Any

from scorers.builder import NotScorable, Scorer, StepResults
from scorers.builtin._judge_prompts import (
    JudgeSchema,
    JudgeScorerInfo,
    YesNoUnsure,
    assistant_text,
    data_block,
    js_number,
    round2,
    user_text,
)
from scorers.builtin._judge_scorer import judge_scorer, preprocessed
from scorers.judge import Judge
from scorers.types import ScorerRun

__all__ = [
    "ANSWER_RELEVANCY_INFO",
    "ANSWER_RELEVANCY_INSTRUCTIONS",
    "RelevancyResult",
    "RelevancyResults",
    "answer_relevancy_score",
    "create_answer_relevancy_scorer",
]

ANSWER_RELEVANCY_INFO = JudgeScorerInfo(
    id="answer_relevancy",
    measures="share of the answer's statements that address the user's question "
             "(unsure ones count uncertainty_weight)",
    higher_is_better=True, judge_calls=2)

ANSWER_RELEVANCY_INSTRUCTIONS = """\
You are a balanced, careful evaluator of answer relevancy. You decide whether the statements of an
AI agent's answer address what the user asked, including partly relevant and uncertain cases.

Principles:
1. Judge whether each statement addresses what the question asks for.
2. Consider direct answers and related context.
3. Judge relevance, not correctness.
4. A statement can be partly relevant.
5. Empty statements and error messages are not relevant ("no").
6. A statement that discusses the kind of information asked for is partly relevant ("unsure")."""


class RelevancyResult(JudgeSchema):
    """One statement of the answer and its relevance verdict."""

    statement: str
    result: YesNoUnsure
    reason: str


class RelevancyResults(JudgeSchema):
    """Analyze output: the answer's statements, in order, each with its verdict."""

    results: list[RelevancyResult]


def answer_relevancy_score(analysis: RelevancyResults | None, *,
                           uncertainty_weight: float = 0.3, scale: float = 1.0) -> float:
    """`(yes + uncertainty_weight * unsure) / n * scale`, rounded; 0 without results (Mastra)."""
    if analysis is None or not analysis.results:
        return 0.0
    relevant = 0.0
    for item in analysis.results:
        if item.result == "yes":
            relevant += 1
        elif item.result == "unsure":
            relevant += uncertainty_weight
    return round2(relevant / len(analysis.results) * scale)


def _preprocess(run: ScorerRun) -> dict[str, Any] | NotScorable:
    return {"question": user_text(run), "answer": assistant_text(run)}


def _analyze_prompt(run: ScorerRun, results: StepResults) -> str:
    texts = preprocessed(results)
    return f"""\
Split the agent's answer into statements, then decide for each statement how relevant it is to
the user's question.

Statements: break the answer into meaningful statements, keeping context and relationships. Do
not split too aggressively; split compound statements joined by "and" or holding several distinct
facts, claims or descriptive elements. A one-word answer is one statement; an error message is one
statement; an empty answer has none.

Verdicts:
- "yes": the statement directly answers the question: it gives the specific answer, states the
  relationship asked about, can stand alone as an answer, or is the right kind of answer
  (a place for "where", a person for "who"). A direct answer that is wrong is "unsure".
- "unsure": partly relevant: it discusses the type of information asked for (temperatures when
  asked about temperature), mentions related entities or measurements without the explicit
  answer, refers to the answer indirectly, or is wrong but shows it understood the question.
- "no": no meaningful connection: neither the subject nor the type of information requested,
  general facts about the subject unrelated to what is asked, empty or meaningless content.
Judge relevance only, never factual correctness.

Example: for the question "What color is the sky during daytime?", "The sky is blue during
daytime" is "yes", "Blue is a beautiful color" is "unsure", "I had breakfast today" is "no".

{data_block("user_question", texts.get("question", ""))}

{data_block("agent_answer", texts.get("answer", ""))}

Return {{"results": [{{"statement": "...", "result": "yes" | "unsure" | "no", "reason": "..."}},
...]}}, one entry per statement of the answer, in order, each with a short reason; an empty list
when the answer has no statements."""


def _reason_prompt(run: ScorerRun, results: StepResults, score: float, scale: float) -> str:
    texts = preprocessed(results)
    analysis = results.analyze_step_result
    verdicts = ([r.model_dump() for r in analysis.results]
                if isinstance(analysis, RelevancyResults) else [])
    shown = js_number(score)
    top = js_number(scale)
    return f"""\
Explain the answer relevancy score in one or two sentences. The score is {shown} on a scale where
0 is the lowest and {top} the highest. Use this score as given; do not recompute it.

- Explain it from the mix of direct answers and related context; mention both relevant and
  irrelevant parts. Do not judge factual correctness.
- If there are no verdicts, say that the answer made no statements to assess.
- Start with "The score is {shown} because".

{data_block("user_question", texts.get("question", ""))}

{data_block("agent_answer", texts.get("answer", ""))}

{data_block("verdicts", verdicts)}"""


def create_answer_relevancy_scorer(judge: Judge | None = None, *,
                                   uncertainty_weight: float = 0.3, scale: float = 1.0,
                                   reason: bool = True) -> Scorer:
    """Create the answer relevancy scorer (higher is better).

    Args:
        judge: judge settings (model, key, processors …); the scorer supplies the instructions.
        uncertainty_weight: how much an `unsure` statement counts (Mastra's default 0.3).
        scale: the score is multiplied by it (default 1: scores in [0, 1]).
        reason: ask the judge to explain the score (one more judge call).

    Returns:
        A `type="agent"` scorer with id `answer_relevancy`.
    """
    return judge_scorer(
        id="answer_relevancy", name="Answer Relevancy",
        description="Relevancy of the agent's answer to the user's question, 0 to "
                    f"{scale:g}; higher is better.",
        judge=judge, instructions=ANSWER_RELEVANCY_INSTRUCTIONS, preprocess=_preprocess,
        analyze_description="Split the answer into statements and judge each one's relevance "
                            "to the question",
        output_schema=RelevancyResults, analyze_prompt=_analyze_prompt,
        score=lambda results: answer_relevancy_score(
            results.analyze_step_result, uncertainty_weight=uncertainty_weight, scale=scale),
        reason_prompt=lambda run, results, score: _reason_prompt(run, results, score, scale),
        reason=reason)
