"""Export timing as agents' SDKs produce it, through the real data path on a fake clock:
assembly (the sidecar's defaults: quiet 1 s, max_wait 30 s, max_trace_age 600 s, log_wait 5 s,
rescore_late on) → handover → run building → queue. Every capture that real instrumentation
libraries produced is replayed with its pieces apart in time:

- (b) spans first, their log records 0.5, 2 and 5 s later;
- (d) log records 1 s before the spans;
- (c) the spans in the order the SDK's batch processor exports them (by end time), in four
  batches 15 s apart, the run roots (agent spans) and their ancestors last;
- (a) every span but the run roots, and the roots 6 s later.

Each run must be queued exactly once and be exactly the run `scorecar inspect` builds from the
whole capture. Then re-scoring: pieces that arrive after the run was handed over rebuild it; it
is queued again (same score id, counted `rescored`) only when the rebuilt run differs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import pytest

from collector._telemetry import Metrics
from collector.intake import Assembly, Body, Ingest, decode_body, open_spanlog
from collector.otlp import read_otlp_file
from collector.scoring import (
    BuildPool,
    Handover,
    Job,
    MemoryQueue,
    Scheduler,
    ScorerSpec,
)
from scorers import create_scorer
from tests.fakes.metrics import sample
from transforms import LogEvent, Span, Trace, build_runs, run_roots

CAPTURES = Path(__file__).resolve().parents[2] / "testdata" / "captures"
ALL = sorted(CAPTURES.glob("*/*.otlp.jsonl"))
WITH_LOGS = [p for p in ALL if read_otlp_file(p).logs]


START = 1_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class RecordingQueue(MemoryQueue):
    """The memory queue, remembering every job handed to it (to see what was queued twice)."""

    def __init__(self) -> None:
        super().__init__(max_jobs=100_000)
        self.puts: list[Job] = []

    def put_many(self, jobs: Sequence[Job], *, replace: bool = False) -> int:
        self.puts.extend(jobs)
        return super().put_many(jobs, replace=replace)


class Pipeline:
    """The sidecar's path from buffered pieces to queued jobs, on a fake clock."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.metrics = Metrics()
        self.assembly = Assembly(quiet_period=1.0, max_wait=30.0, max_trace_age=600.0,
                                 log_wait=5.0, rescore_late=True, metrics=self.metrics,
                                 clock=self.clock)
        self.queue = RecordingQueue()
        scorer = create_scorer(id="length", description="answer length").generate_score(
            lambda run, results: 1.0)
        self.scheduler = Scheduler([ScorerSpec(scorer)], self.queue, self.metrics)
        self.handover = Handover(self.assembly, BuildPool(self.scheduler.selections),
                                 self.scheduler,
                                 Ingest(open_spanlog(None), self.assembly, self.metrics),
                                 self.metrics)

    @property
    def elapsed(self) -> float:
        """Seconds since the pipeline started."""
        return self.clock.now - START

    async def send(self, at: float, spans: list[Span], logs: list[LogEvent]) -> None:
        """Advance the clock to `at` seconds after the start (handing over whatever is due on
        the way), then add."""
        await self.until(at)
        if spans or logs:
            self.assembly.add(spans, logs, None)

    async def until(self, at: float) -> None:
        """Let time pass up to `at` seconds after the start, polling at every deadline as the
        handover loop does."""
        at += START
        while True:
            deadline = self.assembly.next_deadline()
            if deadline is None or deadline > at:
                break
            self.clock.now = max(self.clock.now, deadline)
            await self.handover.schedule_ready()
        self.clock.now = max(self.clock.now, at)
        await self.handover.schedule_ready()

    async def settle(self) -> None:
        """Let an hour pass: everything buffered is handed over by its own deadline."""
        await self.until(self.elapsed + 3_600.0)
        assert self.assembly.pending_traces == 0

    def queued(self) -> dict[str, list[str]]:
        """Score id → the run JSON of every time it was queued."""
        out: dict[str, list[str]] = defaultdict(list)
        for job in self.queue.puts:
            out[job.id].append(job.run_json)
        return out

    def reason(self, name: str) -> float:
        return sample(self.metrics, "scorecar_transform_reasons_total", reason=name)


def expected(path: Path) -> dict[str, str]:
    """What `scorecar inspect` builds from the whole capture: score id → run JSON."""
    from collector.scoring import job_for

    decoded = read_otlp_file(path)
    spans: dict[str, list[Span]] = defaultdict(list)
    logs: dict[str, list[LogEvent]] = defaultdict(list)
    for s in decoded.spans:
        spans[s.trace_id].append(s)
    for lg in decoded.logs:
        logs[lg.trace_id].append(lg)
    out = {}
    for tid in spans.keys() | logs.keys():
        for run in build_runs(Trace(tid, spans[tid], logs[tid])).runs:
            job = job_for(run, "length")
            out[job.id] = job.run_json
    return out


