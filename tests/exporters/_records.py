"""Real `ScoreRecord`s for the sink tests: real scorers run on a run rebuilt from a trace.

- `code`: the built-in `completeness` code scorer (scored, no judge);
- `judge`: a two-step judge scorer (generate_score + generate_reason) answered by an in-process
  provider (`scorers.testing.ScriptedProvider`), with token counts;
- `failed`: a judge scorer whose judge never returns valid JSON (status failed, a failed judge
  execution with the raw reply);
- `offline`: the code scorer on a run without trace ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from scorers import (
    AgentRunInput,
    Judge,
    JudgeReply,
    Message,
    PromptStep,
    RunTarget,
    ScoreRecord,
    ScorerRun,
    create_scorer,
    score_record,
)
from scorers.builtin import get_builtin
from scorers.testing import ScriptedProvider

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
AGENT = "support-agent"
SCORE_PROMPT = "SCORE-PROMPT: rate the answer about Paris"
REASON_PROMPT = "REASON-PROMPT: explain the score"
REASON = "The answer names the weather in Paris."


def make_run(*, trace_id: str | None = TRACE_ID, span_id: str | None = SPAN_ID,
             agent: str | None = AGENT) -> ScorerRun:
    """A weather-agent run; with trace ids as the sidecar rebuilds it from a trace."""
    target = RunTarget(trace_id=trace_id, span_id=span_id, entity_id=agent, entity_name=agent,
                       conversation_id="conv-1") if trace_id else None
    return ScorerRun(
        input=AgentRunInput(input_messages=[Message.from_text(
            "user", "What is the weather in Paris today?")]),
        output=[Message.from_text("assistant", "It is 14 C and cloudy in Paris today.")],
        target=target,
    )


def judge_scorer(provider: ScriptedProvider, scorer_id: str = "answer-quality"):  # type: ignore[no-untyped-def]
    """A judge scorer: the judge scores, then explains."""
    return (create_scorer(id=scorer_id, description="judge rates the answer",
                          judge=Judge(model="claude-test-1", instructions="You rate answers.",
                                      provider=provider))
            .generate_score(PromptStep(description="score", create_prompt=lambda run: SCORE_PROMPT))
            .generate_reason(PromptStep(description="reason",
                                        create_prompt=lambda run, score: REASON_PROMPT)))


@dataclass
class Records:
    code: ScoreRecord
    judge: ScoreRecord
    failed: ScoreRecord
    offline: ScoreRecord

    @property
    def traced(self) -> list[ScoreRecord]:
        return [self.code, self.judge, self.failed]


async def _outcome(scorer, run: ScorerRun):  # type: ignore[no-untyped-def]
    try:
        return await scorer.run(run)
    except Exception as exc:  # a failed run becomes a failed record
        return exc


async def make_records() -> Records:
    """One record of each kind, from real scorers."""
    run = make_run()
    code = get_builtin("completeness")
    judge = judge_scorer(ScriptedProvider([
        JudgeReply(text='{"score": 0.75}', input_tokens=120, output_tokens=8),
        JudgeReply(text=REASON, input_tokens=90, output_tokens=12)]))
    never_json = JudgeReply(text="Score: 5", input_tokens=50, output_tokens=3)
    broken = judge_scorer(ScriptedProvider(lambda request: never_json),  # every attempt
                          scorer_id="broken-judge")
    records = Records(
        code=score_record(code, run, await _outcome(code, run)),
        judge=score_record(judge, run, await _outcome(judge, run)),
        failed=score_record(broken, run, await _outcome(broken, run)),
        offline=score_record(code, make_run(trace_id=None), await _outcome(code, make_run(
            trace_id=None)), source="TEST"),
    )
    assert records.code.status == "scored" and records.judge.status == "scored"
    assert records.failed.status == "failed", records.failed
    return records
