"""Lifecycle of the scoring components (start, stop, stop twice, stop without start): the
`WorkerPool`, its `ExportLoop` and the `Handover` — each judged by what it does to the queue and
the sinks, not by its flags."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from collector._telemetry import Metrics
from collector.intake import Assembly, Ingest, open_spanlog
from collector.scoring import (
    BuildPool,
    ExportLoop,
    Handover,
    MemoryQueue,
    Scheduler,
    ScorerSpec,
    WorkerPool,
    job_for,
)
from scorers import RunTarget, Scorer, ScoreRecord, ScorerRun, create_scorer
from scorers.records import skipped_record
from scorers.types import run_id_for
from transforms import Span

POLL = 0.02


def make_run(i: int) -> ScorerRun:
    trace_id, span_id = f"{i + 1:032x}", f"{i + 1:016x}"
    return ScorerRun(run_id=run_id_for(trace_id, span_id), input={"q": f"question {i}"},
                     output=[{"text": "answer"}],
                     target=RunTarget(trace_id=trace_id, span_id=span_id, entity_name="support"))


def const_scorer(scorer_id: str = "const") -> Scorer:
    return create_scorer(id=scorer_id, description="constant").generate_score(
        lambda run, results: 0.5)


class RecordingSink:
    def __init__(self, name: str = "rec") -> None:
        self.name = name
        self.records: list[ScoreRecord] = []

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        self.records.extend(records)

    async def shutdown(self) -> None:
        pass


async def settle() -> None:
    """Long enough for any loop still running to poll several times."""
    await asyncio.sleep(POLL * 10)


# ------------------------------------------------------------------------ WorkerPool


def make_pool(queue: MemoryQueue, sink: RecordingSink) -> WorkerPool:
    return WorkerPool([ScorerSpec(const_scorer())], queue, [sink], Metrics(),
                      poll_interval=POLL, backoff_initial=0.01, backoff_max=0.05)


async def test_worker_pool_stop_without_start_returns_and_leaves_the_queue_usable() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    pool = make_pool(queue, sink)
    await pool.stop()
    await pool.stop()
    assert queue.put_many([job_for(make_run(0), "const")]) == 1
    await settle()
    assert sink.records == []
    [claimed] = queue.claim_unscored(10, 0.0)  # nothing leased it meanwhile
    assert claimed.scorer_id == "const"


async def test_worker_pool_scores_while_running_and_claims_nothing_after_stop() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    pool = make_pool(queue, sink)
    queue.put_many([job_for(make_run(0), "const")])
    await pool.start()
    with pytest.raises(RuntimeError):
        await pool.start()
    await pool.drain(timeout=10)
    assert [r.score for r in sink.records] == [0.5]
    await pool.stop(grace=5)
    await pool.stop(grace=5)  # twice: a no-op
    queue.put_many([job_for(make_run(1), "const")])
    pool.notify()
    await settle()
    assert len(sink.records) == 1
    assert queue.depth() == 1
    assert [j.scorer_id for j in queue.claim_unscored(10, 0.0)] == ["const"]  # not leased


async def test_worker_pool_starts_again_after_stop() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    pool = make_pool(queue, sink)
    await pool.start()
    await pool.stop(grace=5)
    queue.put_many([job_for(make_run(0), "const")])
    await pool.start()
    await pool.drain(timeout=10)
    await pool.stop(grace=5)
    assert len(sink.records) == 1 and queue.depth() == 0


# ------------------------------------------------------------------------ ExportLoop


def store_scored(queue: MemoryQueue, i: int) -> str:
    """Queue a job and store its record, as a worker does; returns the job id."""
    run = make_run(i)
    queue.put_many([job_for(run, "const")])
    [job] = queue.claim_unscored(1, 0.0)
    record = skipped_record(const_scorer(), run, "shed", source="TEST")
    queue.store_result(job.id, record.model_dump_json(by_alias=True))
    return job.id


def make_export(queue: MemoryQueue, sink: RecordingSink) -> ExportLoop:
    return ExportLoop(queue, [sink], Metrics(), poll_interval=POLL, backoff_initial=0.01,
                      backoff_max=0.05)


async def test_export_loop_stop_without_start_returns_and_leaves_records_stored() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    export = make_export(queue, sink)
    job_id = store_scored(queue, 0)
    await export.stop()
    await export.stop()
    await settle()
    assert sink.records == []
    assert [j.id for j in queue.claim_scored(10, 0.0)] == [job_id]


async def test_export_loop_exports_while_running_and_nothing_after_stop() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    export = make_export(queue, sink)
    first = store_scored(queue, 0)
    export.start()
    with pytest.raises(RuntimeError):
        export.start()
    async with asyncio.timeout(10):
        while queue.depth():
            await asyncio.sleep(POLL)
    assert [r.id for r in sink.records] == [first]
    assert queue.is_done(first)
    await export.stop(timeout=5)
    await export.stop(timeout=5)  # twice: a no-op
    second = store_scored(queue, 1)
    export.wake()
    await settle()
    assert len(sink.records) == 1
    assert [j.id for j in queue.claim_scored(10, 0.0)] == [second]  # stored, not leased


async def test_export_loop_stop_exports_what_is_stored_first() -> None:
    queue, sink = MemoryQueue(), RecordingSink()
    export = ExportLoop(queue, [sink], Metrics(), poll_interval=60.0)  # no poll meanwhile
    export.start()
    await asyncio.sleep(0)
    job_id = store_scored(queue, 0)
    await export.stop(timeout=5)
    assert [r.id for r in sink.records] == [job_id]
    assert queue.depth() == 0


# ------------------------------------------------------------------------ Handover

T = "1" * 32
AGENT, CHAT = "a" * 16, "b" * 16


def agent_spans(trace: str = T) -> list[Span]:
    agent = Span(trace, AGENT, "invoke_agent weather", None, "INTERNAL", 1, 9, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
    chat = Span(trace, CHAT, "chat gpt-4o", AGENT, "CLIENT", 2, 5, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "Hi"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Hello"}], "finish_reason": "stop"}])})
    return [agent, chat]


def make_handover() -> tuple[Handover, Assembly, MemoryQueue]:
    metrics = Metrics()
    queue = MemoryQueue()
    assembly = Assembly(quiet_period=0.02, max_wait=5.0, metrics=metrics)
    ingest = Ingest(open_spanlog(None), assembly, metrics)
    scheduler = Scheduler([ScorerSpec(const_scorer())], queue, metrics)
    builder = BuildPool(scheduler.selections, processes=0)
    return Handover(assembly, builder, scheduler, ingest, metrics), assembly, queue


async def test_handover_stop_without_start_returns_and_leaves_traces_buffered() -> None:
    handover, assembly, queue = make_handover()
    await handover.stop()
    await handover.stop()
    assembly.add(agent_spans(), [], None)
    await asyncio.sleep(0.3)  # past the quiet period: a running loop would have queued it
    assert queue.depth() == 0
    assert assembly.pending_traces == 1
    assert await handover.schedule_ready(assembly.flush()) == 1  # usable by hand
    assert queue.depth() == 1


async def test_handover_queues_ready_traces_while_running_and_nothing_after_stop() -> None:
    handover, assembly, queue = make_handover()
    handover.start()
    handover.start()  # idempotent: one loop
    assembly.add(agent_spans(), [], None)
    handover.wake()
    async with asyncio.timeout(10):
        while queue.depth() == 0:
            await asyncio.sleep(POLL)
    assert assembly.pending_traces == 0
    await handover.stop()
    await handover.stop()  # twice: a no-op
    assembly.add(agent_spans("2" * 32), [], None)
    handover.wake()
    await asyncio.sleep(0.7)  # past the quiet period and the loop's 0.5 s poll
    assert queue.depth() == 1
    assert assembly.pending_traces == 1


async def test_handover_drain_hands_over_buffered_traces_at_once() -> None:
    handover, assembly, queue = make_handover()
    assembly.add(agent_spans(), [], None)
    assert not await handover.drain(timeout=0.3)  # the job is queued; nothing scores it
    assert (queue.depth(), assembly.pending_traces, handover.held) == (1, 0, 0)
