"""Hallucination (LLM judge): the share of the answer's claims the context does not back.

Port of Mastra's `createHallucinationScorer`. **Inverted: higher is worse.** The context is
`context` (the `options.context` of a config entry) plus every tool result of the run; a run with
neither is not scorable, and no judge call is made. Score: `hallucinated / claims` (a claim that
contradicts the context or asserts something it does not support), rounded to 2 decimals (0 when
the answer makes no claim).

Differences from Mastra, on purpose: Mastra reads only `options.context` (or a `getContext`
hook); here the run's tool results are context too, so tool-using agents are scorable without
configuration. Claims are extracted and verified in one structured judge call, so a run costs 2
judge calls (1 with `reason=False`) instead of 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scorers.builder import Scorer, StepResults
from scorers.builtin._judge_prompts import (
    JudgeSchema,
    JudgeScorerInfo,
    YesNo,
    as_string_list,
    assistant_text,
    data_block,
    js_number,
    user_text,
)
from scorers.builtin._judge_scorer import context_preprocess, context_text, judge_scorer, yes_share
from scorers.judge import Judge
from scorers.types import ScorerRun

__all__ = [
    "HALLUCINATION_INFO",
    "HALLUCINATION_INSTRUCTIONS",
    "HallucinationVerdict",
    "HallucinationVerdicts",
    "create_hallucination_scorer",
    "hallucination_score",
]

HALLUCINATION_INFO = JudgeScorerInfo(
    id="hallucination",
    measures="share of the answer's claims that contradict or go beyond the context "
             "(options.context and the run's tool results)",
    higher_is_better=False, judge_calls=2)

HALLUCINATION_INSTRUCTIONS = """\
You are a precise, thorough hallucination evaluator. You decide whether an AI agent's answer
contains information that the context it was given contradicts or does not support.

Principles:
1. Extract every claim of the answer, factual and speculative.
2. Verify each claim against the context only; never use prior knowledge.
3. A claim that contradicts the context is a hallucination.
4. A claim asserting something the context does not support is a hallucination.
5. An empty answer has no hallucinations.
6. Speculative language about facts in the context is not a hallucination; speculative language
   about facts not in the context is.
7. Not hallucinations: less precise dates (the year when the context gives the month), reasonable
   numerical approximations, omitting details while staying accurate.
8. Subjective claims ("made history", "pioneering", "leading") are hallucinations unless the
   context states them."""


class HallucinationVerdict(JudgeSchema):
    """One claim and whether it is a hallucination (`yes`) or backed by the context (`no`)."""

    statement: str
    verdict: YesNo
    reason: str


class HallucinationVerdicts(JudgeSchema):
    """Analyze output: the answer's claims, in order, each with its verdict."""

    verdicts: list[HallucinationVerdict]


def hallucination_score(analysis: HallucinationVerdicts | None, *, scale: float = 1.0) -> float:
    """`hallucinated / total * scale`, rounded; 0 without verdicts (Mastra). Higher is worse."""
    verdicts = [v.verdict for v in analysis.verdicts] if analysis is not None else []
    return yes_share(verdicts, scale=scale, when_empty=0.0)


def _analyze_prompt(run: ScorerRun, results: StepResults) -> str:
    return f"""\
Extract every claim the agent's answer makes, then decide for each claim whether it is a
hallucination with respect to the context.

Claims: any statement that asserts information, definitive or speculative (may, might, could).
Break compound statements into single claims, keep numbers, dates, quantities and the entities
they belong to, include predictions; leave out only questions and commands. An empty answer has
no claims.

Verdicts, one per claim, in the same order:
- "yes" (hallucination): the claim contradicts the context, asserts something the context does not
  support, speculates about facts not in the context, or makes a subjective claim the context
  does not state.
- "no" (not a hallucination): the context supports it, including less precise dates, reasonable
  approximations, omitted details and speculation about facts in the context.
Use only the context, never prior knowledge, and say what the context does or does not support.

Example: with the context "SpaceX achieved its first successful landing in December 2015. Their
reusable rocket technology reduced launch costs by 30%.", "SpaceX made history in 2015" is "yes"
(subjective), "reusable rockets significantly cut costs" is "no" (a fair paraphrase), and "They
might expand operations globally" is "yes" (speculation beyond the context).

{data_block("context", context_text(results))}

{data_block("agent_answer", assistant_text(run))}

Return {{"verdicts": [{{"statement": "...", "verdict": "yes" | "no",
"reason": "..."}}, ...]}}, one entry per claim of the answer, in order; an empty list when it
makes no claim."""


def _reason_prompt(run: ScorerRun, results: StepResults, score: float, scale: float) -> str:
    analysis = results.analyze_step_result
    verdicts = ([v.model_dump() for v in analysis.verdicts]
                if isinstance(analysis, HallucinationVerdicts) else [])
    shown = js_number(score)
    top = js_number(scale)
    return f"""\
Explain the hallucination score in one or two sentences. The score is {shown} on a scale from 0
(no hallucination) to {top} (every claim hallucinated): higher is worse. Use this score as given;
do not recompute it.

- Explain it from the hallucinated ("yes") claims against all claims; mention what the context
  backs and what it does not, and the balance when mixed.
- Base the explanation only on the verdicts and the context, never on prior knowledge.
- If there are no verdicts, say that the answer made no claims to verify.
- Start with "The score is {shown} because".

{data_block("context", context_text(results))}

{data_block("user_question", user_text(run))}

{data_block("agent_answer", assistant_text(run))}

{data_block("verdicts", verdicts)}"""


def create_hallucination_scorer(judge: Judge | None = None, *,
                                context: Iterable[Any] | None = None, scale: float = 1.0,
                                reason: bool = True) -> Scorer:
    """Create the hallucination scorer (inverted: higher is worse).

    Args:
        judge: judge settings (model, key, processors …); the scorer supplies the instructions.
        context: reference passages, added before the run's tool results. Without any context
            at all, a run is not scorable.
        scale: the score is multiplied by it (default 1: scores in [0, 1]).
        reason: ask the judge to explain the score (one more judge call).

    Returns:
        A `type="agent"` scorer with id `hallucination`.
    """
    configured = as_string_list(context)
    return judge_scorer(
        id="hallucination", name="Hallucination",
        description="Share of the answer's claims that contradict or go beyond the context "
                    f"(options.context and tool results), 0 to {scale:g}; inverted: "
                    "higher is worse.",
        judge=judge, instructions=HALLUCINATION_INSTRUCTIONS,
        preprocess=lambda run: context_preprocess(run, configured),
        analyze_description="Extract the answer's claims and check each against the context",
        output_schema=HallucinationVerdicts, analyze_prompt=_analyze_prompt,
        score=lambda results: hallucination_score(results.analyze_step_result, scale=scale),
        reason_prompt=lambda run, results, score: _reason_prompt(run, results, score, scale),
        reason=reason)
