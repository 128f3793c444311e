"""The job queue: one job per (run, scorer) until every sink confirmed its record (SQLite, or
memory for tests)."""

from collector.scoring.queue._queue import (
    DEFAULT_DONE_RETENTION,
    Job,
    JobQueue,
    LiveCache,
    MemoryQueue,
    QueueFull,
    QueueUnwritable,
    SqliteQueue,
    job_for,
)

__all__ = ["DEFAULT_DONE_RETENTION", "Job", "JobQueue", "LiveCache", "MemoryQueue", "QueueFull", "QueueUnwritable", "SqliteQueue", "job_for"]
