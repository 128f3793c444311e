"""Run building in worker processes gives exactly what building in this process gives, and the
processes never outlive the sidecar."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from collector.otlp import read_otlp_file
from collector.scoring import BuildPool, RunFilter, Selection
from scorers.sampling import NoSampling, RatioSampling
from transforms import group_traces

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))
CHOSEN = [Selection("all", RunFilter(), NoSampling()),
          Selection("half", RunFilter(), RatioSampling(rate=0.5)),
          Selection("mastra_only", RunFilter(conventions=("mastra",)), NoSampling())]


def _traces() -> list:
    spans, logs = [], []
    for f in CAPTURES:
        d = read_otlp_file(f)
        spans += d.spans
        logs += d.logs
    return list(group_traces(spans, logs).values())


async def test_processes_plan_the_same_jobs_as_the_thread() -> None:
    traces = _traces()
    items = [(t, None) for t in traces]
    in_thread = BuildPool(CHOSEN, processes=0)
    in_processes = BuildPool(CHOSEN, processes=2)
    in_processes.start()
    try:
        a = await in_thread.build(items)
        b = await in_processes.build(items)
    finally:
        in_processes.close()
    assert len(a) == len(b) == len(traces)
    assert sum(p.runs for p in a) > 100
    for x, y in zip(a, b):
        assert [(j.id, j.scorer_id, j.run_json) for j in x.plan.jobs] == \
            [(j.id, j.scorer_id, j.run_json) for j in y.plan.jobs]
        assert x.plan.conventions == y.plan.conventions
        assert x.plan.skipped == y.plan.skipped
        assert x.reasons == y.reasons
        assert x.plan.runs is not None and len(x.plan.runs) == len(x.plan.jobs)
        assert y.plan.runs is None  # runs stay in the build process; workers read the JSON
    # the filter and sampling really selected
    skipped = sum((p.plan.skipped for p in a), start=__import__("collections").Counter())
    assert skipped["half", "sampled_out"] > 0 and skipped["mastra_only", "filtered"] > 0


def test_build_processes_exit_when_the_sidecar_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(ROOT)!r})
        from collector.scoring import BuildPool

        async def main():
            pool = BuildPool([], processes=2)
            pool.start()
            # make sure both processes run, then wait to be killed
            await asyncio.gather(*(asyncio.get_running_loop().run_in_executor(
                pool._executor, abs, i) for i in range(8)))
            print("ready", flush=True)
            await asyncio.sleep(3600)

        if __name__ == "__main__":  # spawned processes import this module again
            asyncio.run(main())
    """))
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        children = subprocess.run(["pgrep", "-P", str(owner.pid)], capture_output=True,
                                  text=True).stdout.split()
        assert len(children) >= 2  # the build processes (and multiprocessing's tracker)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 10
        alive = children
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [c for c in children if Path(f"/proc/{c}").exists()
                     and "zombie" not in Path(f"/proc/{c}/status").read_text().lower()]
        assert not alive, f"build processes outlived the sidecar: {alive}"
    finally:
        if owner.poll() is None:
            owner.kill()


async def test_a_trace_that_cannot_be_built_never_costs_the_others(monkeypatch) -> None:
    import collector.scoring._build as bp

    traces = _traces()[:3]
    real = bp.build_plan

    def flaky(trace, roots, chosen, keep_runs, late=False,  # type: ignore[no-untyped-def]
              previous=None):
        if trace is traces[1]:
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return real(trace, roots, chosen, keep_runs, late, previous)

    monkeypatch.setattr(bp, "build_plan", flaky)
    plans = await BuildPool(CHOSEN, processes=0).build([(t, None) for t in traces])
    assert [p.reasons.get("build_error", 0) for p in plans] == [0, 1, 0]
    assert plans[1].plan.jobs == [] and plans[0].plan.jobs and plans[2].plan.jobs


async def test_lifecycle_start_twice_close_twice_close_without_start() -> None:
    never_started = BuildPool([], processes=1)
    never_started.close()  # without start: nothing to stop
    never_started.close()
    pool = BuildPool([], processes=1)
    pool.start()
    pool.start()  # idempotent: one executor
    executor = pool._executor  # noqa: SLF001 - the pool's processes are what start/close manage
    assert executor is not None
    pool.close()
    pool.close()
    assert pool._executor is None  # noqa: SLF001
    with pytest.raises(RuntimeError):  # the processes are gone: it takes no more work
        executor.submit(int)
    # closed, it still builds, in this process
    assert await pool.build([]) == []