def assert_scored_once_whole(pipe: Pipeline, path: Path) -> None:
    want = expected(path)
    got = pipe.queued()
    twice = {k: len(v) for k, v in got.items() if len(v) > 1}
    assert not twice, f"{path.parent.name}/{path.name}: runs queued more than once: {twice}"
    assert got.keys() == want.keys(), f"{path.parent.name}/{path.name}: other runs"
    differ = [k for k in want if got[k][0] != want[k]]
    assert not differ, f"{path.parent.name}/{path.name}: {len(differ)} runs not whole"
    assert pipe.reason("partial") == 0 and pipe.reason("rescored") == 0


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem.removesuffix('.otlp')}"


@pytest.mark.parametrize("delay", [0.5, 2.0, 5.0], ids=lambda d: f"logs+{d}s")
@pytest.mark.parametrize("path", WITH_LOGS, ids=_id)
async def test_log_records_after_the_spans(path: Path, delay: float) -> None:
    decoded = read_otlp_file(path)
    pipe = Pipeline()
    await pipe.send(0.0, decoded.spans, [])
    await pipe.send(pipe.elapsed + delay, [], decoded.logs)
    await pipe.settle()
    assert_scored_once_whole(pipe, path)


@pytest.mark.parametrize("path", WITH_LOGS, ids=_id)
async def test_log_records_1_s_before_the_spans(path: Path) -> None:
    decoded = read_otlp_file(path)
    pipe = Pipeline()
    await pipe.send(0.0, [], decoded.logs)
    await pipe.send(pipe.elapsed + 1.0, decoded.spans, [])
    await pipe.settle()
    assert_scored_once_whole(pipe, path)


def _roots_and_ancestors(spans: list[Span], logs: list[LogEvent]) -> set[tuple[str, str]]:
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        by_trace[s.trace_id].append(s)
    held: set[tuple[str, str]] = set()
    for tid, ts in by_trace.items():
        parent = {s.span_id: s.parent_span_id for s in ts}
        for root in run_roots(Trace(tid, ts, [lg for lg in logs if lg.trace_id == tid])):
            sid: str | None = root.span_id
            while sid is not None and sid in parent and (tid, sid) not in held:
                held.add((tid, sid))
                sid = parent[sid]
    return held


def _logs_of(logs: list[LogEvent], spans: list[Span]) -> list[LogEvent]:
    ids = {(s.trace_id, s.span_id) for s in spans}
    return [lg for lg in logs if (lg.trace_id, lg.span_id) in ids]


