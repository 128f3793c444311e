"""Ingest end to end on a real span log: OTLP bodies (the SDK's protobuf encoder, the committed
JSON captures) accepted, the process "crashes", a new Ingest over the same directory replays,
and the same traces come back ready with the same run ids as building them directly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector._telemetry import Metrics
from collector.intake import (
    Assembly,
    BodyKind,
    Ingest,
    MemorySpanLog,
    Overloaded,
    SpanLog,
    decode_body,
)
from collector.otlp import Decoded, read_otlp_file
from transforms import build_runs, group_traces

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "tests" / "testdata" / "captures"
LIBRARIES = ("genai-openai-v2-events", "mastra", "openinference-anthropic", "openllmetry",
             "vercel-ai-v6", "pydantic-ai", "openlit")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _capture_bodies() -> list[tuple[Path, BodyKind, bytes]]:
    out: list[tuple[Path, BodyKind, bytes]] = []
    for lib in LIBRARIES:
        for path in sorted((CAPTURES / lib).glob("*.otlp.jsonl")):
            for line in path.read_bytes().splitlines():
                if line.strip():
                    kind: BodyKind = "logs_json" if b'"resourceLogs"' in line else "traces_json"
                    out.append((path, kind, line))
    return out


def _open(path: Path | None, clock: Clock, metrics: Metrics | None = None, *,
          segment_bytes: int = 1 << 20, **kw: object) -> Ingest:
    metrics = metrics or Metrics()
    log = SpanLog(path, segment_bytes=segment_bytes) if path else MemorySpanLog()
    asm = Assembly(metrics=metrics, clock=clock, **kw)  # type: ignore[arg-type]
    return Ingest(log, asm, metrics)


def _run_ids(traces: object) -> set[str]:
    return {r.run_id for t in traces for r in build_runs(t).runs}  # type: ignore[attr-defined]


async def test_crash_and_replay_gives_the_same_runs(tmp_path: Path) -> None:
    bodies = _capture_bodies()
    expected = Decoded()
    for path in sorted({p for p, _, _ in bodies}):
        expected.extend(read_otlp_file(path))
    expected_ids = _run_ids(group_traces(expected.spans, expected.logs).values())
    assert len(expected_ids) > 10

    clock = Clock()
    first = _open(tmp_path, clock)
    for _, kind, body in bodies:
        await first.accept(decode_body(kind, body), "http", body, kind)
    assert first.assembly.pending_spans == len(expected.spans) + len(expected.logs)
    del first  # kill -9: nothing handed over, nothing released

    clock.now += 5
    metrics = Metrics()
    second = _open(tmp_path, clock, metrics)
    counts = second.replay()
    # (one capture's log request holds only records without trace ids: nothing to log)
    assert counts["records"] == sum(1 for _, kind, body in bodies
                                    if decode_body(kind, body).spans
                                    or decode_body(kind, body).logs)
    assert counts["spans"] == len(expected.spans) and counts["logs"] == len(expected.logs)
    assert counts["torn"] == counts["corrupt"] == 0
    assert metrics.registry.get_sample_value("scorecar_spans_received_total",
                                             {"transport": "http"}) is None  # not again
    clock.now += 1.0
    ready = second.assembly.poll()
    assert ready and all(r.reason == "quiet" for r in ready)
    clock.now += 30.0
    ready += second.assembly.poll()  # traces whose agent span's parent was never exported
    assert _run_ids(r.trace for r in ready) == expected_ids
    assert second.assembly.pending_traces == 0

    # Scheduled: released; every old segment is gone, and a third start replays nothing.
    for r in ready:
        second.release(r)
    assert isinstance(second.spanlog, SpanLog)
    assert second.spanlog.segments == []
    third = _open(tmp_path, clock)
    assert not third.replay()


def _sdk_bodies() -> tuple[bytes, bytes, str]:
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    tracer = tp.get_tracer("app")
    logs = InMemoryLogRecordExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(SimpleLogRecordProcessor(logs))
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}) as root:
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 3,
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                    {"type": "text", "content": "Weather in Paris?"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "Sunny."}], "finish_reason": "stop"}])}):
            lp.get_logger("app").emit(event_name="gen_ai.choice",
                                      body={"message": {"content": "Sunny."}})
    tp.shutdown()
    lp.shutdown()
    trace_body = encode_spans(spans.get_finished_spans()).SerializeToString()
    log_body = encode_logs(logs.get_finished_logs()).SerializeToString()
    return trace_body, log_body, format(root.get_span_context().trace_id, "032x")


async def test_protobuf_bodies_round_trip_and_count(tmp_path: Path) -> None:
    trace_body, log_body, trace_id = _sdk_bodies()
    clock = Clock()
    metrics = Metrics()
    ingest = _open(tmp_path, clock, metrics)
    await ingest.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                        "traces_protobuf")
    await ingest.accept(decode_body("logs_protobuf", log_body), "grpc", log_body,
                        "logs_protobuf")
    assert ingest.assembly.pending_spans == 3  # two spans and a log record, buffered
    clock.now += 1.0
    [live] = ingest.assembly.poll()
    [run] = build_runs(live.trace).runs
    assert run.input.input_messages[0].text == "Weather in Paris?"

    again = _open(tmp_path, clock)
    assert again.replay()["records"] == 2  # not released yet: both bodies come back
    clock.now += 1.0
    [replayed] = again.assembly.poll()
    assert replayed.trace.trace_id == trace_id
    assert len(replayed.trace.spans) == 2 and len(replayed.trace.logs) == 1
    assert [r.run_id for r in build_runs(replayed.trace).runs] == [run.run_id]


async def test_nothing_logged_for_a_request_without_spans(tmp_path: Path) -> None:
    ingest = _open(tmp_path, Clock())
    bad = decode_body("traces_json", b'{"resourceSpans": []}')
    await ingest.accept(bad, "http", b'{"resourceSpans": []}', "traces_json")
    assert isinstance(ingest.spanlog, SpanLog)
    assert ingest.spanlog.segments == []


async def test_storage_failure_refuses_and_keeps_nothing(tmp_path: Path) -> None:
    trace_body, _, _ = _sdk_bodies()
    metrics = Metrics()
    ingest = _open(tmp_path, Clock(), metrics)
    (tmp_path / "spanlog").rmdir()
    (tmp_path / "spanlog").write_text("not a directory")
    with pytest.raises(Overloaded) as info:
        await ingest.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                            "traces_protobuf")
    assert info.value.reason == "storage"
    assert ingest.assembly.pending_spans == 0  # not acknowledged, not buffered
    assert metrics.registry.get_sample_value("scorecar_spans_received_total",
                                             {"transport": "grpc"}) is None


async def test_check_capacity_refuses_when_buffers_or_app_are_full() -> None:
    trace_body, _, _ = _sdk_bodies()
    clock = Clock()
    ingest = _open(None, clock, max_pending_spans=2)
    ingest.check_capacity()
    await ingest.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                        "traces_protobuf")
    with pytest.raises(Overloaded) as info:
        ingest.check_capacity()
    assert info.value.reason == "too_many_pending"

    full = Overloaded("queue_full", 2.0)
    metrics = Metrics()
    other = Ingest(MemorySpanLog(), Assembly(metrics=metrics, clock=clock), metrics,
                   capacity=lambda: full)
    with pytest.raises(Overloaded) as info:
        other.check_capacity()
    assert info.value is full


async def test_late_and_evicted_spans_release_their_segments(tmp_path: Path) -> None:
    trace_body, _, _ = _sdk_bodies()
    clock = Clock()
    ingest = _open(tmp_path, clock, segment_bytes=1)  # one record per segment
    log = ingest.spanlog
    assert isinstance(log, SpanLog)
    decoded = decode_body("traces_protobuf", trace_body)
    await ingest.accept(decoded, "grpc", trace_body, "traces_protobuf")
    clock.now += 1.0
    [ready] = ingest.assembly.poll()
    ingest.release(ready)
    # The exporter retries the same request after the trace was scheduled: kept nowhere,
    # so its record must not pin a segment forever.
    await ingest.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                        "traces_protobuf")
    await ingest.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                        "traces_protobuf")
    assert log.segments == [3]  # only the active one

    evicting = _open(tmp_path / "evict", clock, segment_bytes=1, max_traces=1)
    elog = evicting.spanlog
    assert isinstance(elog, SpanLog)
    other_body, _, _ = _sdk_bodies()  # a second trace evicts the first
    await evicting.accept(decode_body("traces_protobuf", trace_body), "grpc", trace_body,
                          "traces_protobuf")
    await evicting.accept(decode_body("traces_protobuf", other_body), "grpc", other_body,
                          "traces_protobuf")
    assert evicting.assembly.pending_traces == 1
    assert elog.segments == [2]


async def test_scanned_bodies_are_acknowledged_first_and_decoded_after(tmp_path: Path) -> None:
    """The request path only scans a protobuf trace body (ids checked, nothing decoded); the
    body is in the log when `accept` returns, counts against capacity until decoded, and a
    crash before the decode loses nothing."""
    import asyncio

    from collector.otlp import scan_traces_protobuf

    trace_body, _, trace_id = _sdk_bodies()
    clock = Clock()
    ingest = _open(tmp_path, clock, max_pending_spans=3)
    scanned = scan_traces_protobuf(trace_body)
    assert scanned.spans == [] and scanned.undecoded == 2 and scanned.trace_ids == {trace_id}
    await ingest.accept(scanned, "grpc", trace_body, "traces_protobuf")
    assert ingest.backlog == 2 and ingest.assembly.pending_spans == 0
    await ingest.accept(scan_traces_protobuf(trace_body), "grpc", trace_body, "traces_protobuf")
    with pytest.raises(Overloaded):  # 4 waiting for decode, room for 3
        ingest.check_capacity()

    # crash before anything was decoded: the log has both bodies
    again = _open(tmp_path, clock)
    assert again.replay()["spans"] == 4
    assert again.assembly.pending_spans == 2  # the re-sent copy is a duplicate

    decoder = asyncio.create_task(ingest.run())
    try:
        for _ in range(200):
            if ingest.backlog == 0:
                break
            await asyncio.sleep(0.01)
    finally:
        decoder.cancel()
    assert ingest.backlog == 0 and ingest.decoded_later == 2
    assert ingest.assembly.pending_spans == 2
    clock.now += 1.0
    [ready] = ingest.assembly.poll()
    [run] = build_runs(ready.trace).runs
    assert run.input.input_messages[0].text == "Weather in Paris?"


def test_scan_refuses_exactly_what_the_decode_refuses() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from collector.otlp import decode_traces_protobuf, scan_traces_protobuf

    trace_body, _, _ = _sdk_bodies()
    req = ExportTraceServiceRequest.FromString(trace_body)
    spans = req.resource_spans[0].scope_spans[0].spans
    spans[0].trace_id = b"\x00" * 16
    spans.add().CopyFrom(spans[1])
    spans[2].parent_span_id = b"\x01\x02"
    body = req.SerializeToString()
    scanned, decoded = scan_traces_protobuf(body), decode_traces_protobuf(body)
    assert scanned.undecoded == len(decoded.spans) == 1
    assert scanned.refused == decoded.refused and scanned.errors == decoded.errors
    assert scan_traces_protobuf(b"\xff\xff not protobuf").refused["malformed_protobuf"] == 1


async def test_undecoded_bytes_are_the_scanned_bodies_until_decoded() -> None:
    """What the receivers' max_inflight_mib counts beside their own requests."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from collector.intake import Assembly, Ingest, MemorySpanLog
    from collector.otlp import scan_traces_protobuf
    from tests.fakes.sdk_telemetry import make_spans

    ingest = Ingest(MemorySpanLog(), Assembly(metrics=Metrics()), Metrics())
    body = encode_spans(make_spans(3)).SerializeToString()
    await ingest.accept(scan_traces_protobuf(body), "grpc", body, "traces_protobuf")
    assert ingest.undecoded_bytes == len(body) and ingest.backlog == 3
    task = asyncio.create_task(ingest.run())
    try:
        for _ in range(200):
            if ingest.undecoded_bytes == 0:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert ingest.undecoded_bytes == 0 and ingest.assembly.pending_spans == 3
