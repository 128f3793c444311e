"""The scorer pipeline: step order, results, not_scorable, failures, prepare_run, immutability."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from scorers import (
    AgentRunInput,
    Message,
    PromptStep,
    ScorerError,
    ScorerResult,
    ScorerRun,
    ScorerRunError,
    create_scorer,
    not_scorable,
)
from scorers.builder import StepResults


def make_run() -> ScorerRun:
    return ScorerRun(
        run_id="run-1",
        input=AgentRunInput(input_messages=[Message.from_text("user", "What is the capital of France?")],
                            remembered_messages=[Message.from_text("user", "hi"),
                                                 Message.from_text("assistant", "hello")]),
        output=[Message.from_text("assistant", "Paris is the capital of France.")],
        ground_truth="Paris",
        request_context={"tenant": "acme"},
    )


async def test_steps_run_in_order_and_see_earlier_results() -> None:
    calls: list[tuple[str, Any]] = []

    def preprocess(run: ScorerRun, results: StepResults) -> dict[str, str]:
        calls.append(("preprocess", results.preprocess_step_result))
        return {"question": run.input.input_messages[-1].text}

    async def analyze(run: ScorerRun, results: StepResults) -> dict[str, bool]:
        calls.append(("analyze", results.preprocess_step_result))
        await asyncio.sleep(0)
        return {"mentions_paris": "Paris" in run.output[-1].text}

    def score(run: ScorerRun, results: StepResults) -> float:
        calls.append(("generate_score", results.analyze_step_result))
        return 1.0 if results.analyze_step_result["mentions_paris"] else 0.0

    async def reason(run: ScorerRun, results: StepResults, score: float) -> str:
        calls.append(("generate_reason", results.generate_score_step_result))
        return f"score {score} for {results.preprocess_step_result['question']}"

    scorer = (create_scorer(id="paris", description="mentions Paris")
              .preprocess(preprocess).analyze(analyze).generate_score(score)
              .generate_reason(reason))
    result = await scorer.run(make_run())

    assert isinstance(result, ScorerResult)
    assert [c[0] for c in calls] == ["preprocess", "analyze", "generate_score", "generate_reason"]
    assert calls[0][1] is None
    assert calls[1][1] == {"question": "What is the capital of France?"}
    assert calls[2][1] == {"mentions_paris": True}
    assert calls[3][1] == 1.0
    assert result.status == "scored"
    assert result.score == 1.0
    assert result.reason == "score 1.0 for What is the capital of France?"
    assert result.preprocess_step_result == {"question": "What is the capital of France?"}
    assert result.analyze_step_result == {"mentions_paris": True}
    assert result.generate_score_step_result == 1.0
    # the run's fields are carried into the result
    assert result.run_id == "run-1"
    assert result.ground_truth == "Paris"
    assert result.request_context == {"tenant": "acme"}
    assert result.judge == {}
    assert result.preprocess_prompt is None


async def test_steps_run_in_chain_order_like_mastra() -> None:
    order: list[str] = []
    scorer = (create_scorer(id="o", description="")
              .generate_score(lambda run, results: order.append("score") or 0.5)
              .preprocess(lambda run, results: order.append("pre") or {}))
    await scorer.run(make_run())
    assert order == ["score", "pre"]


async def test_steps_may_declare_only_the_arguments_they_use() -> None:
    scorer = (create_scorer(id="a", description="")
              .generate_score(lambda run: 0.25)
              .generate_reason(lambda score: f"got {score}"))
    result = await scorer.run(make_run())
    assert (result.score, result.reason) == (0.25, "got 0.25")


async def test_results_are_read_only() -> None:
    def analyze(run: ScorerRun, results: StepResults) -> int:
        with pytest.raises(AttributeError):
            results.preprocess_step_result = "tampered"  # type: ignore[misc]
        return 1

    scorer = create_scorer(id="ro", description="").analyze(analyze).generate_score(
        lambda run, results: float(results.analyze_step_result))
    assert (await scorer.run(make_run())).score == 1.0


def test_builder_is_immutable() -> None:
    base = create_scorer(id="imm", description="d")
    with_score = base.generate_score(lambda run, results: 1.0)
    with_reason = with_score.generate_reason(lambda run, results, score: "r")
    assert base.step_names == []
    assert with_score.step_names == ["generate_score"]
    assert with_reason.step_names == ["generate_score", "generate_reason"]
    with pytest.raises(ValueError, match="already has a generate_score step"):
        with_score.generate_score(lambda run, results: 0.0)


def test_scorer_attributes() -> None:
    scorer = create_scorer(id="my-scorer", description="what it does", type="agent")
    assert (scorer.id, scorer.name, scorer.description, scorer.type) == (
        "my-scorer", "my-scorer", "what it does", "agent")
    assert scorer.has_judge is False
    named = create_scorer(id="x", description="", name="Pretty name")
    assert named.name == "Pretty name"
    prompt = scorer.generate_reason(PromptStep(description="r", create_prompt=lambda run: "why"))
    assert prompt.has_judge is True
    with pytest.raises(ValueError):
        create_scorer(id="", description="")


def test_prompt_step_shapes_are_checked_when_added() -> None:
    scorer = create_scorer(id="p", description="")
    with pytest.raises(ValueError, match="needs an output_schema"):
        scorer.analyze(PromptStep(description="a", create_prompt=lambda run: "x"))
    with pytest.raises(ValueError, match="plain text"):
        scorer.generate_reason(PromptStep(description="r", create_prompt=lambda run: "x",
                                          output_schema={"type": "object"}))
    with pytest.raises(ValueError, match="needs calculate_score"):
        scorer.generate_score(PromptStep(description="s", create_prompt=lambda run: "x",
                                         output_schema={"type": "object"}))
    with pytest.raises(TypeError):
        scorer.generate_score("not a function")  # type: ignore[arg-type]


async def test_missing_generate_score_raises_before_any_step_runs() -> None:
    ran: list[str] = []
    scorer = create_scorer(id="no-score", description="").preprocess(
        lambda run, results: ran.append("pre"))
    with pytest.raises(ScorerError, match="no generate_score step"):
        await scorer.run(make_run())
    assert ran == []


async def test_not_scorable_stops_the_run_without_a_score() -> None:
    ran: list[str] = []
    scorer = (create_scorer(id="ns", description="")
              .preprocess(lambda run, results: not_scorable("no tool calls in this run"))
              .generate_score(lambda run, results: ran.append("score") or 1.0))
    result = await scorer.run(make_run())
    assert result.status == "not_scorable"
    assert result.score is None
    assert result.not_scorable is not None
    assert (result.not_scorable.step, result.not_scorable.reason) == (
        "preprocess", "no tool calls in this run")
    assert ran == []
    dumped = result.model_dump(mode="json")
    assert dumped["notScorable"] == {"step": "preprocess", "reason": "no tool calls in this run"}


async def test_not_scorable_from_generate_score() -> None:
    scorer = create_scorer(id="ns2", description="").generate_score(
        lambda run, results: not_scorable())
    result = await scorer.run(make_run())
    assert result.status == "not_scorable"
    assert result.not_scorable is not None and result.not_scorable.step == "generate_score"


async def test_a_raising_step_fails_with_scorer_run_error() -> None:
    def analyze(run: ScorerRun, results: StepResults) -> None:
        raise RuntimeError("boom")

    scorer = (create_scorer(id="boom", description="")
              .preprocess(lambda run, results: {"ok": True})
              .analyze(analyze)
              .generate_score(lambda run, results: 1.0))
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(make_run())
    err = info.value
    assert err.failed_step == "analyze"
    assert err.completed_steps == ["preprocess"]
    assert err.scorer_id == "boom"
    assert "boom" in str(err)
    assert isinstance(err.__cause__, RuntimeError)
    assert err.partial_result.preprocess_step_result == {"ok": True}
    assert err.partial_result.analyze_step_result is None
    assert err.partial_result.score is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "0.9", True, False, None, [1.0]])
async def test_a_score_that_is_not_a_finite_number_is_a_failure(bad: Any) -> None:
    scorer = create_scorer(id="bad", description="").generate_score(lambda run, results: bad)
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(make_run())
    assert info.value.failed_step == "generate_score"
    assert info.value.completed_steps == []
    assert info.value.partial_result.score is None


async def test_integer_scores_are_accepted_as_floats() -> None:
    scorer = create_scorer(id="int", description="").generate_score(lambda run, results: 1)
    result = await scorer.run(make_run())
    assert result.score == 1.0 and isinstance(result.score, float)


async def test_a_reason_that_is_not_text_is_a_failure() -> None:
    scorer = (create_scorer(id="r", description="").generate_score(lambda run, results: 1.0)
              .generate_reason(lambda run, results, score: {"why": "dict"}))
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(make_run())
    assert info.value.failed_step == "generate_reason"
    assert info.value.completed_steps == ["generate_score"]
    assert info.value.partial_result.generate_score_step_result == 1.0


async def test_prepare_run_gets_a_copy_and_never_mutates_the_callers_run() -> None:
    seen: list[ScorerRun] = []

    def prepare(run: ScorerRun) -> ScorerRun:
        run.input.remembered_messages.clear()  # mutates its own copy only
        run.request_context["added"] = 1
        seen.append(run)
        return run

    original = make_run()
    before = original.model_dump()
    scorer = create_scorer(id="prep", description="", prepare_run=prepare).generate_score(
        lambda run, results: float(len(run.input.remembered_messages)))
    result = await scorer.run(original)
    assert result.score == 0.0
    assert result.request_context == {"tenant": "acme", "added": 1}
    assert original.model_dump() == before
    assert seen[0] is not original


async def test_async_prepare_run() -> None:
    async def prepare(run: ScorerRun) -> ScorerRun:
        await asyncio.sleep(0)
        return run.model_copy(update={"ground_truth": "Lyon"})

    scorer = create_scorer(id="ap", description="", prepare_run=prepare).generate_score(
        lambda run, results: 1.0 if run.ground_truth == "Lyon" else 0.0)
    result = await scorer.run(make_run())
    assert result.score == 1.0
    assert result.ground_truth == "Lyon"


async def test_a_failing_prepare_run_is_failed_step_prepare_run() -> None:
    ran: list[str] = []

    def prepare(run: ScorerRun) -> ScorerRun:
        raise KeyError("missing")

    scorer = create_scorer(id="pf", description="", prepare_run=prepare).generate_score(
        lambda run, results: ran.append("x") or 1.0)
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(make_run())
    assert info.value.failed_step == "prepare_run"
    assert info.value.completed_steps == []
    assert ran == []


async def test_run_accepts_a_camel_case_dict_and_does_not_mutate_it() -> None:
    payload = {
        "runId": "dict-run",
        "input": {"inputMessages": [{"role": "user", "content": "hello"}]},
        "output": [{"role": "assistant", "content": "hi there"}],
    }
    scorer = create_scorer(id="d", description="").generate_score(
        lambda run, results: float(len(run.output[0].text)))
    result = await scorer.run(payload)
    assert result.run_id == "dict-run"
    assert result.score == 8.0
    assert payload["output"] == [{"role": "assistant", "content": "hi there"}]


async def test_result_json_is_camel_case() -> None:
    scorer = (create_scorer(id="j", description="")
              .preprocess(lambda run, results: {"a": 1})
              .generate_score(lambda run, results: 0.5))
    dumped = (await scorer.run(make_run())).model_dump(mode="json")
    assert dumped["preprocessStepResult"] == {"a": 1}
    assert dumped["generateScoreStepResult"] == 0.5
    assert dumped["score"] == 0.5
    assert dumped["status"] == "scored"
    assert dumped["runId"] == "run-1"


async def test_an_invalid_run_dict_is_refused_clearly() -> None:
    scorer = create_scorer(id="v", description="").generate_score(lambda run: 1.0)
    with pytest.raises(ScorerError, match="not a valid ScorerRun"):
        await scorer.run({"input": {"inputMessages": "not a list"}, "requestContext": 3})
