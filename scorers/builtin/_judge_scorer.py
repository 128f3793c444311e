"""The pipeline every LLM-judge built-in shares, and the verdict helpers several of them use.

Each judge built-in is: a function preprocess step (refusing, before any judge call, a run whose
content was not captured) → one structured judge call (analyze) → a plain formula (score) → an
optional judge call explaining the score (reason). `judge_scorer` builds that chain; each module
keeps its own instructions, prompts, output schema and formula.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from scorers.builder import (
    NotScorable,
    PromptStep,
    Scorer,
    StepResults,
    create_scorer,
    not_scorable,
)
from scorers.builtin._judge_prompts import (
    as_string_list,
    content_not_captured,
    judge_with_instructions,
    round2,
    tool_result_context,
)
from scorers.judge import Judge
from scorers.types import ScorerRun

__all__ = [
    "context_preprocess",
    "context_text",
    "gather_context",
    "judge_scorer",
    "preprocessed",
    "yes_share",
]


def judge_scorer(*, id: str, name: str, description: str,
                 judge: Judge | None, instructions: str,
                 preprocess: Callable[[ScorerRun], dict[str, Any] | NotScorable],
                 analyze_description: str, output_schema: type[BaseModel],
                 analyze_prompt: Callable[[ScorerRun, StepResults], str],
                 score: Callable[[StepResults], float],
                 reason_prompt: Callable[[ScorerRun, StepResults, float], str],
                 reason: bool) -> Scorer:
    """Build a judge built-in: preprocess → analyze (judge) → score → reason (judge, optional).

    Args:
        id: the built-in id.
        name: display name.
        description: what the score means, with its range.
        judge: the operator's judge settings (None: defaults).
        instructions: the scorer's fixed system instructions (see `judge_with_instructions`).
        preprocess: reads the run; runs only when the run's content was captured.
        analyze_description: what the analyze step asks the judge.
        output_schema: the analyze step's structured output.
        analyze_prompt: `(run, results)` → the analyze prompt.
        score: `results` → the score (from the analyze output).
        reason_prompt: `(run, results, score)` → the prompt asking to explain the score.
        reason: add the reason step (one more judge call).

    Returns:
        A `type="agent"` scorer.
    """

    def _preprocess(run: ScorerRun) -> dict[str, Any] | NotScorable:
        # A judge would otherwise score placeholders: refuse before any judge call.
        missing = content_not_captured(run)
        return missing if missing is not None else preprocess(run)

    scorer = (
        create_scorer(id=id, name=name, description=description,
                      judge=judge_with_instructions(judge, instructions), type="agent")
        .preprocess(_preprocess)
        .analyze(PromptStep(description=analyze_description, output_schema=output_schema,
                            create_prompt=lambda run, results: analyze_prompt(run, results)))
        .generate_score(lambda results: score(results))
    )
    if reason:
        scorer = scorer.generate_reason(PromptStep(
            description="Explain the score",
            create_prompt=lambda run, results, score: reason_prompt(run, results, score)))
    return scorer


def preprocessed(results: StepResults) -> dict[str, Any]:
    """The preprocess step's result (a dict for every judge built-in), or `{}`."""
    pre = results.preprocess_step_result
    return pre if isinstance(pre, dict) else {}


def yes_share(verdicts: Sequence[str], *, scale: float, when_empty: float) -> float:
    """`yes / len(verdicts) * scale`, rounded as Mastra does; `when_empty` without verdicts."""
    if not verdicts:
        return when_empty
    return round2(sum(1 for v in verdicts if v == "yes") / len(verdicts) * scale)


# --------------------------------------------------------------------------- context


def gather_context(run: ScorerRun, context: Iterable[Any] | None) -> list[str]:
    """The configured context, then the run's tool results."""
    return as_string_list(context) + tool_result_context(run)


def context_preprocess(run: ScorerRun, context: list[str]) -> dict[str, Any] | NotScorable:
    """`{"context": passages}` for the claim checkers; not scorable without any context."""
    found = gather_context(run, context)
    if not found:
        return not_scorable("no context to check the answer against: set options.context, "
                            "or score runs whose tools returned results")
    return {"context": found}


def context_text(results: StepResults) -> str:
    """The preprocessed context, one passage per line (as Mastra joins them)."""
    return "\n".join(preprocessed(results).get("context", []))
