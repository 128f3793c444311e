"""One `ScoreRecord` per job outcome (DESIGN §2): what the sidecar's workers, `scorecar score`
and the exporters all write — scored, not scorable, failed, or skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from scorers.errors import ScorerRunError
from scorers.types import (
    ScoreError,
    ScoreRecord,
    ScorerInfo,
    ScorerResult,
    ScorerRun,
    score_id_of,
)

if TYPE_CHECKING:
    from scorers.builder import Scorer

__all__ = ["score_record", "skipped_record"]

Source = Literal["LIVE", "TEST"]


def _info(scorer: Scorer) -> ScorerInfo:
    return ScorerInfo(id=scorer.id, name=scorer.name, description=scorer.description,
                      has_judge=scorer.has_judge)


def _base(scorer: Scorer, run: ScorerRun, source: Source) -> dict[str, Any]:
    t = run.target
    return {
        "id": score_id_of(run, scorer.id),
        "scorer_id": scorer.id,
        "scorer": _info(scorer),
        "entity_id": t.entity_id if t else None,
        "entity_type": t.entity_type if t else "agent_run",
        "entity": {"id": t.entity_id, "name": t.entity_name} if t else {},
        "run_id": run.run_id,
        "trace_id": t.trace_id if t else None,
        "span_id": t.span_id if t else None,
        "conversation_id": t.conversation_id if t else None,
        "source": source,
    }


def score_record(scorer: Scorer, run: ScorerRun, outcome: ScorerResult | BaseException, *,
                 source: Source = "LIVE") -> ScoreRecord:
    """The record of one scorer's outcome on one run.

    Args:
        scorer: the scorer that ran.
        run: the run it was given (before `prepare_run`).
        outcome: what `scorer.run(run)` returned, or the exception it raised (a
            `ScorerRunError` keeps its partial result; a timeout or any other exception
            becomes a failed record with the step unknown).
        source: `LIVE` for received traffic, `TEST` for offline scoring.
    """
    base = _base(scorer, run, source)
    if isinstance(outcome, ScorerResult):
        return ScoreRecord(
            **base, **_steps(outcome), status=outcome.status, score=outcome.score,
            reason=outcome.reason,
            error=(ScoreError(name="NotScorable", message=outcome.not_scorable.reason or "",
                              step=outcome.not_scorable.step)
                   if outcome.not_scorable is not None else None),
        )
    partial = outcome.partial_result if isinstance(outcome, ScorerRunError) else None
    step = outcome.failed_step if isinstance(outcome, ScorerRunError) else None
    cause = outcome.__cause__ if isinstance(outcome, ScorerRunError) else None
    name = type(cause if cause is not None else outcome).__name__
    message = str(outcome) or name
    fields: dict[str, Any] = (_steps(partial) if isinstance(partial, ScorerResult) else
                              {"input": _dump(run.input), "output": _dump(run.output)})
    return ScoreRecord(**base, **fields, status="failed",
                       error=ScoreError(name=name, message=message, step=step))


def skipped_record(scorer: Scorer, run: ScorerRun, reason: str, message: str = "", *,
                   source: Source = "LIVE") -> ScoreRecord:
    """The record of a job that was not run (`reason`: e.g. `daily_token_budget`, `shed`)."""
    return ScoreRecord(**_base(scorer, run, source), status="skipped",
                       input=_dump(run.input), output=_dump(run.output),
                       error=ScoreError(name=reason, message=message or reason, code=reason))


def _steps(result: ScorerResult) -> dict[str, Any]:
    """What a result's steps produced, as record fields (the scored run, prompts, judge calls)."""
    return {
        "input": _dump(result.input), "output": _dump(result.output),
        "preprocess_step_result": _dump(result.preprocess_step_result),
        "analyze_step_result": _dump(result.analyze_step_result),
        "preprocess_prompt": result.preprocess_prompt, "analyze_prompt": result.analyze_prompt,
        "generate_score_prompt": result.generate_score_prompt,
        "generate_reason_prompt": result.generate_reason_prompt, "judge": result.judge,
    }


def _dump(value: Any) -> Any:
    """Pydantic values as their JSON (camelCase) shape; anything else as it is."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value
