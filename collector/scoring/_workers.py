"""The worker pool (DESIGN §5): claims unscored jobs and runs each in its own asyncio task
(`JobScorer`: under the scorer's `timeout` and the rate-limited judge). Each record is stored in
the queue *before* it is exported, so a re-run after a crash never yields a second value for one
score id; the pool's `ExportLoop` then sends stored records to every sink and acknowledges a job
once every sink confirmed it.

Metrics observed here: `queue_depth`; `JobScorer` observes `scorer_duration` and
`runs_skipped{daily_token_budget}`, the `ExportLoop` `export{exporter,outcome}` and `score_lag`.
The `PrometheusSink` observes `score` and `scorer_runs` from the records it receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from collector._telemetry import Metrics
from collector.scoring._export import ExportLoop
from collector.scoring._leases import Leases
from collector.scoring._limits import TokenBudget
from collector.scoring._score import JobScorer
from collector.scoring._select import ScorerSpec
from collector.scoring.queue import Job, JobQueue, LiveCache
from exporters.sink import ScoreSink
from scorers.judge import JudgeProvider

__all__ = ["WorkerPool"]

log = logging.getLogger(__name__)


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
        live: where the run objects of queued jobs and the records of scored ones are kept.
        judges: judge name → (provider, budget) of the named judges (see `JobScorer`).
    """

    def __init__(self, specs: Sequence[ScorerSpec], queue: JobQueue,
                 sinks: Sequence[ScoreSink], metrics: Metrics, *,
                 provider: JudgeProvider | None = None, budget: TokenBudget | None = None,
                 concurrency: int = 32, export_batch: int = 100, backoff_initial: float = 1.0,
                 backoff_max: float = 60.0, poll_interval: float = 0.25,
                 clock: Callable[[], float] = time.time,
                 source: Literal["LIVE", "TEST"] = "LIVE",
                 live: LiveCache | None = None,
                 judges: Mapping[str, tuple[JudgeProvider, TokenBudget]] | None = None) -> None:
        if concurrency < 1 or export_batch < 1:
            raise ValueError("concurrency and export_batch must be at least 1")
        names = [sink.name for sink in sinks]
        if len(set(names)) != len(names):
            raise ValueError(f"sink names must be distinct: {names}")
        self.queue = queue
        self.metrics = metrics
        self.concurrency = concurrency
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.poll_interval = poll_interval
        self.clock = clock
        self.live = live if live is not None else LiveCache()
        self.scorer = JobScorer(specs, metrics, provider=provider, budget=budget, source=source,
                                live=self.live, judges=judges)
        # Leases the queue could not hand back (its storage refused the write) wait here until
        # it can write again. Scored records it could not store wait in `_results`.
        self.leases = Leases(queue)
        self.exporter = ExportLoop(queue, sinks, metrics, live=self.live, leases=self.leases,
                                   batch=export_batch, backoff_initial=backoff_initial,
                                   backoff_max=backoff_max, poll_interval=poll_interval,
                                   clock=clock, busy=lambda: bool(self._running))
        self._running: dict[asyncio.Task[None], Job] = {}
        self._claim_task: asyncio.Task[None] | None = None
        self._claim_wake: asyncio.Event | None = None
        self._stopping = False
        self._results: list[tuple[str, str]] = []
        self._flush_scheduled = False

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
        self._set_depth()
        self._claim_task = asyncio.create_task(self._claim_loop(), name="scorecar-workers")
        self.exporter.start()

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
        self.exporter.finish()
        self.notify()
        await self._claim_task
        running = list(self._running)
        if running:
            _, pending = await asyncio.wait(running, timeout=max(0.0, deadline - loop.time()))
            for task in pending:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        self._flush_results()
        await self.exporter.stop(max(0.0, deadline - loop.time()))
        self._claim_task = None
        self._set_depth()

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait until the queue is empty: every job scored and confirmed by every sink.

        Raises:
            TimeoutError: jobs are still queued after `timeout` seconds.
        """
        async with asyncio.timeout(timeout):
            while self.queue.depth() > 0:
                self.notify()
                self.exporter.wake()
                await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ scoring

    def _set_depth(self) -> None:
        self.metrics.queue_depth.set(self.queue.depth())

    async def _claim_loop(self) -> None:
        assert self._claim_wake is not None
        wake = self._claim_wake
        while not self._stopping:
            wake.clear()
            free = self.concurrency - len(self._running)
            try:
                self.leases.release_pending()
                jobs = self.queue.claim_unscored(free, self.clock()) if free > 0 else []
            except Exception as exc:  # e.g. the disk is full: keep the loop alive, try again
                self.leases.faulted("claiming jobs", exc)
                jobs = []
            else:
                self.leases.recovered()
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
            record = await self.scorer.score(job)
        except asyncio.CancelledError:
            self.leases.release([job.id])  # stays queued for the next start
            raise
        except Exception:
            # A fault of ours, not of the scorer's (those become failed records): try later.
            try:
                self.queue.retry_later(job.id, self.clock() + self.backoff_max)
            except Exception as exc:  # noqa: BLE001 - the storage refused: hand it back later
                self.leases.faulted("handing a job back", exc)
                self.leases.hold(job.id)
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
            self.leases.faulted(f"storing {len(batch)} score records", exc)
            self._results = batch + self._results
            if not self._flush_scheduled and not self._stopping:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_later(self.backoff_initial, self._flush_results)
            return
        self.leases.recovered()
        self.exporter.wake()
