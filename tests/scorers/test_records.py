"""One `ScoreRecord` per job outcome: scored, not scorable, failed (with what the completed steps
produced), skipped."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers import (
    AgentRunInput,
    Judge,
    Message,
    PromptStep,
    RunTarget,
    ScorerRun,
    ScorerRunError,
    create_scorer,
    not_scorable,
    score_record,
    skipped_record,
)
from scorers.testing import ScriptedProvider
from scorers.types import run_id_for, score_id_for


def make_run() -> ScorerRun:
    return ScorerRun(
        input=AgentRunInput(input_messages=[Message.from_text("user", "Capital of France?")]),
        output=[Message.from_text("assistant", "Paris.")],
        target=RunTarget(trace_id="ab" * 16, span_id="cd" * 8, entity_id="agent-1",
                         entity_name="support"))


def judged() -> object:
    return (create_scorer(id="judged", description="d", judge=Judge(instructions="Judge."))
            .preprocess(lambda run: {"q": run.input.input_messages[0].text})
            .generate_score(PromptStep(description="s", create_prompt=lambda run: "Score?")))


async def test_a_scored_record_holds_the_steps_and_the_judge_calls() -> None:
    run = make_run()
    scorer = judged()
    result = await scorer.run(run, judge_provider=ScriptedProvider([{"score": 0.75}]))  # type: ignore[attr-defined]
    record = score_record(scorer, run, result)  # type: ignore[arg-type]
    assert (record.status, record.score, record.source) == ("scored", 0.75, "LIVE")
    assert record.id == score_id_for("ab" * 16, "cd" * 8, "judged")
    assert record.preprocess_step_result == {"q": "Capital of France?"}
    assert record.generate_score_prompt == "Score?"
    assert record.judge["generate_score"].executions[0].status == "success"
    assert record.input["inputMessages"][0]["content"]["content"] == "Capital of France?"
    assert record.error is None


async def test_a_failed_record_keeps_what_the_completed_steps_produced() -> None:
    run = make_run()
    scorer = judged()
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(run, judge_provider=ScriptedProvider(["no json", "still none"]))  # type: ignore[attr-defined]
    record = score_record(scorer, run, info.value, source="TEST")  # type: ignore[arg-type]
    assert (record.status, record.score, record.source) == ("failed", None, "TEST")
    assert record.error is not None
    assert (record.error.name, record.error.step) == ("JudgeParseError", "generate_score")
    assert record.preprocess_step_result == {"q": "Capital of France?"}
    assert record.judge["generate_score"].executions[0].attempt_count == 2


async def test_a_timeout_and_a_skip_are_recorded_with_the_run() -> None:
    run = make_run()
    scorer = create_scorer(id="s", description="").generate_score(
        lambda run: not_scorable("n/a"))
    timeout = score_record(scorer, run, TimeoutError("did not finish within 30s"))
    assert (timeout.status, timeout.error.name, timeout.error.step) == (  # type: ignore[union-attr]
        "failed", "TimeoutError", None)
    assert timeout.output[0]["content"]["content"] == "Paris."
    skipped = skipped_record(scorer, run, "daily_token_budget")
    assert (skipped.status, skipped.error.code) == ("skipped", "daily_token_budget")  # type: ignore[union-attr]
    result = await scorer.run(run)
    unscorable = score_record(scorer, run, result)
    assert (unscorable.status, unscorable.error.message) == (  # type: ignore[union-attr]
        "not_scorable", "n/a")


@given(trace_id=st.text(), span_id=st.text(), scorer_id=st.text())
@settings(max_examples=300, deadline=None, database=None, derandomize=True)
def test_run_and_score_ids_are_the_uuid5s_they_always_were(trace_id: str, span_id: str,
                                                           scorer_id: str) -> None:
    # Ids already exported (OTLP evaluation spans, JSON lines, the queue's `done` table) must not change when the id function is made faster: a replayed trace must get the
    # same run and score ids, so a rescore replaces the old score instead of adding one.
    assert run_id_for(trace_id, span_id) == str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"scorecar:run:{trace_id}:{span_id}"))
    assert score_id_for(trace_id, span_id, scorer_id) == str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"scorecar:score:{trace_id}:{span_id}:{scorer_id}"))
