"""A judge scorer: Claude rates how relevant an agent's answer is, and explains why.

Point it at any Anthropic-compatible endpoint through the SDK's own variables:

    ANTHROPIC_API_KEY=sk-ant-... python examples/judge_scorer.py
    ANTHROPIC_BASE_URL=http://127.0.0.1:8080 ANTHROPIC_API_KEY=... python examples/judge_scorer.py

Test it offline with a scripted judge (no key, no network):

    judge = scorers.testing.ScriptedProvider([{"relevant_statements": 1, "total_statements": 2},
                                              "Only one statement is about the river."])
    result = await relevance.run(run, judge_provider=judge)
"""

from __future__ import annotations

import asyncio
import sys

from pydantic import BaseModel, Field

from scorers import (
    AgentRunInput,
    Judge,
    Message,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    StreamErrorRetryProcessor,
    create_scorer,
)


class Relevance(BaseModel):
    relevant_statements: int = Field(ge=0, description="statements that answer the question")
    total_statements: int = Field(ge=1, description="all statements in the answer")


relevance = (
    create_scorer(
        id="answer-relevance", description="Share of the answer's statements that are relevant",
        type="agent",
        judge=Judge(instructions="You are a strict evaluator of answers to user questions.",
                    error_processors=[StreamErrorRetryProcessor(max_retries=3, delay=1.0)]))
    .analyze(PromptStep(
        description="Count relevant statements",
        output_schema=Relevance,
        create_prompt=lambda run, results: (
            "Count the statements in the answer, and those that help answer the question.\n"
            f"<question>{run.input.input_messages[-1].text}</question>\n"
            f"<answer>{run.output[-1].text}</answer>")))
    .generate_score(lambda run, results: (results.analyze_step_result.relevant_statements
                                          / results.analyze_step_result.total_statements))
    .generate_reason(PromptStep(
        description="Explain the score",
        create_prompt=lambda run, results, score: (
            f"In one sentence, explain why the answer scored {score:.2f} for relevance.\n"
            f"<answer>{run.output[-1].text}</answer>")))
)


async def main() -> None:
    run = ScorerRun(
        input=AgentRunInput(input_messages=[
            Message.from_text("user", "Which river flows through Paris?")]),
        output=[Message.from_text("assistant",
                                  "The Seine flows through Paris. Paris has great bakeries.")],
    )
    try:
        result = await relevance.run(run)
    except ScorerRunError as err:
        sys.exit(f"scoring failed in step {err.failed_step}: "
                 f"{type(err.__cause__).__name__}: {err.__cause__}")
    print(f"score: {result.score}")
    print(f"reason: {result.reason}")
    tokens = sum(e.usage.input_tokens + e.usage.output_tokens
                 for step in result.judge.values() for e in step.executions)
    print(f"judge calls: {len(result.judge)}, tokens: {tokens}")


if __name__ == "__main__":
    asyncio.run(main())
