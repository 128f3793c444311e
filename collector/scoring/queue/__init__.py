"""The job queue: one job per (run, scorer) until every sink confirmed its record (SQLite, or
memory for tests)."""

from collector.scoring.queue._job import (
    DEFAULT_DONE_RETENTION,
    Job,
    JobQueue,
    LiveCache,
    QueueFull,
    QueueUnwritable,
    job_for,
)
from collector.scoring.queue._memory import MemoryQueue
from collector.scoring.queue._sqlite import SqliteQueue

__all__ = ["DEFAULT_DONE_RETENTION", "Job", "JobQueue", "LiveCache", "MemoryQueue", "QueueFull", "QueueUnwritable", "SqliteQueue", "job_for"]
