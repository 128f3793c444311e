"""A function scorer on a hand-built agent run: no API key, no network.

    python examples/function_scorer.py
"""

from __future__ import annotations

import asyncio

from scorers import (
    AgentRunInput,
    Message,
    NotScorable,
    ScorerRun,
    StepResults,
    create_scorer,
    not_scorable,
)

STOP_WORDS = {"which", "what", "where", "when", "through", "with", "that", "does"}


def keywords(run: ScorerRun, results: StepResults) -> list[str] | NotScorable:
    question = run.input.input_messages[-1].text
    words = {w.strip("?.,!").lower() for w in question.split()}
    words = {w for w in words if len(w) > 3 and w not in STOP_WORDS}
    return sorted(words) if words else not_scorable("the question has no keywords")


def coverage(run: ScorerRun, results: StepResults) -> float:
    answer = run.output[-1].text.lower()
    wanted = results.preprocess_step_result
    return sum(w in answer for w in wanted) / len(wanted)


def explain(run: ScorerRun, results: StepResults, score: float) -> str:
    wanted = results.preprocess_step_result
    return f"The answer covers {score:.0%} of the question's keywords {wanted}."


keyword_coverage = (
    create_scorer(id="keyword-coverage", description="Share of question keywords in the answer",
                  type="agent")
    .preprocess(keywords)
    .generate_score(coverage)
    .generate_reason(explain)
)


async def main() -> None:
    run = ScorerRun(
        input=AgentRunInput(input_messages=[
            Message.from_text("user", "Which river flows through Paris?")]),
        output=[Message.from_text("assistant", "The Seine flows through Paris.")],
    )
    result = await keyword_coverage.run(run)
    print(f"score: {result.score:.3f}")
    print(f"reason: {result.reason}")


if __name__ == "__main__":
    asyncio.run(main())
