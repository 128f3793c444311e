"""The durable job queue (DESIGN §5): one job per (run, scorer), deleted only once every enabled
exporter confirmed its score record.

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

import contextlib
import json
import logging
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from scorers.types import ScorerRun, score_id_for

__all__ = [
    "DEFAULT_DONE_RETENTION",
    "Job",
    "JobQueue",
    "LiveCache",
    "MemoryQueue",
    "QueueFull",
    "QueueUnwritable",
    "SqliteQueue",
    "job_for",
]

log = logging.getLogger(__name__)

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
        id: the score id (`score_id_for(trace_id, span_id, scorer_id)`), the idempotency key.
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
    if t is not None and t.trace_id and t.span_id:
        job_id = score_id_for(t.trace_id, t.span_id, scorer_id)
    else:  # the same id `scorers.records` gives a run from no trace
        job_id = score_id_for("", run.run_id, scorer_id)
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


# ---------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    scorer_id    TEXT NOT NULL,
    run_json     TEXT NOT NULL,
    trace_id     TEXT,
    span_id      TEXT,
    agent        TEXT,
    run_ended_at REAL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    not_before   REAL NOT NULL DEFAULT 0,
    leased       INTEGER NOT NULL DEFAULT 0,
    scored       INTEGER NOT NULL DEFAULT 0,
    result_json  TEXT,
    confirmed    TEXT NOT NULL DEFAULT '[]',
    rerun        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (scored, leased, seq);
CREATE TABLE IF NOT EXISTS done (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id  TEXT NOT NULL UNIQUE
);
"""

_COLUMNS = ("id, scorer_id, run_json, trace_id, span_id, agent, run_ended_at, attempts, "
            "not_before, result_json, confirmed")


def _row_job(row: tuple[object, ...]) -> Job:
    (job_id, scorer_id, run_json, trace_id, span_id, agent, ended, attempts, not_before,
     result_json, confirmed) = row
    return Job(id=str(job_id), scorer_id=str(scorer_id), run_json=str(run_json),
               trace_id=trace_id if isinstance(trace_id, str) else None,
               span_id=span_id if isinstance(span_id, str) else None,
               agent=agent if isinstance(agent, str) else None,
               run_ended_at=float(ended) if isinstance(ended, (int, float)) else None,
               attempts=int(attempts) if isinstance(attempts, int) else 0,
               not_before=float(not_before) if isinstance(not_before, (int, float)) else 0.0,
               result_json=result_json if isinstance(result_json, str) else None,
               confirmed=frozenset(json.loads(str(confirmed))))


