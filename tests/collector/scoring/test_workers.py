"""Scheduling and the worker pool: what gets queued (and what is counted instead), scoring under
timeouts and judge limits, stored results, export retries, and kill -9 in the middle of it all."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from collector._telemetry import Metrics
from collector.scoring import (
    JobQueue,
    LimitedProvider,
    MemoryQueue,
    QueueFull,
    RunFilter,
    Scheduler,
    ScorerSpec,
    SqliteQueue,
    TokenBudget,
    WorkerPool,
    job_for,
)
from scorers import (
    Judge,
    PromptStep,
    RatioSampling,
    RunTarget,
    Scorer,
    ScorerRun,
    create_scorer,
)
from scorers.errors import ExportError
from scorers.judge import default_provider
from scorers.sampling import is_sampled
from scorers.types import run_id_for
from tests.fakes.fake_anthropic import FakeAnthropic, structured, unauthorized
from tests.fakes.metrics import sample
from tests.fakes.sinks import RecordingSink

ROOT = Path(__file__).resolve().parents[3]


def make_run(i: int, *, agent: str = "support", convention: str = "genai") -> ScorerRun:
    trace_id, span_id = f"{i + 1:032x}", f"{i + 1:016x}"
    return ScorerRun(run_id=run_id_for(trace_id, span_id),
                     input={"q": f"question {i}"}, output=[{"text": "answer"}],
                     target=RunTarget(trace_id=trace_id, span_id=span_id, entity_name=agent,
                                      convention=convention, ended_at=datetime.now(UTC)))


def const_scorer(scorer_id: str, value: float = 0.5) -> Scorer:
    return create_scorer(id=scorer_id, description="constant").generate_score(
        lambda run, results: value)


def judge_scorer(fake: FakeAnthropic, scorer_id: str = "judged") -> Scorer:
    judge = Judge(instructions="You rate answers.", base_url=fake.base_url, api_key=fake.api_key)
    return create_scorer(id=scorer_id, description="judge", judge=judge).generate_score(
        PromptStep(description="score", create_prompt=lambda run, results: "Rate it."))


async def run_pool(specs: list[ScorerSpec], runs: list[ScorerRun], sinks: list[Any], *,
                   queue: JobQueue | None = None, metrics: Metrics | None = None,
                   **pool_kw: Any) -> Metrics:
    metrics = metrics or Metrics()
    queue = queue or MemoryQueue()
    Scheduler(specs, queue, metrics).schedule(runs)
    pool = WorkerPool(specs, queue, sinks, metrics, poll_interval=0.02,
                      backoff_initial=0.01, backoff_max=0.05, **pool_kw)
    await pool.start()
    try:
        await pool.drain(timeout=20)
    finally:
        await pool.stop(grace=5)
    return metrics


# ------------------------------------------------------------------------ scheduling


def test_filter_and_sampling_decide_and_are_counted() -> None:
    metrics = Metrics()
    queue = MemoryQueue()
    sampling = RatioSampling(rate=0.5)
    specs = [ScorerSpec(const_scorer("all")),
             ScorerSpec(const_scorer("support_only"), filter=RunFilter(agents=("support",))),
             ScorerSpec(const_scorer("half"), sampling=sampling)]
    runs = [make_run(i, agent="support" if i % 2 else "billing",
                     convention="mastra" if i < 3 else "genai") for i in range(20)]
    queued = Scheduler(specs, queue, metrics).schedule(runs)
    sampled = sum(is_sampled(sampling, r.target.trace_id if r.target else None) for r in runs)
    assert 0 < sampled < 20
    assert queued == 20 + 10 + sampled == queue.depth()
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="support_only",
                  reason="filtered") == 10
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="half",
                  reason="sampled_out") == 20 - sampled
    assert sample(metrics, "scorecar_agent_runs_total", convention="mastra") == 3
    assert sample(metrics, "scorecar_agent_runs_total", convention="genai") == 17
    assert sample(metrics, "scorecar_queue_depth") == queued
    # the same runs again (a replayed trace): nothing new
    assert Scheduler(specs, queue, metrics).schedule(runs) == 0


def test_queue_full_refuses_new_jobs_and_counts_them(tmp_path: Path) -> None:
    metrics = Metrics()
    queue = SqliteQueue(tmp_path / "q.sqlite3", max_jobs=3)
    scheduler = Scheduler([ScorerSpec(const_scorer("a")), ScorerSpec(const_scorer("b"))],
                          queue, metrics)
    assert scheduler.schedule([make_run(0)]) == 2
    with pytest.raises(QueueFull):
        scheduler.schedule([make_run(1), make_run(2)])
    assert queue.depth() == 2
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="a", reason="queue_full") == 2
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="b", reason="queue_full") == 2
    queue.close()


# ------------------------------------------------------------------------ scoring


async def test_jobs_are_scored_stored_exported_and_acknowledged(tmp_path: Path) -> None:
    queue = SqliteQueue(tmp_path / "q.sqlite3")
    sinks = [RecordingSink("a"), RecordingSink("b")]
    specs = [ScorerSpec(const_scorer("half", 0.5)), ScorerSpec(const_scorer("one", 1.0))]
    metrics = await run_pool(specs, [make_run(i) for i in range(5)], sinks, queue=queue,
                             export_batch=3)
    for sink in sinks:
        assert len(sink.records) == 10
        assert {r.status for r in sink.records} == {"scored"}
        assert sorted({r.score for r in sink.records if r.score is not None}) == [0.5, 1.0]
        assert sample(metrics, "scorecar_export_total", exporter=sink.name, outcome="ok") == 10
    assert queue.depth() == 0
    assert sample(metrics, "scorecar_queue_depth") == 0
    assert sample(metrics, "scorecar_score_lag_seconds_count") == 10
    assert sample(metrics, "scorecar_scorer_duration_seconds_count", scorer="half") == 5
    # a re-delivered trace is not scored again
    assert Scheduler(specs, queue, metrics).schedule([make_run(0)]) == 0
    queue.close()


async def test_a_hanging_or_raising_scorer_fails_alone() -> None:
    async def hang(run: Any, results: Any) -> float:
        await asyncio.sleep(3600)
        return 1.0

    def boom(run: Any, results: Any) -> float:
        raise RuntimeError("scorer bug")

    specs = [ScorerSpec(create_scorer(id="hangs", description="").generate_score(hang),
                        timeout=0.2),
             ScorerSpec(create_scorer(id="raises", description="").generate_score(boom)),
             ScorerSpec(const_scorer("fine"))]
    sink = RecordingSink()
    metrics = await run_pool(specs, [make_run(0)], [sink])
    got = sink.by_scorer()
    assert got["fine"].status == "scored" and got["fine"].score == 0.5
    assert got["hangs"].status == "failed"
    assert got["hangs"].error is not None and "within 0.2 s" in got["hangs"].error.message
    assert got["raises"].status == "failed"
    assert got["raises"].error is not None and "scorer bug" in got["raises"].error.message
    assert got["raises"].error.step == "generate_score"
    assert sample(metrics, "scorecar_scorer_duration_seconds_count", scorer="hangs") == 1


async def test_a_job_of_a_scorer_no_longer_configured_fails_clearly() -> None:
    queue = MemoryQueue()
    queue.put_many([job_for(make_run(0), "removed_scorer")])
    sink = RecordingSink()
    await run_pool([ScorerSpec(const_scorer("other"))], [], [sink], queue=queue)
    (record,) = sink.records
    assert record.status == "failed" and record.scorer_id == "removed_scorer"
    assert record.error is not None and "not configured" in record.error.message


async def test_export_failure_is_retried_then_delivered_once_per_sink(tmp_path: Path) -> None:
    flaky = RecordingSink("flaky", errors=[ExportError("backend down"),
                                           ExportError("still down")])
    steady = RecordingSink("steady")
    queue = SqliteQueue(tmp_path / "q.sqlite3")
    metrics = await run_pool([ScorerSpec(const_scorer("s"))], [make_run(i) for i in range(4)],
                             [flaky, steady], queue=queue)
    assert len(flaky.records) == 4 and flaky.exports >= 3
    assert len(steady.records) == 4  # confirmed once, not sent again while the other retried
    assert sample(metrics, "scorecar_export_total", exporter="flaky", outcome="retry") >= 4
    assert sample(metrics, "scorecar_export_total", exporter="flaky", outcome="ok") == 4
    assert queue.depth() == 0
    queue.close()


async def test_non_retryable_export_error_is_dropped_and_counted() -> None:
    bad = RecordingSink("bad", errors=[ExportError("schema refused", retryable=False)])
    good = RecordingSink("good")
    queue = MemoryQueue()
    metrics = await run_pool([ScorerSpec(const_scorer("s"))], [make_run(0), make_run(1)],
                             [bad, good], queue=queue)
    assert bad.records == [] and bad.exports == 1
    assert len(good.records) == 2
    assert sample(metrics, "scorecar_export_total", exporter="bad", outcome="dropped") == 2
    assert queue.depth() == 0


async def test_stop_leaves_unfinished_jobs_queued_for_the_next_start(tmp_path: Path) -> None:
    async def slow(run: Any, results: Any) -> float:
        await asyncio.sleep(3600)
        return 1.0

    path = tmp_path / "q.sqlite3"
    queue = SqliteQueue(path)
    metrics = Metrics()
    slow_spec = ScorerSpec(create_scorer(id="s", description="").generate_score(slow))
    Scheduler([slow_spec], queue, metrics).schedule([make_run(0)])
    pool = WorkerPool([slow_spec], queue, [RecordingSink()], metrics, poll_interval=0.02)
    await pool.start()
    while not pool._running:  # noqa: SLF001 - wait until the job is in flight
        await asyncio.sleep(0.01)
    await pool.stop(grace=0.05)
    assert queue.depth() == 1
    queue.close()
    # next start (same id, a fast scorer now): the job runs and is delivered
    reopened = SqliteQueue(path)
    sink = RecordingSink()
    await run_pool([ScorerSpec(const_scorer("s", 0.25))], [], [sink], queue=reopened)
    assert [r.score for r in sink.records] == [0.25]
    reopened.close()


# ------------------------------------------------------------------------ judge scorers


async def test_judge_scorers_run_under_the_limited_provider(
        fake_anthropic: FakeAnthropic) -> None:
    metrics = Metrics()
    provider = LimitedProvider(default_provider(), max_concurrency=2, metrics=metrics)
    sink = RecordingSink()
    fake_anthropic.enqueue(*[structured({"score": s}) for s in (0.2, 0.5, 0.9)])
    await run_pool([ScorerSpec(judge_scorer(fake_anthropic))], [make_run(i) for i in range(3)],
                   [sink], metrics=metrics, provider=provider, budget=provider.budget)
    assert sorted(r.score or 0.0 for r in sink.records) == [0.2, 0.5, 0.9]  # one reply per job
    assert len(fake_anthropic.requests) == 3
    model = sink.records[0].judge["generate_score"].executions[0].judge_model_id
    assert sample(metrics, "scorecar_judge_requests_total", provider="anthropic", model=model,
                  outcome="ok") == 3
    assert provider.budget.used == 3 * (11 + 7)


async def test_over_the_daily_budget_judge_jobs_are_skipped_and_counted(
        fake_anthropic: FakeAnthropic) -> None:
    metrics = Metrics()
    budget = TokenBudget(10)
    budget.charge(10)
    sink = RecordingSink()
    specs = [ScorerSpec(judge_scorer(fake_anthropic)), ScorerSpec(const_scorer("code"))]
    provider = LimitedProvider(default_provider(), metrics=metrics, budget=budget)
    await run_pool(specs, [make_run(0), make_run(1)], [sink], metrics=metrics,
                   provider=provider, budget=budget)
    assert fake_anthropic.requests == []
    judged = [r for r in sink.records if r.scorer_id == "judged"]
    assert [r.status for r in judged] == ["skipped", "skipped"]
    assert judged[0].error is not None and judged[0].error.code == "daily_token_budget"
    assert [r.status for r in sink.records if r.scorer_id == "code"] == ["scored", "scored"]
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="judged",
                  reason="daily_token_budget") == 2


async def test_judge_401_fails_without_retry_and_is_reported_once(
        fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    fake_anthropic.enqueue(unauthorized(), unauthorized(), unauthorized())  # a retry: exhausted
    metrics = Metrics()
    provider = LimitedProvider(default_provider(), metrics=metrics)
    sink = RecordingSink()
    with caplog.at_level(logging.ERROR, logger="collector.scoring._score"):
        await run_pool([ScorerSpec(judge_scorer(fake_anthropic))],
                       [make_run(i) for i in range(3)], [sink], metrics=metrics,
                       provider=provider)
    assert [r.status for r in sink.records] == ["failed"] * 3
    assert len(fake_anthropic.requests) == 3  # one call per job, never retried
    reports = [r for r in caplog.records if "credentials" in r.getMessage()]
    assert len(reports) == 1
    assert fake_anthropic.api_key not in caplog.text
    model = sink.records[0].judge["generate_score"].executions[0].judge_model_id
    assert sample(metrics, "scorecar_judge_requests_total", provider="anthropic", model=model,
                  outcome="auth") == 3


# ------------------------------------------------------------------------ kill -9

CHILD = textwrap.dedent("""
    import asyncio, json, random, sys
    from datetime import UTC, datetime
    from pathlib import Path

    from collector.scoring import SqliteQueue
    from collector.scoring import ScorerSpec
    from collector.scoring import Scheduler, WorkerPool
    from collector._telemetry import Metrics
    from scorers import RunTarget, ScorerRun, create_scorer
    from scorers.types import run_id_for

    db, out, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])

    async def score(run, results):
        await asyncio.sleep(random.uniform(0, 0.003))
        return random.random()  # a re-run would give another value

    class FileSink:
        def __init__(self, name):
            self.name = name
        async def export(self, records):
            await asyncio.sleep(0.001)
            with (out / self.name).open("a") as f:
                for r in records:
                    f.write(json.dumps({"id": r.id, "score": r.score,
                                        "at": r.created_at.isoformat()}) + "\\n")
        async def shutdown(self):
            pass

    def run(i):
        t, s = f"{i + 1:032x}", f"{i + 1:016x}"
        return ScorerRun(run_id=run_id_for(t, s), input={"i": i},
                         target=RunTarget(trace_id=t, span_id=s, ended_at=datetime.now(UTC)))

    async def main():
        queue = SqliteQueue(db)
        spec = ScorerSpec(create_scorer(id="random", description="").generate_score(score))
        metrics = Metrics()
        Scheduler([spec], queue, metrics).schedule([run(i) for i in range(n)])  # a replay
        pool = WorkerPool([spec], queue, [FileSink("a"), FileSink("b")], metrics,
                          concurrency=8, export_batch=5, poll_interval=0.01)
        await pool.start()
        print("started", flush=True)
        await pool.drain(60)
        await pool.stop(5)
        print("drained", queue.depth(), flush=True)

    asyncio.run(main())
""")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_kill_9_while_scoring_and_exporting_loses_nothing_and_never_changes_a_score(
        tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = tmp_path / "out"
    out.mkdir()
    n = 300
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, str(script), str(tmp_path / "q.sqlite3"), str(out), str(n)]
    for kill_after in (40, 160):  # lines seen in sink a before the kill
        child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _lines(out / "a") < kill_after and child.poll() is None:
            assert time.monotonic() < deadline, "the child made no progress"
            time.sleep(0.002)
        child.send_signal(signal.SIGKILL)
        code = child.wait(timeout=30)
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()
        errors = child.stderr.read().decode(errors="replace")
        child.stderr.close()
        assert code == -signal.SIGKILL, f"the child ended by itself ({code}): {errors}"
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "drained 0" in done.stdout
    for sink in ("a", "b"):
        values: dict[str, set[tuple[float, str]]] = {}
        for line in (out / sink).read_text().splitlines():
            row = json.loads(line)
            values.setdefault(row["id"], set()).add((row["score"], row["at"]))
        assert len(values) == n, f"sink {sink}: {n - len(values)} score ids never delivered"
        changed = {k: v for k, v in values.items() if len(v) > 1}
        assert not changed, f"sink {sink}: score ids with two values: {changed}"
