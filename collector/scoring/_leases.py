"""Leases handed back to the queue, and the queue's faults said once — shared by the worker
pool's claim loop and its export loop.

When the queue's storage refuses a write (the disk is full, the volume read-only), both loops
keep running: leases the queue could not hand back are kept here and handed back once it can
write again, and the fault is logged once (not at every poll) until a write succeeds.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence

from collector.scoring.queue import JobQueue

__all__ = ["Leases"]

log = logging.getLogger(__name__)


class Leases:
    """Hands leases back to `queue`, keeping those its storage refuses.

    Args:
        queue: the job queue.
    """

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        # Leases the queue could not hand back (its storage refused the write): handed back
        # once it can write again.
        self._unreleased: set[str] = set()
        self._fault: str | None = None

    def release(self, job_ids: Sequence[str]) -> None:
        """Hand leases back; those the storage refuses are handed back once it can write."""
        try:
            self.queue.release(job_ids)
        except Exception as exc:  # noqa: BLE001 - e.g. the disk is full
            self.faulted("handing jobs back", exc)
            self._unreleased.update(job_ids)

    def hold(self, job_id: str) -> None:
        """Keep a lease the storage refused to hand back, for `release_pending`."""
        self._unreleased.add(job_id)

    def release_pending(self) -> None:
        """Hand back the leases kept so far (raises if the storage still refuses)."""
        if self._unreleased:
            ids = sorted(self._unreleased)
            self.queue.release(ids)
            self._unreleased.difference_update(ids)

    def faulted(self, doing: str, exc: Exception) -> None:
        """Log a queue fault once (not at every poll), until `recovered`."""
        message = f"{type(exc).__name__}: {exc}"
        if message != self._fault:
            log.error("%s failed (%s); retrying until the queue can write again", doing, message,
                      exc_info=not isinstance(exc, sqlite3.Error))
            self._fault = message

    def recovered(self) -> None:
        """A queue call succeeded: say so once, if a fault was logged."""
        if self._fault is not None:
            log.warning("the job queue works again; scoring and export resume")
            self._fault = None
