"""The job queue in one SQLite file (`storage.kind: sqlite`).

WAL, `synchronous=NORMAL`: a `kill -9` loses nothing that was committed; a power cut may lose the
last moments. It uses one connection from the event-loop thread; every call is one short
transaction (`_Tx`), and a storage error is noted on the queue so `/readyz` and the receivers
can see it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from collector.scoring.queue._job import DEFAULT_DONE_RETENTION, Job, QueueFull, QueueUnwritable

__all__ = ["SqliteQueue"]

log = logging.getLogger(__name__)

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
