"""The durable job queue (DESIGN §5): one job per (run, scorer), deleted only once every enabled
exporter confirmed its score record. This module holds the job and what every queue offers;
`SqliteQueue` (`_sqlite.py`) and `MemoryQueue` (`_memory.py`) implement it.

A job's life: `put_many` (new, unscored) → `claim_unscored` (leased to one worker) →
`store_result` (scored; the record is kept before any export, so a re-run after a crash never
yields a second value for one score id) → `claim_scored` (leased to the export loop) →
`confirm` per sink → `ack` (deleted, its id remembered in a bounded `done` table so a re-delivered
trace is not scored again). `retry_later` / `release` hand a leased job back.

Leases do not expire with time: one process owns a queue, so a lease means "in flight in this
process". `recover()` releases every lease at startup (after a crash or a stop that left jobs
in flight).

`SqliteQueue` keeps jobs in SQLite (WAL, `synchronous=NORMAL`: a `kill -9` loses nothing that was
committed; a power cut may lose the last moments). It uses one connection from the event-loop
thread; every call is one short transaction. `MemoryQueue` has the same behaviour and keeps
nothing (`storage.kind: memory`, tests).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from scorers.types import ScorerRun, score_id_of

__all__ = [
    "DEFAULT_DONE_RETENTION",
    "Job",
    "JobQueue",
    "LiveCache",
    "QueueFull",
    "QueueUnwritable",
    "job_for",
]

DEFAULT_DONE_RETENTION = 100_000
"""How many acknowledged score ids a queue remembers (the newest are kept)."""


class QueueFull(Exception):
    """`put_many` refused new jobs: the queue holds `max_jobs` already (nothing was inserted).

    Attributes:
        refused: how many new jobs were refused.
        depth: the queue's depth when it refused them.
    """

    def __init__(self, refused: int, depth: int, max_jobs: int) -> None:
        super().__init__(f"job queue full: {depth} of {max_jobs} jobs; {refused} new jobs refused")
        self.refused = refused
        self.depth = depth
        self.max_jobs = max_jobs

    @property
    def reason(self) -> str:
        """The `scorecar_runs_skipped_total` reason: `queue_full`."""
        return "queue_full"


class QueueUnwritable(QueueFull):
    """`put_many` refused new jobs: the storage refused the write (disk full, read-only volume,
    I/O error). Nothing was inserted; like `QueueFull` the caller holds the runs and offers them
    again later.

    Attributes:
        error: the storage's error message.
    """

    def __init__(self, refused: int, depth: int, max_jobs: int, error: str) -> None:
        super().__init__(refused, depth, max_jobs)
        self.args = (f"job queue storage refused a write ({error}); {refused} new jobs "
                     "refused",)
        self.error = error

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def reason(self) -> str:
        """The `scorecar_runs_skipped_total` reason: `storage`."""
        return "storage"


@dataclass(frozen=True, slots=True)
class Job:
    """One (run, scorer) job.

    Attributes:
        id: the score id (`score_id_of(run, scorer_id)`), the idempotency key.
        scorer_id: which configured scorer runs it.
        run_json: the `ScorerRun` as JSON: enough to run it again without the trace.
        trace_id: the run's trace id (or None for a run from no trace).
        span_id: the run's agent span id.
        agent: the agent name (for labels and logs).
        run_ended_at: the agent span's end, Unix seconds (for `scorecar_score_lag_seconds`).
        attempts: how many times the job was claimed (scoring and exporting).
        not_before: Unix seconds before which it is not claimed again (export backoff).
        result_json: the stored `ScoreRecord` JSON once scored, else None.
        confirmed: names of the sinks that confirmed the record.
    """

    id: str
    scorer_id: str
    run_json: str
    trace_id: str | None = None
    span_id: str | None = None
    agent: str | None = None
    run_ended_at: float | None = None
    attempts: int = 0
    not_before: float = 0.0
    result_json: str | None = None
    confirmed: frozenset[str] = field(default_factory=frozenset)

    def run(self) -> ScorerRun:
        """The run, decoded from `run_json`."""
        return ScorerRun.model_validate_json(self.run_json)


def job_for(run: ScorerRun, scorer_id: str) -> Job:
    """The job of scoring `run` with scorer `scorer_id` (its id is the record's score id)."""
    t = run.target
    job_id = score_id_of(run, scorer_id)  # the same id `scorers.records` gives the record
    ended = t.ended_at if t is not None else None
    return Job(id=job_id, scorer_id=scorer_id, run_json=run.model_dump_json(by_alias=True),
               trace_id=t.trace_id if t else None, span_id=t.span_id if t else None,
               agent=(t.entity_name or t.entity_id) if t else None,
               run_ended_at=ended.timestamp() if isinstance(ended, datetime) else None)


class LiveCache:
    """Objects this process already holds for queued jobs — the run it queued, the record it
    stored — so it need not parse its own JSON back. Bounded (oldest dropped); a miss falls
    back to the job's JSON, so a restart or an eviction only costs time. A parsed run weighs
    about 13 KB (its JSON about 2 KB): the bound stays small, enough for the jobs that are
    claimed soon after they were queued.
    """

    def __init__(self, limit: int = 2_048) -> None:
        self.limit = limit
        self.runs: OrderedDict[str, ScorerRun] = OrderedDict()
        self.records: OrderedDict[str, Any] = OrderedDict()

    @staticmethod
    def _put(cache: OrderedDict[str, Any], key: str, value: Any, limit: int) -> None:
        cache[key] = value
        if len(cache) > limit:
            cache.popitem(last=False)

    def put_run(self, job_id: str, run: ScorerRun) -> None:
        """Remember the run of a job just queued."""
        self._put(self.runs, job_id, run, self.limit)

    def take_run(self, job: Job) -> ScorerRun:
        """The job's run: the object queued by this process, else decoded from its JSON."""
        run = self.runs.pop(job.id, None)
        return run if run is not None else job.run()

    def put_record(self, job_id: str, record: Any) -> None:
        """Remember the record of a job just scored."""
        self._put(self.records, job_id, record, self.limit)

    def record(self, job_id: str) -> Any:
        """The record this process stored for the job, or None."""
        return self.records.get(job_id)

    def forget(self, job_ids: Iterable[str]) -> None:
        """The jobs are acknowledged (or will be scored again): drop what is held for them."""
        for job_id in job_ids:
            self.records.pop(job_id, None)


@runtime_checkable
class JobQueue(Protocol):
    """What the scheduler and the worker pool need from a queue (all calls are short)."""

    max_jobs: int

    def put_many(self, jobs: Sequence[Job], *, replace: bool = False) -> int:
        """Insert new jobs; return how many were inserted.

        A job whose id is queued, or was acknowledged recently, is skipped — unless `replace`
        is set (rescoring a late run): then it is queued again, unscored, under the same id.

        Raises:
            QueueFull: the new jobs do not fit under `max_jobs`; none was inserted.
        """
        ...

    def claim_unscored(self, limit: int, now: float) -> list[Job]:
        """Lease up to `limit` unscored jobs due at `now` (oldest first)."""
        ...

    def claim_scored(self, limit: int, now: float) -> list[Job]:
        """Lease up to `limit` scored, unacknowledged jobs due at `now` (oldest first)."""
        ...

    def store_result(self, job_id: str, record_json: str) -> None:
        """Keep the job's score record and release its lease (it is now due for export)."""
        ...

    def store_results(self, results: Sequence[tuple[str, str]]) -> None:
        """`store_result` for many (job id, record JSON) pairs in one transaction."""
        ...

    def confirm(self, job_ids: Sequence[str], sink: str) -> None:
        """Note that sink `sink` confirmed these jobs' records."""
        ...

    def ack(self, job_ids: Sequence[str]) -> None:
        """Delete these jobs and remember their ids as done."""
        ...

    def retry_later(self, job_id: str, not_before: float) -> None:
        """Release a leased job; it is not claimed again before `not_before`."""
        ...

    def release(self, job_ids: Sequence[str]) -> None:
        """Release leases without delay (a stopped worker hands its jobs back)."""
        ...

    def recover(self) -> int:
        """Release every lease (at startup); return how many were held."""
        ...

    def depth(self) -> int:
        """Jobs queued or in flight."""
        ...

    def writable(self) -> bool:
        """Whether the queue can take a write now (for `/readyz`)."""
        ...

    def close(self) -> None:
        """Release resources; the queue is unusable afterwards."""
        ...