def _chunks(items: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class SqliteQueue:
    """The job queue in one SQLite file (WAL), for `storage.kind: sqlite`.

    Args:
        path: the database file (its directory is created).
        max_jobs: jobs held at most; past it `put_many` raises `QueueFull`.
        done_retention: acknowledged ids remembered (the newest), so a re-delivered trace
            is not scored twice.
    """

    def __init__(self, path: Path, *, max_jobs: int = 100_000,
                 done_retention: int = DEFAULT_DONE_RETENTION) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_jobs = max_jobs
        self._done_retention = done_retention
        self._acks_since_prune = 0
        self._error: str | None = None
        self._probed = 0.0
        # Autocommit mode; transactions are explicit (BEGIN IMMEDIATE … COMMIT).
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        self._depth = self._count()

    def _count(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM jobs").fetchone()
        return int(row[0])

    def _tx(self) -> _Tx:
        return _Tx(self._db, self)

    def _write_failed(self, exc: sqlite3.Error) -> None:
        message = str(exc)
        if message != self._error:
            log.error("job queue write refused: %s (%s); new jobs are refused and receivers "
                      "answer retryably until it can write again", message, self.path)
        self._error = message
        self._probed = time.monotonic()

    def _write_ok(self) -> None:
        if self._error is not None:
            log.warning("job queue writable again (%s)", self.path)
            self._error = None

    def put_many(self, jobs: Sequence[Job], *, replace: bool = False) -> int:
        """See `JobQueue.put_many`."""
        if not jobs:
            return 0
        unique = list({job.id: job for job in jobs}.values())
        try:
            return self._put_many(unique, replace)
        except sqlite3.Error as exc:
            raise QueueUnwritable(len(unique), self._depth, self.max_jobs, str(exc)) from exc

    def _put_many(self, unique: list[Job], replace: bool) -> int:
        with self._tx() as db:
            ids = [job.id for job in unique]
            existing: set[str] = set()
            done: set[str] = set()
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                existing.update(r[0] for r in db.execute(
                    f"SELECT id FROM jobs WHERE id IN ({marks})", chunk))
                if not replace:
                    done.update(r[0] for r in db.execute(
                        f"SELECT id FROM done WHERE id IN ({marks})", chunk))
            if replace:
                fresh = [job for job in unique if job.id not in existing]
                again = [job for job in unique if job.id in existing]
            else:
                fresh = [job for job in unique if job.id not in existing and job.id not in done]
                again = []
            depth = self._depth
            if depth + len(fresh) > self.max_jobs:
                raise QueueFull(len(fresh), depth, self.max_jobs)
            if replace:
                for chunk in _chunks(ids):
                    db.execute(f"DELETE FROM done WHERE id IN ({','.join('?' * len(chunk))})",
                               chunk)
            db.executemany(
                "INSERT INTO jobs (id, scorer_id, run_json, trace_id, span_id, agent, "
                "run_ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(j.id, j.scorer_id, j.run_json, j.trace_id, j.span_id, j.agent, j.run_ended_at)
                 for j in fresh])
            # A replaced job is scored again from scratch. One in flight keeps its lease; `rerun`
            # makes its holder's store_result/ack a no-op that only hands it back.
            db.executemany(
                "UPDATE jobs SET scorer_id=?, run_json=?, trace_id=?, span_id=?, agent=?, "
                "run_ended_at=?, scored=0, result_json=NULL, confirmed='[]', not_before=0, "
                "rerun=leased WHERE id=?",
                [(j.scorer_id, j.run_json, j.trace_id, j.span_id, j.agent, j.run_ended_at, j.id)
                 for j in again])
        self._depth = depth + len(fresh)
        return len(fresh) + len(again)

    def _claim(self, scored: int, limit: int, now: float) -> list[Job]:
        if limit <= 0:
            return []
        with self._tx() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE scored=? AND leased=0 AND not_before<=? "
                "ORDER BY seq LIMIT ?", (scored, now, limit)).fetchall()
            if not rows:
                return []
            ids = [str(r[0]) for r in rows]
            db.execute(f"UPDATE jobs SET leased=1, attempts=attempts+1 WHERE id IN "
                       f"({','.join('?' * len(ids))})", ids)
        return [replace(_row_job(r), attempts=int(r[7]) + 1) for r in rows]

    def claim_unscored(self, limit: int, now: float) -> list[Job]:
        """See `JobQueue.claim_unscored`."""
        return self._claim(0, limit, now)

    def claim_scored(self, limit: int, now: float) -> list[Job]:
        """See `JobQueue.claim_scored`."""
        return self._claim(1, limit, now)

    def store_result(self, job_id: str, record_json: str) -> None:
        """See `JobQueue.store_result`."""
        self.store_results([(job_id, record_json)])

    def store_results(self, results: Sequence[tuple[str, str]]) -> None:
        """See `JobQueue.store_results`."""
        # A job replaced while it ran (`rerun`) keeps no result: it is handed back unscored.
        if not results:
            return
        with self._tx() as db:
            db.executemany(
                "UPDATE jobs SET scored=1-rerun, result_json=CASE rerun WHEN 0 THEN ? END, "
                "leased=0, not_before=0, confirmed='[]', rerun=0 WHERE id=?",
                [(record_json, job_id) for job_id, record_json in results])

    def confirm(self, job_ids: Sequence[str], sink: str) -> None:
        """See `JobQueue.confirm`."""
        if not job_ids:
            return
        with self._tx() as db:
            for chunk in _chunks(job_ids):
                rows = db.execute(f"SELECT id, confirmed FROM jobs WHERE id IN "
                                  f"({','.join('?' * len(chunk))})", chunk).fetchall()
                updates = []
                for job_id, confirmed in rows:
                    names = set(json.loads(confirmed))
                    if sink not in names:
                        names.add(sink)
                        updates.append((json.dumps(sorted(names)), job_id))
                db.executemany("UPDATE jobs SET confirmed=? WHERE id=?", updates)

    def ack(self, job_ids: Sequence[str]) -> None:
        """See `JobQueue.ack`."""
        if not job_ids:
            return
        with self._tx() as db:
            deleted: list[str] = []
            for chunk in _chunks(job_ids):
                marks = ",".join("?" * len(chunk))
                deleted.extend(r[0] for r in db.execute(
                    f"DELETE FROM jobs WHERE id IN ({marks}) AND rerun=0 RETURNING id", chunk))
                db.execute(f"UPDATE jobs SET rerun=0, leased=0 WHERE id IN ({marks}) "
                           "AND rerun=1", chunk)
            db.executemany("INSERT OR REPLACE INTO done (id) VALUES (?)",
                           [(i,) for i in deleted])
            self._acks_since_prune += len(deleted)
            if self._acks_since_prune >= max(1, self._done_retention // 10):
                self._acks_since_prune = 0
                db.execute("DELETE FROM done WHERE seq <= (SELECT MAX(seq) FROM done) - ?",
                           (self._done_retention,))
        self._depth -= len(deleted)

    def retry_later(self, job_id: str, not_before: float) -> None:
        """See `JobQueue.retry_later`."""
        with self._tx() as db:
            db.execute("UPDATE jobs SET leased=0, not_before=CASE rerun WHEN 0 THEN ? ELSE 0 "
                       "END, rerun=0 WHERE id=?", (not_before, job_id))

    def release(self, job_ids: Sequence[str]) -> None:
        """See `JobQueue.release`."""
        if not job_ids:
            return
        with self._tx() as db:
            for chunk in _chunks(job_ids):
                db.execute(f"UPDATE jobs SET leased=0, rerun=0 WHERE id IN "
                           f"({','.join('?' * len(chunk))})", chunk)

    def recover(self) -> int:
        """See `JobQueue.recover`."""
        with self._tx() as db:
            return db.execute("UPDATE jobs SET leased=0, rerun=0 WHERE leased=1").rowcount

    def depth(self) -> int:
        """See `JobQueue.depth`."""
        return self._depth

    def writable(self) -> bool:
        """See `JobQueue.writable`: no write failed since the last one that succeeded (after a
        failure, a real write is tried again: an empty transaction writes nothing)."""
        return self.storage_error is None

    @property
    def storage_error(self) -> str | None:
        """The last write error, until a write succeeds again (for `/readyz` and the
        receivers' capacity check). While set, a probe write is tried at most once a second,
        so the error clears once space returns even when nothing else writes."""
        if self._error is not None and time.monotonic() - self._probed >= 1.0:
            self._probed = time.monotonic()
            try:
                with self._tx() as db:
                    db.execute("CREATE TABLE IF NOT EXISTS probe (n INTEGER)")
                    db.execute("DELETE FROM probe")
                    db.execute("INSERT INTO probe VALUES (1)")
            except sqlite3.Error:
                pass
        return self._error

    def is_done(self, job_id: str) -> bool:
        """Whether `job_id` was acknowledged recently (within the done retention)."""
        row = self._db.execute("SELECT 1 FROM done WHERE id=?", (job_id,)).fetchone()
        return row is not None

    def get(self, job_id: str) -> Job | None:
        """The queued job `job_id`, or None."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
        return _row_job(row) if row is not None else None

    def close(self) -> None:
        """See `JobQueue.close`."""
        self._db.close()


class _Tx:
    """`BEGIN IMMEDIATE` … `COMMIT` (or `ROLLBACK` on an exception).

    A storage error (disk full, read-only, I/O) is noted on the queue (`storage_error`) and
    re-raised; a transaction a failed `COMMIT` left open is rolled back, so the connection
    takes the next transaction once the storage is writable again.
    """

    def __init__(self, db: sqlite3.Connection, queue: SqliteQueue) -> None:
        self._db = db
        self._queue = queue
        self._changes = 0

    def __enter__(self) -> sqlite3.Connection:
        self._changes = self._db.total_changes
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._queue._write_failed(exc)
            raise
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self._db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
        except sqlite3.Error as error:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            self._queue._write_failed(error)
            raise
        if isinstance(exc, sqlite3.Error):
            self._queue._write_failed(exc)
        elif exc_type is None and self._db.total_changes != self._changes:
            self._queue._write_ok()  # (an empty transaction proves nothing: it writes nothing)


# ---------------------------------------------------------------------------- memory


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
