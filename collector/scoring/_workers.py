"""Scheduling, scoring and score export (DESIGN §5).

- `Scheduler.schedule(runs)`: each run against each configured scorer — `filter`, then sampling —
  and one job per (run, scorer) into the queue. Every decision is counted.
- `WorkerPool`: claims unscored jobs and runs each in its own asyncio task, under the scorer's
  `timeout` and inside `use_judge_provider(provider)` (the rate-limited judge). The outcome —
  scored, not scorable, failed, or skipped (daily token budget) — becomes a `ScoreRecord` that is
  stored in the queue *before* it is exported, so a re-run after a crash never yields a second
  value for one score id. An export loop sends stored records in batches to every sink that has
  not confirmed them yet, retries a failing sink with jittered, capped exponential backoff, and
  acknowledges (deletes) a job once every sink confirmed it.

Metrics observed here: `agent_runs`, `runs_skipped` (filtered, sampled_out, queue_full,
daily_token_budget), `queue_depth`, `scorer_duration`, `export{exporter,outcome}` and
`score_lag`. The `PrometheusSink` observes `score` and `scorer_runs` from the records it
receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError

from collector.scoring._limits import TokenBudget
from collector.scoring._specs import RunFilter, ScorerSpec
from collector.scoring.queue import Job, JobQueue, LiveCache, QueueFull, job_for
from exporters.prometheus import Metrics
from exporters.sink import ScoreSink
from scorers import Scorer, ScorerRun, create_scorer, use_judge_provider
from scorers.errors import ExportError, JudgeAuthError, ScorerError
from scorers.judge import JudgeProvider
from scorers.records import score_record, skipped_record
from scorers.sampling import NoSampling, RatioSampling, is_sampled
from scorers.types import RunTarget, ScoreRecord, ScorerResult, run_id_for

__all__ = ["JobPlan", "Scheduler", "Selection", "WorkerPool", "plan_jobs", "selections"]

log = logging.getLogger(__name__)

BUDGET_REASON = "daily_token_budget"


@dataclass(frozen=True, slots=True)
class Selection:
    """What decides whether a scorer gets a run: its filter and sampling (plain data, so a
    build process can plan jobs without the scorers themselves)."""

    scorer_id: str
    filter: RunFilter
    sampling: NoSampling | RatioSampling


def selections(specs: Sequence[ScorerSpec]) -> list[Selection]:
    """The selection part of each spec, in order."""
    return [Selection(s.id, s.filter, s.sampling) for s in specs]


@dataclass(slots=True)
class JobPlan:
    """The jobs some runs give, and what to count once they are queued.

    Attributes:
        jobs: one per (run, scorer) that passed the filter and sampling.
        conventions: runs by `target.convention` (`scorecar_agent_runs_total`).
        skipped: (scorer id, `filtered` | `sampled_out`) counts.
        runs: the run object of each job, when planned in this process (None when the plan
            came from a build process: the workers then read the job's JSON).
    """

    jobs: list[Job] = field(default_factory=list)
    conventions: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    runs: list[ScorerRun] | None = field(default_factory=list)

    def extend(self, other: JobPlan) -> None:
        """Add another plan's jobs and counts."""
        self.jobs.extend(other.jobs)
        self.conventions.update(other.conventions)
        self.skipped.update(other.skipped)
        if self.runs is not None and other.runs is not None:
            self.runs.extend(other.runs)
        else:
            self.runs = None


def plan_jobs(runs: Sequence[ScorerRun], chosen: Sequence[Selection], *,
              keep_runs: bool = True) -> JobPlan:
    """One job per (run, scorer) that passes the scorer's filter and sampling."""
    plan = JobPlan(runs=[] if keep_runs else None)
    for run in runs:
        t = run.target
        plan.conventions[(t.convention if t else None) or "unknown"] += 1
        for sel in chosen:
            if not sel.filter.matches(run):
                plan.skipped[sel.scorer_id, "filtered"] += 1
            elif not is_sampled(sel.sampling, t.trace_id if t else None, run.run_id):
                plan.skipped[sel.scorer_id, "sampled_out"] += 1
            else:
                plan.jobs.append(job_for(run, sel.scorer_id))
                if plan.runs is not None:
                    plan.runs.append(run)
    return plan


class Scheduler:
    """Turns ready runs (or job plans built elsewhere) into queued jobs.

    Args:
        specs: the configured scorers.
        queue: where jobs go.
        metrics: `agent_runs{convention}`, `runs_skipped{scorer,reason}` and `queue_depth`.
        on_jobs: called after new jobs were queued (e.g. `WorkerPool.notify`, so workers
            start at once instead of at their next poll).
        live: where the run objects of queued jobs are kept for the workers.
    """

    def __init__(self, specs: Sequence[ScorerSpec], queue: JobQueue, metrics: Metrics, *,
                 on_jobs: Callable[[], None] | None = None,
                 live: LiveCache | None = None) -> None:
        self.specs = list(specs)
        self.selections = selections(self.specs)
        self.queue = queue
        self.metrics = metrics
        self.on_jobs = on_jobs
        self.live = live
        self._refusing: str | None = None

    def schedule(self, runs: Sequence[ScorerRun], *, rescore: bool = False,
                 count_refusal: bool = True) -> int:
        """Queue one job per (run, scorer) that passes the scorer's filter and sampling.

        See `commit` for the arguments, the return value and `QueueFull`.
        """
        return self.commit(plan_jobs(runs, self.selections), rescore=rescore,
                           count_refusal=count_refusal)

    def commit(self, plan: JobPlan, *, rescore: bool = False,
               count_refusal: bool = True) -> int:
        """Queue a plan's jobs, then count its runs and skips (once: a plan held back by a
        full queue and offered again is counted when it is queued).

        Args:
            plan: the jobs and counts of some runs.
            rescore: the runs were rebuilt after late spans: queue their jobs again under the
                same score ids, even when already scored (the new score replaces the old one
                downstream).
            count_refusal: count the jobs in `runs_skipped{scorer,"queue_full"}` if the queue
                refuses them (off when they were counted at an earlier refusal, or when the
                caller tries a batch first and then trace by trace).

        Returns:
            How many jobs were queued (jobs already queued or recently done are not counted).

        Raises:
            QueueFull: the queue is at `max_jobs`; nothing of these runs was queued.
        """
        queued = 0
        if plan.jobs:
            try:
                queued = self.queue.put_many(plan.jobs, replace=rescore)
            except QueueFull as exc:
                if count_refusal:
                    for job in plan.jobs:
                        self.metrics.runs_skipped.labels(job.scorer_id, exc.reason).inc()
                    if exc.reason != self._refusing:  # once per episode, not per trace
                        log.warning("%s; held until there is room", exc)
                    self._refusing = exc.reason
                raise
            finally:
                self.metrics.queue_depth.set(self.queue.depth())
            if self._refusing is not None:
                log.info("the job queue takes new jobs again")
                self._refusing = None
        for convention, n in plan.conventions.items():
            self.metrics.agent_runs.labels(convention).inc(n)
        for (scorer_id, reason), n in plan.skipped.items():
            self.metrics.runs_skipped.labels(scorer_id, reason).inc(n)
        if queued and self.live is not None and plan.runs is not None:
            for job, run in zip(plan.jobs, plan.runs):
                self.live.put_run(job.id, run)
        if queued and self.on_jobs is not None:
            self.on_jobs()
        return queued


@dataclass(slots=True)
class _SinkState:
    failures: int = 0
    next_try: float = 0.0


SendOutcome = Literal["ok", "dropped", "retry", "skipped"]


class WorkerPool:
    """Runs queued jobs and exports their records.

    Args:
        specs: the configured scorers (a job whose scorer is not among them fails, clearly).
        queue: the job queue.
        sinks: every enabled exporter; a job is acknowledged once all of them confirmed it.
        metrics: see the module docstring.
        provider: the judge provider every job runs under (the app passes its
            `LimitedProvider`); None leaves judges on their own default.
        budget: the daily token budget (`LimitedProvider.budget`); when exhausted, jobs of
            judge scorers are skipped (`skipped` records, reason `daily_token_budget`).
        concurrency: jobs running at once (set it above `judge.max_concurrency`, so jobs
            waiting for the judge do not starve code scorers).
        export_batch: records per `export()` call.
        backoff_initial: first wait, seconds, after a sink failed with a retryable error.
        backoff_max: cap of that wait (it doubles per failure, jittered down to half).
        poll_interval: how often idle loops look at the queue without being notified.
        clock: wall clock, Unix seconds (score lag, backoff deadlines).
        source: the records' `source`: `LIVE` for received traffic, `TEST` for offline scoring.
    """

    def __init__(self, specs: Sequence[ScorerSpec], queue: JobQueue,
                 sinks: Sequence[ScoreSink], metrics: Metrics, *,
                 provider: JudgeProvider | None = None, budget: TokenBudget | None = None,
                 concurrency: int = 32, export_batch: int = 100, backoff_initial: float = 1.0,
                 backoff_max: float = 60.0, poll_interval: float = 0.25,
                 clock: Callable[[], float] = time.time,
                 source: Literal["LIVE", "TEST"] = "LIVE",
                 live: LiveCache | None = None) -> None:
        if concurrency < 1 or export_batch < 1:
            raise ValueError("concurrency and export_batch must be at least 1")
        names = [sink.name for sink in sinks]
        if len(set(names)) != len(names):
            raise ValueError(f"sink names must be distinct: {names}")
        self.specs: Mapping[str, ScorerSpec] = {spec.id: spec for spec in specs}
        self.queue = queue
        self.sinks = list(sinks)
        self.metrics = metrics
        self.provider = provider
        self.budget = budget
        self.concurrency = concurrency
        self.export_batch = export_batch
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.poll_interval = poll_interval
        self.clock = clock
        self.source: Literal["LIVE", "TEST"] = source
        self._sink_state = {sink.name: _SinkState() for sink in self.sinks}
        self._running: dict[asyncio.Task[None], Job] = {}
        self._claim_task: asyncio.Task[None] | None = None
        self._export_task: asyncio.Task[None] | None = None
        self._claim_wake: asyncio.Event | None = None
        self._export_wake: asyncio.Event | None = None
        self._stopping = False
        self._auth_reported = False
        self._drops_reported: set[tuple[str, str]] = set()
        self.live = live if live is not None else LiveCache()
        self._results: list[tuple[str, str]] = []
        self._flush_scheduled = False
        # Leases the queue could not hand back (its storage refused the write): handed back
        # once it can write again. Scored records it could not store wait in `_results`.
        self._unreleased: set[str] = set()
        self._fault: str | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Release leases a previous process left (`queue.recover()`) and start the loops."""
        if self._claim_task is not None:
            raise RuntimeError("the worker pool is already running")
        released = self.queue.recover()
        if released:
            log.info("re-queued %d jobs that were in flight when scorecar last stopped", released)
        self._stopping = False
        self._claim_wake = asyncio.Event()
        self._export_wake = asyncio.Event()
        self._set_depth()
        self._claim_task = asyncio.create_task(self._claim_loop(), name="scorecar-workers")
        self._export_task = asyncio.create_task(self._export_loop(), name="scorecar-export")

    def notify(self) -> None:
        """New jobs were queued: claim them now rather than at the next poll."""
        if self._claim_wake is not None:
            self._claim_wake.set()

    wake = notify

    async def stop(self, grace: float = 10.0) -> None:
        """Stop claiming; let running jobs finish and flush stored records within `grace`
        seconds. Jobs still running then are cancelled and stay queued for the next start;
        records not yet confirmed stay stored and are exported after the next start."""
        if self._claim_task is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, grace)
        self._stopping = True
        self.notify()
        await self._claim_task
        running = list(self._running)
        if running:
            _, pending = await asyncio.wait(running, timeout=max(0.0, deadline - loop.time()))
            for task in pending:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        self._flush_results()
        if self._export_task is not None:
            self._wake_export()
            try:
                await asyncio.wait_for(asyncio.shield(self._export_task),
                                       max(0.0, deadline - loop.time()))
            except TimeoutError:
                self._export_task.cancel()
                await asyncio.gather(self._export_task, return_exceptions=True)
        self._claim_task = self._export_task = None
        self._set_depth()

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait until the queue is empty: every job scored and confirmed by every sink.

        Raises:
            TimeoutError: jobs are still queued after `timeout` seconds.
        """
        async with asyncio.timeout(timeout):
            while self.queue.depth() > 0:
                self.notify()
                self._wake_export()
                await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ scoring

    def _set_depth(self) -> None:
        self.metrics.queue_depth.set(self.queue.depth())

    def _wake_export(self) -> None:
        if self._export_wake is not None:
            self._export_wake.set()

    async def _claim_loop(self) -> None:
        assert self._claim_wake is not None
        wake = self._claim_wake
        while not self._stopping:
            wake.clear()
            free = self.concurrency - len(self._running)
            try:
                self._release_pending()
                jobs = self.queue.claim_unscored(free, self.clock()) if free > 0 else []
            except Exception as exc:  # e.g. the disk is full: keep the loop alive, try again
                self._faulted("claiming jobs", exc)
                jobs = []
            else:
                self._recovered()
            for job in jobs:
                task = asyncio.create_task(self._run_job(job), name=f"score {job.scorer_id}")
                self._running[task] = job
                task.add_done_callback(self._job_done)
            if not jobs or len(jobs) == free:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), self.poll_interval)

    def _job_done(self, task: asyncio.Task[None]) -> None:
        self._running.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("scoring job failed unexpectedly", exc_info=task.exception())
        self.notify()

    async def _run_job(self, job: Job) -> None:
        try:
            record = await self._score(job)
        except asyncio.CancelledError:
            self._release([job.id])  # stays queued for the next start
            raise
        except Exception:
            # A fault of ours, not of the scorer's (those become failed records): try later.
            try:
                self.queue.retry_later(job.id, self.clock() + self.backoff_max)
            except Exception as exc:  # noqa: BLE001 - the storage refused: hand it back later
                self._faulted("handing a job back", exc)
                self._unreleased.add(job.id)
            raise
        # Results are stored in batches: one transaction for all the jobs that finished in this
        # turn of the event loop, not one per job.
        self.live.put_record(job.id, record)
        self._results.append((job.id, record.model_dump_json(by_alias=True)))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_results)

    def _flush_results(self) -> None:
        self._flush_scheduled = False
        batch, self._results = self._results, []
        if not batch:
            return
        try:
            self.queue.store_results(batch)
        except Exception as exc:  # e.g. the disk is full: keep them, store them later
            # The jobs stay leased (in flight in this process); a crash meanwhile re-runs them,
            # and nothing of these records was exported yet.
            self._faulted(f"storing {len(batch)} score records", exc)
            self._results = batch + self._results
            if not self._flush_scheduled and not self._stopping:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_later(self.backoff_initial, self._flush_results)
            return
        self._recovered()
        self._wake_export()

    def _release(self, job_ids: Sequence[str]) -> None:
        """Hand leases back; those the storage refuses are handed back once it can write."""
        try:
            self.queue.release(job_ids)
        except Exception as exc:  # noqa: BLE001 - e.g. the disk is full
            self._faulted("handing jobs back", exc)
            self._unreleased.update(job_ids)

    def _release_pending(self) -> None:
        if self._unreleased:
            ids = sorted(self._unreleased)
            self.queue.release(ids)
            self._unreleased.difference_update(ids)

    def _faulted(self, doing: str, exc: Exception) -> None:
        """Log a queue fault once (not at every poll), until `_recovered`."""
        message = f"{type(exc).__name__}: {exc}"
        if message != self._fault:
            log.error("%s failed (%s); retrying until the queue can write again", doing, message,
                      exc_info=not isinstance(exc, sqlite3.Error))
            self._fault = message

    def _recovered(self) -> None:
        if self._fault is not None:
            log.warning("the job queue works again; scoring and export resume")
            self._fault = None

    async def _score(self, job: Job) -> ScoreRecord:
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
        if scorer.has_judge and self.budget is not None and self.budget.exhausted():
            self.metrics.runs_skipped.labels(scorer.id, BUDGET_REASON).inc()
            return skipped_record(scorer, run, BUDGET_REASON,
                                  f"the judge's daily token budget ({self.budget.limit} tokens) "
                                  "is used up; it resets at 00:00 UTC", source=self.source)
        outcome: ScorerResult | BaseException
        started = time.perf_counter()
        deadline = asyncio.timeout(spec.timeout)
        try:
            with self._judge_provider():
                async with deadline:
                    outcome = await scorer.run(run)
        except TimeoutError as exc:
            outcome = (TimeoutError(f"scorer {scorer.id!r} did not finish within "
                                    f"{spec.timeout:g} s") if deadline.expired() else exc)
        except Exception as exc:
            outcome = exc
        finally:
            self.metrics.scorer_duration.labels(scorer.id).observe(time.perf_counter() - started)
        if isinstance(outcome, BaseException) and _is_auth_failure(outcome):
            self._report_auth(scorer.id)
        return score_record(scorer, run, outcome, source=self.source)

    @contextlib.contextmanager
    def _judge_provider(self) -> Iterator[None]:
        if self.provider is None:
            yield
        else:
            with use_judge_provider(self.provider):
                yield

    def _report_auth(self, scorer_id: str) -> None:
        if self._auth_reported:
            return
        self._auth_reported = True
        log.error("CONFIGURATION ERROR: the judge refused scorecar's credentials (HTTP 401/403) "
                  "while scorer %r ran. Judge scorers fail until the API key (judge.api_key_env) "
                  "is fixed; such calls are never retried. This is reported once.", scorer_id)

    # ------------------------------------------------------------------ export

    async def _export_loop(self) -> None:
        assert self._export_wake is not None
        wake = self._export_wake
        while True:
            wake.clear()
            try:
                self._release_pending()
                handled = await self._export_once()
            except Exception as exc:  # e.g. the disk is full: keep the loop alive, try again
                self._faulted("exporting score records", exc)
                handled = 0
            if handled:
                continue
            if self._stopping and not self._running:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), self.poll_interval)

    async def _export_once(self) -> int:
        """Export one batch of stored records; return how many jobs were handled."""
        now = self.clock()
        jobs = self.queue.claim_scored(self.export_batch, now)
        if not jobs:
            return 0
        handled: set[str] = set()
        try:
            records: dict[str, ScoreRecord] = {}
            for job in jobs:
                held = self.live.record(job.id)
                if isinstance(held, ScoreRecord):
                    records[job.id] = held
                    continue
                try:
                    records[job.id] = ScoreRecord.model_validate_json(job.result_json or "")
                except ValidationError:
                    log.error("stored score record of job %s is unreadable; dropped", job.id)
                    for sink in self.sinks:
                        self.metrics.export.labels(sink.name, "dropped").inc()
                    self.queue.ack([job.id])
                    handled.add(job.id)
            live = [job for job in jobs if job.id in records]
            confirmed = {job.id: set(job.confirmed) for job in live}
            sends = []
            for sink in self.sinks:
                todo = [job for job in live if sink.name not in job.confirmed]
                if todo and self._sink_state[sink.name].next_try <= now:
                    sends.append(self._send(sink, todo, records))
            for sink_name, ids in await asyncio.gather(*sends):
                for job_id in ids:
                    confirmed[job_id].add(sink_name)
            done = [job for job in live
                    if all(sink.name in confirmed[job.id] for sink in self.sinks)]
            self.queue.ack([job.id for job in done])
            self.live.forget(job.id for job in done)
            wall = self.clock()
            for job in done:
                handled.add(job.id)
                if job.run_ended_at is not None:
                    self.metrics.score_lag.observe(max(0.0, wall - job.run_ended_at))
            for job in live:
                if job.id in handled:
                    continue
                waits = [self._sink_state[s.name].next_try for s in self.sinks
                         if s.name not in confirmed[job.id]]
                self.queue.retry_later(job.id, min(waits, default=0.0))
                handled.add(job.id)
        except Exception:
            # The storage refused a confirm/ack/retry_later: every job of the batch is handed
            # back (sinks may see a record again: export is at least once).
            handled.clear()
            raise
        finally:
            self._release([job.id for job in jobs if job.id not in handled])
            self._set_depth()
        return len(jobs)

    async def _send(self, sink: ScoreSink, jobs: Sequence[Job],
                    records: Mapping[str, ScoreRecord]) -> tuple[str, list[str]]:
        """Export to one sink; return the ids it confirmed (or that were dropped for good)."""
        ids = [job.id for job in jobs]
        state = self._sink_state[sink.name]
        try:
            await sink.export([records[i] for i in ids])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            retryable = exc.retryable if isinstance(exc, ExportError) else True
            if not isinstance(exc, ExportError):
                log.exception("exporter %s raised an unexpected error; will retry", sink.name)
            if not retryable:
                # Said once per sink and reason, then quietly: a traces-only backend refuses
                # every batch of log records the same way (each drop is still counted).
                key = (sink.name, str(exc))
                level = logging.DEBUG if key in self._drops_reported else logging.ERROR
                self._drops_reported.add(key)
                log.log(level, "exporter %s refused %d records for good (dropped, counted in "
                        "scorecar_export_total{outcome=\"dropped\"}): %s", sink.name, len(ids),
                        exc)
                self.metrics.export.labels(sink.name, "dropped").inc(len(ids))
                self.queue.confirm(ids, sink.name)
                return sink.name, ids
            state.failures += 1
            delay = min(self.backoff_max, self.backoff_initial * 2 ** (state.failures - 1))
            state.next_try = self.clock() + delay * random.uniform(0.5, 1.0)
            self.metrics.export.labels(sink.name, "retry").inc(len(ids))
            log.warning("exporter %s failed (%s); retrying %d records in about %.1f s",
                        sink.name, exc, len(ids), delay)
            return sink.name, []
        state.failures = 0
        state.next_try = 0.0
        self.metrics.export.labels(sink.name, "ok").inc(len(ids))
        self.queue.confirm(ids, sink.name)
        return sink.name, ids


def _unknown_scorer(scorer_id: str) -> Scorer:
    return create_scorer(id=scorer_id, description="(not configured)")


def _is_auth_failure(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, JudgeAuthError):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False
