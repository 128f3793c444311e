"""Judge scorers tested offline with `scorers.testing.ScriptedProvider`, and the provider chosen
per scorer run (`Scorer.run(judge_provider=)`, `use_judge_provider`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from scorers import (
    Judge,
    JudgeReply,
    JudgeRequest,
    JudgeUnavailableError,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    StreamErrorRetryProcessor,
    create_scorer,
    use_judge_provider,
)
from scorers.testing import ScriptedProvider


class Relevance(BaseModel):
    relevant: int
    total: int


def make_run() -> ScorerRun:
    return ScorerRun(input="Which river flows through Paris?",
                     output="The Seine. Paris has bakeries.")


def relevance_scorer(judge: Judge | None = None) -> Any:
    return (create_scorer(id="relevance", description="",
                          judge=judge or Judge(instructions="Judge relevance."))
            .analyze(PromptStep(description="count", output_schema=Relevance,
                                create_prompt=lambda run: f"<answer>{run.output}</answer>"))
            .generate_score(lambda run, results:
                            results.analyze_step_result.relevant / results.analyze_step_result.total)
            .generate_reason(PromptStep(description="why",
                                        create_prompt=lambda run, score: f"Why {score}?")))


async def test_a_judge_scorer_runs_offline_on_scripted_replies() -> None:
    judge = ScriptedProvider([{"relevant": 1, "total": 2}, "One statement is off topic."])
    result = await relevance_scorer().run(make_run(), judge_provider=judge)
    assert (result.score, result.reason) == (0.5, "One statement is off topic.")
    analyze, reason = judge.requests
    assert analyze.system == "Judge relevance."
    assert analyze.output_schema is not None and analyze.tool is None
    assert reason.messages == [{"role": "user", "content": "Why 0.5?"}]
    assert result.judge["analyze"].executions[0].model_call_count == 1


async def test_use_judge_provider_and_the_argument_choose_the_same_way() -> None:
    outer = ScriptedProvider(lambda request: {"relevant": 2, "total": 2}
                             if request.output_schema else "outer")
    inner = ScriptedProvider(lambda request: {"relevant": 0, "total": 2}
                             if request.output_schema else "inner")
    scorer = relevance_scorer()
    with use_judge_provider(outer):
        first = await scorer.run(make_run())
        second = await scorer.run(make_run(), judge_provider=inner)  # the argument wins
        third = await scorer.run(make_run())                        # and is not left behind
    assert [(r.score, r.reason) for r in (first, second, third)] == [
        (1.0, "outer"), (0.0, "inner"), (1.0, "outer")]
    assert (len(outer.requests), len(inner.requests)) == (4, 2)


async def test_a_judges_own_provider_wins_over_the_runs() -> None:
    own = ScriptedProvider([{"relevant": 1, "total": 1}, "own"])
    per_run = ScriptedProvider([])
    scorer = relevance_scorer(Judge(instructions="Judge.", provider=own))
    result = await scorer.run(make_run(), judge_provider=per_run)
    assert result.reason == "own"
    assert per_run.requests == []


async def test_scripted_errors_go_through_the_error_processors() -> None:
    judge = ScriptedProvider([JudgeUnavailableError("busy", retry_after=0.05),
                              JudgeReply(text='{"relevant": 3, "total": 4}', input_tokens=9),
                              "fine"])
    scorer = relevance_scorer(Judge(instructions="Judge.", error_processors=[
        StreamErrorRetryProcessor(max_retries=1, max_retry_after=1.0)]))
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await scorer.run(make_run(), judge_provider=judge)
    assert loop.time() - started >= 0.05  # the provider's retry_after was honoured
    assert result.score == 0.75
    execution = result.judge["analyze"].executions[0]
    assert (execution.model_call_count, execution.usage.input_tokens) == (2, 9)


async def test_an_unlisted_model_gets_the_forced_tools_input() -> None:
    seen: list[JudgeRequest] = []

    async def answer(request: JudgeRequest) -> Any:
        seen.append(request)
        return {"relevant": 1, "total": 4} if request.tool else "ok"

    scorer = relevance_scorer(Judge(instructions="Judge.", model="my-gateway-model"))
    result = await scorer.run(make_run(), judge_provider=ScriptedProvider(answer))
    assert result.score == 0.25
    assert seen[0].tool is not None and seen[0].output_schema is None


async def test_a_script_that_runs_out_fails_the_step_clearly() -> None:
    judge = ScriptedProvider([{"relevant": 1, "total": 1}])
    with pytest.raises(ScorerRunError) as info:
        await relevance_scorer().run(make_run(), judge_provider=judge)
    assert info.value.failed_step == "generate_reason"
    assert isinstance(info.value.__cause__, LookupError)
    assert "no reply left for request 2" in str(info.value)


async def test_a_provider_without_complete_is_refused() -> None:
    with pytest.raises(TypeError, match="complete"):
        await relevance_scorer().run(make_run(), judge_provider=object())  # type: ignore[arg-type]
