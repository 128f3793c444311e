"""The job queue in memory (`storage.kind: memory`, tests): the same behaviour as
`SqliteQueue`, nothing kept."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from collector.scoring.queue._job import DEFAULT_DONE_RETENTION, Job, QueueFull

__all__ = ["MemoryQueue"]

@dataclass(slots=True)
class _Entry:
    job: Job
    leased: bool = False
    rerun: bool = False


class MemoryQueue:
    """The job queue in memory (`storage.kind: memory`): the same behaviour, nothing kept.

    Args:
        max_jobs: jobs held at most; past it `put_many` raises `QueueFull`.
        done_retention: acknowledged ids remembered (the newest).
    """

    def __init__(self, *, max_jobs: int = 100_000,
                 done_retention: int = DEFAULT_DONE_RETENTION) -> None:
        self.max_jobs = max_jobs
        self._done_retention = done_retention
        self._jobs: OrderedDict[str, _Entry] = OrderedDict()
        self._done: OrderedDict[str, None] = OrderedDict()

    def put_many(self, jobs: Sequence[Job], *, replace: bool = False) -> int:
        """See `JobQueue.put_many`."""
        unique = list({job.id: job for job in jobs}.values())
        if replace:
            fresh = [j for j in unique if j.id not in self._jobs]
            again = [j for j in unique if j.id in self._jobs]
        else:
            fresh = [j for j in unique if j.id not in self._jobs and j.id not in self._done]
            again = []
        if len(self._jobs) + len(fresh) > self.max_jobs:
            raise QueueFull(len(fresh), len(self._jobs), self.max_jobs)
        for job in fresh:
            self._done.pop(job.id, None)
            self._jobs[job.id] = _Entry(_fresh(job))
        for job in again:
            entry = self._jobs[job.id]
            entry.job = _fresh(job, attempts=entry.job.attempts)
            entry.rerun = entry.leased
        return len(fresh) + len(again)

    def _claim(self, scored: bool, limit: int, now: float) -> list[Job]:
        claimed: list[Job] = []
        for entry in self._jobs.values():
            if len(claimed) >= limit:
                break
            job = entry.job
            if entry.leased or (job.result_json is not None) != scored or job.not_before > now:
                continue
            entry.leased = True
            entry.job = job = replace(job, attempts=job.attempts + 1)
            claimed.append(job)
        return claimed

    def claim_unscored(self, limit: int, now: float) -> list[Job]:
        """See `JobQueue.claim_unscored`."""
        return self._claim(False, limit, now)

    def claim_scored(self, limit: int, now: float) -> list[Job]:
        """See `JobQueue.claim_scored`."""
        return self._claim(True, limit, now)

    def store_result(self, job_id: str, record_json: str) -> None:
        """See `JobQueue.store_result`."""
        entry = self._jobs.get(job_id)
        if entry is not None:
            if not entry.rerun:
                entry.job = replace(entry.job, result_json=record_json, not_before=0.0,
                                    confirmed=frozenset())
            entry.leased = entry.rerun = False

    def store_results(self, results: Sequence[tuple[str, str]]) -> None:
        """See `JobQueue.store_results`."""
        for job_id, record_json in results:
            self.store_result(job_id, record_json)

    def confirm(self, job_ids: Sequence[str], sink: str) -> None:
        """See `JobQueue.confirm`."""
        for job_id in job_ids:
            entry = self._jobs.get(job_id)
            if entry is not None:
                entry.job = replace(entry.job, confirmed=entry.job.confirmed | {sink})

    def ack(self, job_ids: Sequence[str]) -> None:
        """See `JobQueue.ack`."""
        for job_id in job_ids:
            entry = self._jobs.get(job_id)
            if entry is not None and entry.rerun:
                entry.leased = entry.rerun = False
                continue
            if self._jobs.pop(job_id, None) is None:
                continue
            self._done[job_id] = None
            self._done.move_to_end(job_id)
        while len(self._done) > self._done_retention:
            self._done.popitem(last=False)

    def retry_later(self, job_id: str, not_before: float) -> None:
        """See `JobQueue.retry_later`."""
        entry = self._jobs.get(job_id)
        if entry is not None:
            if not entry.rerun:
                entry.job = replace(entry.job, not_before=not_before)
            entry.leased = entry.rerun = False

    def release(self, job_ids: Sequence[str]) -> None:
        """See `JobQueue.release`."""
        for job_id in job_ids:
            entry = self._jobs.get(job_id)
            if entry is not None:
                entry.leased = entry.rerun = False

    def recover(self) -> int:
        """See `JobQueue.recover`."""
        held = 0
        for entry in self._jobs.values():
            held += entry.leased
            entry.leased = entry.rerun = False
        return held

    def depth(self) -> int:
        """See `JobQueue.depth`."""
        return len(self._jobs)

    def writable(self) -> bool:
        """See `JobQueue.writable` (always, for memory)."""
        return True

    def is_done(self, job_id: str) -> bool:
        """Whether `job_id` was acknowledged recently (within the done retention)."""
        return job_id in self._done

    def get(self, job_id: str) -> Job | None:
        """The queued job `job_id`, or None."""
        entry = self._jobs.get(job_id)
        return entry.job if entry is not None else None

    def close(self) -> None:
        """See `JobQueue.close`."""
        self._jobs.clear()


def _fresh(job: Job, attempts: int = 0) -> Job:
    return replace(job, attempts=attempts, not_before=0.0, result_json=None,
                   confirmed=frozenset())
