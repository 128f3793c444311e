"""Export with acknowledgement (DESIGN §5): stored score records go in batches to every sink
that has not confirmed them yet; a failing sink is retried with jittered, capped exponential
backoff, and a job is acknowledged (deleted) once every sink confirmed it.

Metrics observed here: `export{exporter,outcome}`, `score_lag` and `queue_depth`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from collector._retry import capped_backoff, jitter
from collector._telemetry import Metrics
from collector.scoring._leases import Leases
from collector.scoring.queue import Job, JobQueue, LiveCache
from exporters.sink import ScoreSink
from scorers.errors import ExportError
from scorers.types import ScoreRecord

__all__ = ["ExportLoop"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _SinkState:
    failures: int = 0
    next_try: float = 0.0


SendOutcome = Literal["ok", "dropped", "retry", "skipped"]


class ExportLoop:
    """Sends stored records to the sinks and acknowledges what every sink confirmed.

    Args:
        queue: the job queue (its scored jobs are exported).
        sinks: every enabled exporter; a job is acknowledged once all of them confirmed it.
        metrics: see the module docstring.
        live: records this process stored, so it need not parse their JSON back.
        leases: where leases the storage refused to hand back wait (shared with the workers).
        batch: records per `export()` call.
        backoff_initial: first wait, seconds, after a sink failed with a retryable error.
        backoff_max: cap of that wait (it doubles per failure, jittered down to half).
        poll_interval: how often the idle loop looks at the queue without being woken.
        clock: wall clock, Unix seconds (score lag, backoff deadlines).
        busy: after a stop was asked, the loop keeps going while this is true (the workers
            still run jobs whose records are to come).
    """

    def __init__(self, queue: JobQueue, sinks: Sequence[ScoreSink], metrics: Metrics, *,
                 live: LiveCache | None = None, leases: Leases | None = None,
                 batch: int = 100, backoff_initial: float = 1.0, backoff_max: float = 60.0,
                 poll_interval: float = 0.25, clock: Callable[[], float] = time.time,
                 busy: Callable[[], bool] = lambda: False) -> None:
        if batch < 1:
            raise ValueError("the export batch must be at least 1")
        names = [sink.name for sink in sinks]
        if len(set(names)) != len(names):
            raise ValueError(f"sink names must be distinct: {names}")
        self.queue = queue
        self.sinks = list(sinks)
        self.metrics = metrics
        self.live = live if live is not None else LiveCache()
        self.leases = leases if leases is not None else Leases(queue)
        self.batch = batch
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.poll_interval = poll_interval
        self.clock = clock
        self._busy = busy
        self._sink_state = {sink.name: _SinkState() for sink in self.sinks}
        self._drops_reported: set[tuple[str, str]] = set()
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the loop (in the running event loop)."""
        if self._task is not None:
            raise RuntimeError("the export loop is already running")
        self._stopping = False
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._loop(), name="scorecar-export")

    def wake(self) -> None:
        """Records were stored: export them now rather than at the next poll."""
        if self._wake is not None:
            self._wake.set()

    def finish(self) -> None:
        """Let the loop end once nothing is left to export and nothing is `busy`."""
        self._stopping = True

    async def stop(self, timeout: float = 10.0) -> None:
        """Export what is stored within `timeout` seconds, then end the loop (cancelled if it
        is still sending then: unconfirmed records stay stored for the next start). Safe
        without `start()` and when stopped already."""
        self.finish()
        task = self._task
        if task is None:
            return
        self.wake()
        try:
            await asyncio.wait_for(asyncio.shield(task), max(0.0, timeout))
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._task = None

    # ------------------------------------------------------------------ export

    def _set_depth(self) -> None:
        self.metrics.queue_depth.set(self.queue.depth())

    async def _loop(self) -> None:
        assert self._wake is not None
        wake = self._wake
        while True:
            wake.clear()
            try:
                self.leases.release_pending()
                handled = await self.export_once()
            except Exception as exc:  # e.g. the disk is full: keep the loop alive, try again
                self.leases.faulted("exporting score records", exc)
                handled = 0
            if handled:
                continue
            if self._stopping and not self._busy():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), self.poll_interval)

    async def export_once(self) -> int:
        """Export one batch of stored records; return how many jobs were handled."""
        now = self.clock()
        jobs = self.queue.claim_scored(self.batch, now)
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
            self.leases.release([job.id for job in jobs if job.id not in handled])
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
            delay = capped_backoff(state.failures - 1, initial=self.backoff_initial,
                                   maximum=self.backoff_max, factor=2, max_exponent=30)
            state.next_try = self.clock() + jitter(delay)
            self.metrics.export.labels(sink.name, "retry").inc(len(ids))
            log.warning("exporter %s failed (%s); retrying %d records in about %.1f s",
                        sink.name, exc, len(ids), delay)
            return sink.name, []
        state.failures = 0
        state.next_try = 0.0
        self.metrics.export.labels(sink.name, "ok").inc(len(ids))
        self.queue.confirm(ids, sink.name)
        return sink.name, ids
