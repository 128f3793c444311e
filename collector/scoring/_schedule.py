"""Scheduling (DESIGN §5): each ready run against each configured scorer — `filter`, then
sampling (`plan_jobs`) — and one job per (run, scorer) into the queue. Every decision is counted:
`agent_runs`, `runs_skipped` (filtered, sampled_out, queue_full, storage) and `queue_depth`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from collector._telemetry import Metrics
from collector.scoring._select import JobPlan, ScorerSpec, plan_jobs, selections
from collector.scoring.queue import JobQueue, LiveCache, QueueFull
from scorers import ScorerRun

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)


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
