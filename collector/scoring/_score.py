"""Scoring one job into its `ScoreRecord` (DESIGN §5): the scorer runs under its `timeout` and
inside `use_judge_provider(provider)` (the rate-limited judge). The outcome — scored, not
scorable, failed, or skipped (daily token budget) — becomes the record.

`run_scorer` is one run of one scorer under its timeout (what `scorecar score` runs too);
`JobScorer` scores a queued job the way the worker pool does (decoding its run, the budget,
`scorer_duration`, a judge that refuses the credentials said once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from pydantic import ValidationError

from collector._telemetry import Metrics
from collector.scoring._limits import QUOTA_CODES, UNKNOWN_MODEL_CODES, WARMUP, TokenBudget
from collector.scoring._select import ScorerSpec
from collector.scoring.queue import Job, LiveCache
from scorers import Scorer, ScorerRun, create_scorer, use_judge_provider
from scorers._provider import split_model
from scorers.errors import JudgeAuthError, JudgeRequestError, ScorerError
from scorers.judge import JudgeProvider
from scorers.records import score_record, skipped_record
from scorers.types import RunTarget, ScoreRecord, ScorerResult, run_id_for

__all__ = ["BUDGET_REASON", "JobScorer", "run_scorer"]

log = logging.getLogger(__name__)

BUDGET_REASON = "daily_token_budget"


async def run_scorer(spec: ScorerSpec, run: ScorerRun, *, provider: JudgeProvider | None = None
                     ) -> tuple[ScorerResult | BaseException, bool]:
    """Run `spec`'s scorer on `run` under `spec.timeout`, inside `use_judge_provider(provider)`
    when a provider is given.

    Returns:
        The result, or the exception the run raised (a `TimeoutError` when it took too long),
        and whether the timeout expired (a `TimeoutError` of the scorer's own is not one).
    """
    deadline = asyncio.timeout(spec.timeout)
    try:
        with _judge_provider(provider):
            async with deadline:
                return await spec.scorer.run(run), False
    except TimeoutError as exc:
        return exc, deadline.expired()
    except Exception as exc:  # noqa: BLE001 - a failing scorer is a failed record
        return exc, False


@contextlib.contextmanager
def _judge_provider(provider: JudgeProvider | None) -> Iterator[None]:
    if provider is None:
        yield
    else:
        with use_judge_provider(provider):
            yield


class JobScorer:
    """Scores queued jobs into records.

    Args:
        specs: the configured scorers (a job whose scorer is not among them fails, clearly).
        metrics: `scorer_duration{scorer}` and `runs_skipped{scorer,"daily_token_budget"}`.
        provider: the judge provider every job runs under; None leaves judges on their own
            default.
        budget: the daily token budget; when exhausted, jobs of judge scorers are skipped
            (`skipped` records, reason `daily_token_budget`).
        source: the records' `source`: `LIVE` for received traffic, `TEST` for offline scoring.
        live: where the run objects of queued jobs are kept (a miss decodes the job's JSON).
        judges: judge name → (provider, budget) of each named judge (`judges:`); a spec
            whose `judge` is not here runs under `provider` and `budget`.
    """

    def __init__(self, specs: Sequence[ScorerSpec], metrics: Metrics, *,
                 provider: JudgeProvider | None = None, budget: TokenBudget | None = None,
                 source: Literal["LIVE", "TEST"] = "LIVE",
                 live: LiveCache | None = None,
                 judges: Mapping[str, tuple[JudgeProvider, TokenBudget]] | None = None) -> None:
        self.specs: Mapping[str, ScorerSpec] = {spec.id: spec for spec in specs}
        self.metrics = metrics
        self.provider = provider
        self.budget = budget
        self.source: Literal["LIVE", "TEST"] = source
        self.live = live if live is not None else LiveCache()
        self.judges = dict(judges or {})
        self._reported: set[tuple[str, str]] = set()

    async def score(self, job: Job) -> ScoreRecord:
        """The record of `job`: its scorer's outcome on its run, or why it was not run."""
        spec = self.specs.get(job.scorer_id)
        try:
            run = self.live.take_run(job)
        except ValidationError as exc:
            run = ScorerRun(run_id=run_id_for(job.trace_id or "", job.span_id or ""),
                            target=RunTarget(trace_id=job.trace_id, span_id=job.span_id))
            scorer = spec.scorer if spec is not None else _unknown_scorer(job.scorer_id)
            return score_record(scorer, run, ScorerError(
                f"the queued run could not be decoded: {exc.error_count()} errors"),
                source=self.source)
        if spec is None:
            return score_record(_unknown_scorer(job.scorer_id), run, ScorerError(
                f"scorer {job.scorer_id!r} is not configured (the configuration changed after "
                "this job was queued)"), source=self.source)
        scorer = spec.scorer
        provider, budget = self.judges.get(spec.judge, (self.provider, self.budget))
        if scorer.has_judge and budget is not None and budget.exhausted():
            self.metrics.runs_skipped.labels(scorer.id, BUDGET_REASON).inc()
            return skipped_record(scorer, run, BUDGET_REASON,
                                  f"the judge's daily token budget ({budget.limit} tokens) "
                                  "is used up; it resets at 00:00 UTC", source=self.source)
        if scorer.has_judge:
            # Its judge resolves the default model (Anthropic's SDK model list) before the
            # first call: import that SDK off the event loop first.
            await WARMUP.ready(_judge_provider_of(scorer))
        started = time.perf_counter()
        try:
            outcome, expired = await run_scorer(spec, run, provider=provider)
        finally:
            self.metrics.scorer_duration.labels(scorer.id).observe(time.perf_counter() - started)
        if expired:
            outcome = TimeoutError(f"scorer {scorer.id!r} did not finish within "
                                   f"{spec.timeout:g} s")
        if isinstance(outcome, BaseException):
            kind = _configuration_failure(outcome)
            if kind is not None:
                self._report(kind, spec.judge, scorer.id)
        return score_record(scorer, run, outcome, source=self.source)

    def _report(self, kind: str, judge: str, scorer_id: str) -> None:
        """Say once per judge and kind what only the operator can fix (each failed call is
        counted in `scorecar_judge_requests_total{outcome}`)."""
        if (judge, kind) in self._reported:
            return
        self._reported.add((judge, kind))
        where = "judge" if judge == "default" else f"judges.{judge}"
        what = {"auth": "refused scorecar's credentials (HTTP 401/403)",
                "quota": "says the API key's quota is used up",
                "unknown_model": "does not know the configured model or deployment"}[kind]
        log.error("CONFIGURATION ERROR: the judge %r %s while scorer %r ran. Its scorers fail "
                  "until %s (its API key, plan or model) is fixed; such calls are never "
                  "retried. This is reported once.", judge, what, scorer_id, where)


def _unknown_scorer(scorer_id: str) -> Scorer:
    return create_scorer(id=scorer_id, description="(not configured)")


def _judge_provider_of(scorer: Scorer) -> str:
    model = scorer.judge.model if scorer.judge is not None else None
    return split_model(model)[0] if model else "anthropic"


def _configuration_failure(exc: BaseException) -> str | None:
    """`auth`, `quota` or `unknown_model` when `exc` (or a cause) is one, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, JudgeAuthError):
            return "auth"
        code = getattr(current, "code", None)
        if isinstance(current, JudgeRequestError) and code in QUOTA_CODES:
            return "quota"
        if isinstance(current, JudgeRequestError) and code in UNKNOWN_MODEL_CODES:
            return "unknown_model"
        seen.add(id(current))
        current = current.__cause__
    return None