@pytest.mark.parametrize("path", ALL, ids=_id)
async def test_children_in_four_batches_15_s_apart_and_the_agent_spans_last(path: Path) -> None:
    decoded = read_otlp_file(path)
    held = _roots_and_ancestors(decoded.spans, decoded.logs)
    order = sorted(decoded.spans, key=lambda s: s.end_time_unix_nano)  # as the SDK exports
    children = [s for s in order if (s.trace_id, s.span_id) not in held]
    last = [s for s in order if (s.trace_id, s.span_id) in held]
    loose = [lg for lg in decoded.logs if not lg.span_id]  # logs of no span: with the first
    pipe = Pipeline()
    size = -(-len(children) // 4) or 1
    for n in range(4):
        batch = children[n * size:(n + 1) * size]
        await pipe.send(15.0 * n, batch, _logs_of(decoded.logs, batch) + (loose if n == 0 else []))
    await pipe.send(50.0, last, _logs_of(decoded.logs, last))
    await pipe.settle()
    assert_scored_once_whole(pipe, path)


@pytest.mark.parametrize("path", ALL, ids=_id)
async def test_child_spans_first_and_the_agent_spans_6_s_later(path: Path) -> None:
    decoded = read_otlp_file(path)
    held = _roots_and_ancestors(decoded.spans, decoded.logs)
    first = [s for s in decoded.spans if (s.trace_id, s.span_id) not in held]
    last = [s for s in decoded.spans if (s.trace_id, s.span_id) in held]
    kept = {(lg.trace_id, lg.span_id) for lg in _logs_of(decoded.logs, last)}
    pipe = Pipeline()
    await pipe.send(0.0, first, [lg for lg in decoded.logs
                                 if (lg.trace_id, lg.span_id) not in kept])
    await pipe.send(6.0, last, _logs_of(decoded.logs, last))
    await pipe.settle()
    assert_scored_once_whole(pipe, path)


# --------------------------------------------------------------------------- re-scoring

EVENTS = CAPTURES / "genai-openai-v2-events" / "two_turns_tool.otlp.jsonl"


async def test_log_records_later_than_log_wait_rescore_the_run_once_whole() -> None:
    """Content 30 s after the spans (past quiet period + log_wait): the runs go without it,
    counted partial; the records rebuild them, they differ, and are queued again under the
    same score ids, counted rescored — and end whole."""
    decoded = read_otlp_file(EVENTS)
    pipe = Pipeline()
    await pipe.send(0.0, decoded.spans, [])
    await pipe.send(30.0, [], decoded.logs)
    await pipe.settle()
    want = expected(EVENTS)
    got = pipe.queued()
    assert got.keys() == want.keys()
    assert all(len(v) == 2 for v in got.values())
    assert all(got[k][-1] == want[k] for k in want)  # the newer run is whole
    assert all(got[k][0] != want[k] for k in want)
    assert pipe.reason("rescored") == len(want)
    assert pipe.queue.depth() == len(want)  # replaced, not added


async def test_a_late_piece_that_changes_no_run_is_not_scored_again() -> None:
    """A late span the runs do not read (a plain HTTP span under the agent) rebuilds the trace,
    but every rebuilt run is the one already queued: nothing is queued again."""
    decoded = read_otlp_file(EVENTS)
    pipe = Pipeline()
    await pipe.send(0.0, decoded.spans, decoded.logs)
    await pipe.until(5.0)
    before = Counter(j.id for j in pipe.queue.puts)
    assert len(before) == len(expected(EVENTS))
    agent_span = next(s for s in decoded.spans if s.parent_span_id is None)
    http = Span(agent_span.trace_id, "9" * 16, "GET /weather", agent_span.span_id, "CLIENT",
                agent_span.start_time_unix_nano + 1, agent_span.start_time_unix_nano + 2)
    await pipe.send(15.0, [http], [])
    await pipe.settle()
    assert pipe.assembly.stats["rebuilds"] == 1  # the late span did rebuild the trace
    assert Counter(j.id for j in pipe.queue.puts) == before
    assert pipe.reason("rescored") == 0


async def test_a_rescore_is_not_counted_as_a_new_agent_run() -> None:
    decoded = read_otlp_file(EVENTS)
    pipe = Pipeline()
    await pipe.send(0.0, decoded.spans, [])
    await pipe.send(30.0, [], decoded.logs)
    await pipe.settle()
    runs = sum(sample(pipe.metrics, "scorecar_agent_runs_total", convention=c)
               for c in ("genai", "openllmetry", "unknown"))
    assert runs == len(expected(EVENTS))


# --------------------------------------------------------------------------- remembered as bytes


def _requests(path: Path) -> list[tuple[Body, list[Span], list[LogEvent]]]:
    """Each export request of a capture as the receiver got it: its body and what it holds."""
    out = []
    for line in path.read_bytes().splitlines():
        body = Body("traces_json", line)
        decoded = decode_body(body.kind, body.data)
        out.append((body, decoded.spans, decoded.logs))
    return out


async def test_a_handed_over_trace_is_remembered_as_its_request_bodies() -> None:
    """A handed-over trace is kept for re-scoring as the request bodies it came in (not as
    decoded spans); late log records rebuild it from them, and the run ends whole."""
    pipe = Pipeline()
    requests = _requests(EVENTS)
    for body, spans, _logs in requests:
        if spans:
            pipe.assembly.add(spans, [], None, body)
    await pipe.until(10.0)
    held = {id(b) for b, spans, _ in requests if spans}
    assert 0 < pipe.assembly.remembered_bytes <= sum(
        len(b.data) for b, spans, _ in requests if id(b) in held)
    for body, _, logs in requests:
        if logs:
            pipe.assembly.add([], logs, None, body)
    await pipe.settle()
    want = expected(EVENTS)
    got = pipe.queued()
    assert all(got[k][-1] == want[k] for k in want)
    assert pipe.reason("rescored") == len(want)


async def test_past_its_byte_budget_the_oldest_traces_are_not_rescored_and_it_is_counted() -> None:
    pipe = Pipeline()
    pipe.assembly.max_remembered_bytes = 1  # every body is over it: nothing is kept
    for body, spans, _ in _requests(EVENTS):
        if spans:
            pipe.assembly.add(spans, [], None, body)
    await pipe.until(10.0)
    assert pipe.assembly.remembered_bytes == 0
    for body, _, logs in _requests(EVENTS):
        if logs:
            pipe.assembly.add([], logs, None, body)
    await pipe.settle()
    assert pipe.reason("rescored") == 0
    assert pipe.reason("late_not_rescored") > 0
