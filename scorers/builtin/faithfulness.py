"""Faithfulness (LLM judge): the share of the answer's claims that its context supports.

Port of Mastra's `createFaithfulnessScorer`. The context is `context` (the `options.context` of a
config entry) plus every tool result of the run; a run with neither is not scorable, and no judge
call is made. Score: `supported / claims`, rounded to 2 decimals (0 when the answer makes no claim).

Differences from Mastra, on purpose:
- Mastra uses the option *or* the tool results and reads only the legacy `toolInvocations`, so it
  finds no tool results in real traces; here both sources are combined and parts are read.
- The claims are extracted and verified in one structured judge call (analyze) instead of two,
  so a run costs 2 judge calls (1 with `reason=False`) instead of 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scorers.builder import Scorer, StepResults
from scorers.builtin._judge_prompts import (
    JudgeSchema,
    JudgeScorerInfo,
    YesNoUnsure,
    as_string_list,
    assistant_text,
    data_block,
    js_number,
    user_text,
)
from scorers.builtin._judge_scorer import (
    context_preprocess,
    context_text,
    judge_scorer,
    yes_share,
)
from scorers.judge import Judge
from scorers.types import ScorerRun

__all__ = [
    "FAITHFULNESS_INFO",
    "FAITHFULNESS_INSTRUCTIONS",
    "FaithfulnessVerdict",
    "FaithfulnessVerdicts",
    "create_faithfulness_scorer",
    "faithfulness_score",
]

FAITHFULNESS_INFO = JudgeScorerInfo(
    id="faithfulness",
    measures="share of the answer's claims supported by the context (options.context and "
             "the run's tool results)",
    higher_is_better=True, judge_calls=2)

FAITHFULNESS_INSTRUCTIONS = """\
You are a precise, thorough faithfulness evaluator. You decide whether an AI agent's answer is
factually consistent with the context it was given, claim by claim.

Principles:
1. Extract every claim of the answer, factual and speculative.
2. Verify each claim against the context only; never use prior knowledge.
3. A claim explicitly supported by the context is "yes".
4. A claim that directly contradicts the context is "no".
5. A claim the context does not mention, or speculative language (may, might, possibly), is
   "unsure".
6. An empty answer has no claims.
7. Judge factual consistency, not relevance or completeness."""


class FaithfulnessVerdict(JudgeSchema):
    """One claim and whether the context supports it."""

    claim: str
    verdict: YesNoUnsure
    reason: str


class FaithfulnessVerdicts(JudgeSchema):
    """Analyze output: the answer's claims, in order, each with its verdict."""

    verdicts: list[FaithfulnessVerdict]


def faithfulness_score(analysis: FaithfulnessVerdicts | None, *, scale: float = 1.0) -> float:
    """`supported / total * scale`, rounded; 0 without verdicts (Mastra)."""
    verdicts = [v.verdict for v in analysis.verdicts] if analysis is not None else []
    return yes_share(verdicts, scale=scale, when_empty=0.0)


def _analyze_prompt(run: ScorerRun, results: StepResults) -> str:
    return f"""\
Extract every claim the agent's answer makes, then verify each claim against the context.

Claims: any statement that asserts information, definitive or speculative (may, might, could).
Break compound statements into single claims, keep numbers, dates, quantities and the entities
they belong to, include predictions; leave out only questions and commands. An empty answer has
no claims.

Verdicts, one per claim, in the same order:
- "yes": the context explicitly supports the claim.
- "no": the claim directly contradicts the context.
- "unsure": the context does not mention it, or the claim is speculative.
Use only the context, never prior knowledge, and say where the context supports or contradicts
each claim.

Example: with the context "The Tesla Model S was launched in 2012. Its maximum range is 375
miles.", the claim "The Model S was launched in 2012" is "yes", "The Model S has a range of 405
miles" is "no", and "The car might get software updates" is "unsure".

{data_block("context", context_text(results))}

{data_block("agent_answer", assistant_text(run))}

Return {{"verdicts": [{{"claim": "...", "verdict": "yes" | "no" | "unsure",
"reason": "..."}}, ...]}}, one entry per claim of the answer, in order; an empty list when it
makes no claim."""


def _reason_prompt(run: ScorerRun, results: StepResults, score: float, scale: float) -> str:
    analysis = results.analyze_step_result
    verdicts = ([v.model_dump() for v in analysis.verdicts]
                if isinstance(analysis, FaithfulnessVerdicts) else [])
    shown = js_number(score)
    top = js_number(scale)
    return f"""\
Explain the faithfulness score in one or two sentences. The score is {shown} on a scale where 0 is
the lowest and {top} the highest: the share of the answer's claims that the context supports.
Use this score as given; do not recompute it.

- Explain it from the supported ("yes") claims against all claims; mention supported,
  contradicted and unverifiable claims, and the balance when mixed.
- Base the explanation only on the verdicts and the context, never on prior knowledge.
- If there are no verdicts, say that the answer made no claims to verify.
- Start with "The score is {shown} because".

{data_block("context", context_text(results))}

{data_block("user_question", user_text(run))}

{data_block("agent_answer", assistant_text(run))}

{data_block("verdicts", verdicts)}"""


def create_faithfulness_scorer(judge: Judge | None = None, *,
                               context: Iterable[Any] | None = None, scale: float = 1.0,
                               reason: bool = True) -> Scorer:
    """Create the faithfulness scorer (higher is better).

    Args:
        judge: judge settings (model, key, processors …); the scorer supplies the instructions.
        context: reference passages the answer must be faithful to, added before the run's
            tool results. Without any context at all, a run is not scorable.
        scale: the score is multiplied by it (default 1: scores in [0, 1]).
        reason: ask the judge to explain the score (one more judge call).

    Returns:
        A `type="agent"` scorer with id `faithfulness`.
    """
    configured = as_string_list(context)
    return judge_scorer(
        id="faithfulness", name="Faithfulness",
        description="Share of the answer's claims supported by the context (options.context "
                    f"and tool results), 0 to {scale:g}; higher is better.",
        judge=judge, instructions=FAITHFULNESS_INSTRUCTIONS,
        preprocess=lambda run: context_preprocess(run, configured),
        analyze_description="Extract the answer's claims and verify each against the context",
        output_schema=FaithfulnessVerdicts, analyze_prompt=_analyze_prompt,
        score=lambda results: faithfulness_score(results.analyze_step_result, scale=scale),
        reason_prompt=lambda run, results, score: _reason_prompt(run, results, score, scale),
        reason=reason)
