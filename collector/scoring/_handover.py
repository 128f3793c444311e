"""The handover from assembled traces to queued jobs (DESIGN §5): a loop polls the assembly for
ready traces, builds their runs (`BuildPool`), and commits the job plans through the
`Scheduler` — one queue transaction for all of them. A trace's spans leave the write-ahead span
log (`ingest.release`) only once its jobs are queued.

Traces whose jobs the queue refuses (full) are held with their job plans and offered again on
later passes, without being built or counted again; their spans stay in the span log until then.

Re-scoring (DESIGN §3.3): the handover remembers a digest of every run it queued, for the
assembly's `max_traces` most recent traces. When late pieces rebuild a trace, only its runs that
came out different are queued again (same score ids, counted `rescored`); a rebuild that
changed nothing is not scored twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict

from collector._telemetry import Metrics
from collector.intake import Assembly, Ingest, ReadyTrace
from collector.scoring._build import BuildPool, TracePlan
from collector.scoring._schedule import Scheduler
from collector.scoring._select import JobPlan
from collector.scoring.queue import QueueFull

__all__ = ["Handover"]

log = logging.getLogger("scorecar")


class Handover:
    """Ready traces → job plans → queued jobs.

    Args:
        assembly: where ready traces come from.
        builder: builds each ready trace's job plan.
        scheduler: queues the plans' jobs (and counts them).
        ingest: releases a trace's spans from the span log once its jobs are queued.
        metrics: `build_reasons{reason}`.
    """

    def __init__(self, assembly: Assembly, builder: BuildPool, scheduler: Scheduler,
                 ingest: Ingest, metrics: Metrics, *, remember: int = 20_000) -> None:
        self.assembly = assembly
        self.builder = builder
        self.scheduler = scheduler
        self.ingest = ingest
        self.metrics = metrics
        self._deferred: list[tuple[ReadyTrace, TracePlan]] = []
        # trace id → {agent span id → run digest} of the runs queued, most recent last
        self._digests: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._remember_traces = remember
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the loop (in the running event loop). Idempotent."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="scorecar-assembly")

    def wake(self) -> None:
        """Look at the assembly now rather than at its next deadline (e.g. after a replay)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop the loop (traces still buffered stay in the assembly and the span log). Safe
        without `start()` and when stopped already."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def held(self) -> int:
        """Traces held because the queue had no room for their jobs."""
        return len(self._deferred)

    # ------------------------------------------------------------------ the loop

    async def _loop(self) -> None:
        while True:
            deadline = self.assembly.next_deadline()
            timeout = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=min(timeout, 0.5))
            try:
                await self.schedule_ready()
            except Exception:  # noqa: BLE001 - the loop must survive anything one trace does
                log.exception("scheduling failed; will retry")

    async def schedule_ready(self, ready: list[ReadyTrace] | None = None) -> int:
        """Turn every ready trace into jobs now (one queue transaction for all of them);
        returns the number of runs scheduled.

        Traces whose jobs the queue refused (full) are held with their job plans and offered
        again on later passes, without being built or counted again; their spans stay in the
        write-ahead log until then.
        """
        held, self._deferred = self._deferred, []
        new = self.assembly.poll() if ready is None else ready
        if not held and not new:
            return 0
        plans = await self.builder.build([
            (r.trace, r.roots, r.late, self._previous(r)) for r in new])
        built = list(zip(new, plans))
        for _, tp in built:
            for reason, n in tp.reasons.items():
                self.metrics.build_reasons.labels(reason).inc(n)
        count = self._commit_each(held, count_refusal=False) if held else 0
        if self._deferred:  # the queue is still full: the new traces go one by one
            return count + self._commit_each(built, count_refusal=True)
        fresh, late = JobPlan(), JobPlan()
        for item, tp in built:
            (late if item.late else fresh).extend(tp.plan)
        fresh_queued = False  # (put_many is all or nothing)
        try:
            self.scheduler.commit(fresh, count_refusal=False)
            fresh_queued = True
            self.scheduler.commit(late, rescore=True, count_refusal=False)
        except QueueFull:  # near full: queue what fits, trace by trace
            rest = built
            if fresh_queued:
                for item, tp in built:
                    if not item.late:
                        self._queued(item, tp)
                        count += tp.runs
                rest = [(i, tp) for i, tp in built if i.late]
            return count + self._commit_each(rest, count_refusal=True)
        for item, tp in built:
            self._queued(item, tp)
            count += tp.runs
        return count

    def _previous(self, item: ReadyTrace) -> dict[str, str] | None:
        """The digests of `item`'s runs when queued before (a late rebuild), None if unknown."""
        known = self._digests.get(item.trace.trace_id) if item.late else None
        return dict(known) if known is not None else None

    def _queued(self, item: ReadyTrace, tp: TracePlan) -> None:
        """`item`'s jobs are queued: release its spans, remember its runs' digests."""
        self.ingest.release(item)
        tid = item.trace.trace_id
        known = self._digests.pop(tid, {})
        known.update(tp.digests)
        self._digests[tid] = known
        while len(self._digests) > self._remember_traces:
            self._digests.popitem(last=False)

    def _commit_each(self, built: list[tuple[ReadyTrace, TracePlan]], *,
                     count_refusal: bool) -> int:
        """Queue trace by trace; hold the traces the queue has no room for."""
        count = 0
        for item, tp in built:
            try:
                self.scheduler.commit(tp.plan, rescore=item.late, count_refusal=count_refusal)
            except QueueFull:
                self._deferred.append((item, tp))
                continue
            self._queued(item, tp)
            count += tp.runs
        return count

    async def drain(self, timeout: float = 60.0) -> bool:
        """Wait until nothing is buffered and the queue is empty (for `demo`, `score` and
        tests). Buffered traces are handed over at once, without waiting for readiness."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            await self.schedule_ready(self.assembly.flush())
            if self.ingest.backlog == 0 and self.assembly.pending_traces == 0 and \
                    not self._deferred and self.scheduler.queue.depth() == 0:
                return True
            await asyncio.sleep(0.05)
        return False
