"""Run building off the event loop (DESIGN §5, "heavy Python work may move to worker
processes"): ready traces → `build_runs` → job plans, in worker processes or a thread.

Turning a trace into runs is the heaviest pure-Python step of the data path. In a worker
process it runs on another core while the event loop keeps receiving and scoring; only the
trace's spans go there (pickled) and only the planned jobs come back (their runs as the JSON
the queue stores anyway). With `processes=0` it runs in a thread of this process instead (the
event loop still answers in between: the GIL switches every few milliseconds).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from collector.scoring._select import JobPlan, Selection, plan_jobs
from scorers import ScorerRun
from transforms import Reason, Trace, build_runs

__all__ = ["BuildPool", "TracePlan", "build_plan", "default_processes"]

log = logging.getLogger("scorecar.build")


@dataclass(slots=True)
class TracePlan:
    """What one ready trace gives: the jobs of its runs and the builder's reason counts."""

    plan: JobPlan
    reasons: Counter[str] = field(default_factory=Counter)
    runs: int = 0


def build_plan(trace: Trace, roots: frozenset[str] | None, chosen: Sequence[Selection],
               keep_runs: bool) -> TracePlan:
    """Build `trace`'s runs (only those rooted in `roots`, when given) and plan their jobs."""
    built = build_runs(trace)
    runs: list[ScorerRun] = built.runs
    if roots is not None:  # a rebuild after late spans: only the runs they touched
        runs = [r for r in runs if r.target is not None and r.target.span_id in roots]
    return TracePlan(plan_jobs(runs, chosen, keep_runs=keep_runs),
                     Counter({str(k): v for k, v in built.reasons.items()}), len(runs))


def _build_one(trace: Trace, roots: frozenset[str] | None, chosen: Sequence[Selection],
               keep_runs: bool) -> TracePlan:
    try:
        return build_plan(trace, roots, chosen, keep_runs)
    except Exception:  # noqa: BLE001 - one trace that cannot be built never costs the others
        log.exception("trace %s could not be turned into runs; counted build_error",
                      trace.trace_id)
        return TracePlan(JobPlan(runs=[] if keep_runs else None),
                         Counter({str(Reason.BUILD_ERROR): 1}))


def _build_many(items: list[tuple[Trace, frozenset[str] | None]], chosen: list[Selection],
                keep_runs: bool) -> list[TracePlan]:
    return [_build_one(trace, roots, chosen, keep_runs) for trace, roots in items]


def _exit_with_parent(parent: int) -> None:
    """In a build process: exit as soon as the sidecar that started it is gone (a `kill -9`
    of the sidecar must not leave its build processes behind)."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="scorecar-parent-watch", daemon=True).start()


def default_processes() -> int:
    """Build processes when the machine has cores to spare: two cores stay with the main
    process (event loop, gRPC threads, scoring); up to four more build.

    On two cores a build process measured no faster than the thread (its pickling costs the
    main process what the build saves it), so there the thread is the default.
    """
    return max(0, min(4, (os.cpu_count() or 1) - 2))


class BuildPool:
    """Builds job plans for ready traces.

    Args:
        chosen: each scorer's filter and sampling.
        processes: worker processes (0: a thread of this process).
    """

    def __init__(self, chosen: Sequence[Selection], *, processes: int = 0) -> None:
        self.chosen = list(chosen)
        self.processes = processes
        self._executor: Executor | None = None

    def start(self) -> None:
        """Start the worker processes (spawned: a fork of a process with gRPC threads is
        unsafe). Idempotent; a no-op with `processes=0`."""
        if self.processes > 0 and self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent, initargs=(os.getpid(),))

    async def build(self, items: Sequence[tuple[Trace, frozenset[str] | None]]
                    ) -> list[TracePlan]:
        """The plan of every item, in order."""
        if not items:
            return []
        batch = list(items)
        if self._executor is None:
            return await asyncio.to_thread(_build_many, batch, self.chosen, True)
        loop = asyncio.get_running_loop()
        n = self.processes
        size = -(-len(batch) // n)
        chunks = [batch[i:i + size] for i in range(0, len(batch), size)]
        try:
            parts = await asyncio.gather(*(
                loop.run_in_executor(self._executor, _build_many, chunk, self.chosen, False)
                for chunk in chunks))
        except BrokenProcessPool:
            # A worker died (killed, out of memory): build here this time, and start afresh.
            log.error("a run-building process died; building in this process and restarting "
                      "the pool")
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            self.start()
            return await asyncio.to_thread(_build_many, batch, self.chosen, True)
        return [plan for part in parts for plan in part]

    def close(self) -> None:
        """Stop the worker processes (idempotent)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
