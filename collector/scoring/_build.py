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
import hashlib
import logging
import multiprocessing
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from collector.scoring._select import JobPlan, Selection, plan_jobs
from scorers import ScorerRun
from transforms import Reason, Trace, build_runs

__all__ = ["BuildPool", "TracePlan", "build_plan", "default_processes", "run_digest"]

log = logging.getLogger("scorecar.build")


@dataclass(slots=True)
class TracePlan:
    """What one ready trace gives: the jobs of its runs and the builder's reason counts.

    Attributes:
        plan: the jobs to queue and what to count.
        reasons: the builder's reason counts (`rescored`: runs rebuilt after late pieces that
            differ from the runs handed over before, queued again under the same score ids).
        runs: runs planned (new and rescored; rebuilt runs that came out unchanged are not).
        digests: agent span id → digest of each run built (rebuilds compare against them).
        unchanged: rebuilt runs identical to the ones handed over before (not queued again).
    """

    plan: JobPlan
    reasons: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    digests: dict[str, str] = field(default_factory=dict)
    unchanged: int = 0


Previous = Mapping[str, str] | None
"""The digests of a trace's runs when they were handed over before (agent span id → digest);
None: not known (never handed over, or forgotten since)."""


def run_digest(run: ScorerRun) -> str:
    """A digest of everything a scorer can see of `run` (its JSON): two builds of the same
    run from the same pieces give the same digest."""
    return hashlib.blake2b(run.model_dump_json(by_alias=True).encode(), digest_size=16).hexdigest()


def build_plan(trace: Trace, roots: frozenset[str] | None, chosen: Sequence[Selection],
               keep_runs: bool, late: bool = False, previous: Previous = None) -> TracePlan:
    """Build `trace`'s runs (only those rooted in `roots`, when given) and plan their jobs.

    With `late` (a rebuild of runs handed over before, after late pieces), a run is queued
    again only when it differs from the run handed over (its digest in `previous`; every run
    when `previous` is not known), counted `rescored` and not counted as a new agent run; a run
    the rebuild did not change is left alone; a run new in the trace is planned like any other.
    """
    built = build_runs(trace)
    runs: list[ScorerRun] = built.runs
    if roots is not None:  # a rebuild after late spans: only the runs they touched
        runs = [r for r in runs if r.target is not None and r.target.span_id in roots]
    reasons = Counter({str(k): v for k, v in built.reasons.items()})
    digests = {r.target.span_id: run_digest(r) for r in runs
               if r.target is not None and r.target.span_id}
    if not late:
        return TracePlan(plan_jobs(runs, chosen, keep_runs=keep_runs), reasons, len(runs),
                         digests)
    fresh: list[ScorerRun] = []
    again: list[ScorerRun] = []
    unchanged = 0
    for run in runs:
        sid = (run.target.span_id if run.target is not None else None) or ""
        if previous is None:
            again.append(run)  # what was scored is not known any more: score it again
        elif sid not in previous:
            fresh.append(run)  # a run this trace did not have when it was handed over
        elif previous[sid] == digests.get(sid):
            unchanged += 1
        else:
            again.append(run)
    plan = plan_jobs(fresh, chosen, keep_runs=keep_runs)
    redo = plan_jobs(again, chosen, keep_runs=keep_runs)
    plan.jobs.extend(redo.jobs)  # counted as agent runs and skips when first handed over
    if plan.runs is not None and redo.runs is not None:
        plan.runs.extend(redo.runs)
    if again:
        reasons["rescored"] += len(again)
    return TracePlan(plan, reasons, len(fresh) + len(again), digests, unchanged)


def _build_one(trace: Trace, roots: frozenset[str] | None, chosen: Sequence[Selection],
               keep_runs: bool, late: bool = False, previous: Previous = None) -> TracePlan:
    try:
        return build_plan(trace, roots, chosen, keep_runs, late, previous)
    except Exception:  # noqa: BLE001 - one trace that cannot be built never costs the others
        log.exception("trace %s could not be turned into runs; counted build_error",
                      trace.trace_id)
        return TracePlan(JobPlan(runs=[] if keep_runs else None),
                         Counter({str(Reason.BUILD_ERROR): 1}))


BuildItem = (tuple[Trace, frozenset[str] | None]
             | tuple[Trace, frozenset[str] | None, bool, Previous])
"""(trace, roots) or (trace, roots, late, previous digests): see `build_plan`."""


def _build_many(items: list[BuildItem], chosen: list[Selection],
                keep_runs: bool) -> list[TracePlan]:
    return [_build_one(item[0], item[1], chosen, keep_runs, *item[2:]) for item in items]


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

    async def build(self, items: Sequence[BuildItem]) -> list[TracePlan]:
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
