"""The OTLP/gRPC receiver against the official OTel exporters and a raw gRPC client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import Compression, OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult

from collector._telemetry import Metrics
from collector.intake import Overloaded
from collector.otlp import decode_traces_protobuf
from collector.receivers import GrpcReceiver
from tests.fakes.metrics import sample
from tests.fakes.sdk_telemetry import make_logs, make_spans
from tests.fakes.sinks import RecordingSink

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


class Running:
    def __init__(self, receiver: GrpcReceiver, port: int, sink: RecordingSink,
                 metrics: Metrics) -> None:
        self.receiver, self.port, self.sink, self.metrics = receiver, port, sink, metrics
        self.target = f"127.0.0.1:{port}"

    def refused(self, reason: str) -> float:
        return sample(self.metrics, "scorecar_spans_refused_total", reason=reason)

    def received(self) -> float:
        return sample(self.metrics, "scorecar_spans_received_total", transport="grpc")

    async def call(self, method: str, body: bytes) -> bytes:
        async with grpc.aio.insecure_channel(self.target) as channel:
            rpc = channel.unary_unary(method, request_serializer=None,
                                      response_deserializer=None)
            return await rpc(body, timeout=5)  # type: ignore[no-any-return]


async def _start(max_mib: float = 64) -> Running:
    sink, metrics = RecordingSink(), Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", max_recv_msg_size_mib=max_mib)
    port = await receiver.start()
    return Running(receiver, port, sink, metrics)


@pytest.fixture
async def rx() -> AsyncIterator[Running]:
    running = await _start()
    yield running
    await running.receiver.stop(grace=0)


def _span_exporter(rx: Running, **kwargs: object) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=rx.target, insecure=True, timeout=5, **kwargs)  # type: ignore[arg-type]


def _request(*spans: Span) -> bytes:
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        scope_spans=[ScopeSpans(spans=list(spans))])]).SerializeToString()


GOOD = Span(trace_id=bytes(range(1, 17)), span_id=bytes(range(1, 9)), name="chat")


async def test_spans_from_the_official_exporter_arrive_with_ids_and_attributes(
        rx: Running) -> None:
    spans = make_spans(3)
    exporter = _span_exporter(rx)
    try:
        assert await asyncio.to_thread(exporter.export, spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    [call] = rx.sink.calls
    assert call.transport == "grpc" and call.kind == "traces_protobuf"
    got = {s.span_id: s for s in call.decoded.spans}
    assert set(got) == {f"{s.context.span_id:016x}" for s in spans}
    for sdk in spans:
        span = got[f"{sdk.context.span_id:016x}"]
        assert span.trace_id == f"{sdk.context.trace_id:032x}"
        assert span.name == sdk.name
        assert span.attributes == dict(sdk.attributes or {})
        assert span.resource["service.name"] == "agent-under-test"
    # The body handed over is the plain request: the write-ahead log can decode it again.
    assert decode_traces_protobuf(call.body).spans == call.decoded.spans
    assert rx.received() == 3


async def test_gzip_requests_are_accepted_and_handed_over_inflated(rx: Running) -> None:
    exporter = _span_exporter(rx, compression=Compression.Gzip)
    try:
        assert await asyncio.to_thread(exporter.export, make_spans(2)) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    [call] = rx.sink.calls
    assert len(decode_traces_protobuf(call.body).spans) == 2


async def test_log_records_from_the_official_exporter_arrive(rx: Running) -> None:
    records = make_logs()
    exporter = OTLPLogExporter(endpoint=rx.target, insecure=True, timeout=5)
    try:
        assert await asyncio.to_thread(exporter.export, records) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    [call] = rx.sink.calls
    assert call.kind == "logs_protobuf"
    [log] = call.decoded.logs
    assert log.trace_id == f"{records[0].log_record.trace_id:032x}"
    assert log.event_name == "gen_ai.client.inference.operation.details"
    assert log.body == "hello"
    assert rx.received() == 1


async def test_an_empty_request_is_ok_and_hands_nothing_over(rx: Running) -> None:
    answer = ExportTraceServiceResponse.FromString(await rx.call(TRACES, b""))
    assert not answer.HasField("partial_success")
    assert rx.sink.calls == []


async def test_spans_with_bad_ids_are_rejected_in_partial_success(rx: Running) -> None:
    bad = Span(trace_id=b"\x01\x02", span_id=bytes(range(1, 9)), name="broken")
    answer = ExportTraceServiceResponse.FromString(await rx.call(TRACES, _request(GOOD, bad)))
    assert answer.partial_success.rejected_spans == 1
    assert "bad_trace_id" in answer.partial_success.error_message
    assert [s.name for s in rx.sink.spans] == ["chat"]
    assert rx.refused("bad_trace_id") == 1 and rx.received() == 1


async def test_log_records_without_trace_ids_are_rejected_in_partial_success(
        rx: Running) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    body = ExportLogsServiceRequest(resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(
        log_records=[LogRecord(event_name="orphan")])])]).SerializeToString()
    answer = ExportLogsServiceResponse.FromString(await rx.call(LOGS, body))
    assert answer.partial_success.rejected_log_records == 1
    assert answer.partial_success.error_message
    assert rx.sink.calls == [] and rx.refused("log_without_trace") == 1


async def test_requests_over_grpcs_default_4_mib_are_accepted(rx: Running) -> None:
    big = Span(trace_id=GOOD.trace_id, span_id=GOOD.span_id, name="chat",
               attributes=[KeyValue(key="gen_ai.output.messages",
                                    value=AnyValue(string_value="x" * (5 << 20)))])
    await rx.call(TRACES, _request(big))
    assert len(rx.sink.spans[0].attributes["gen_ai.output.messages"]) == 5 << 20


async def test_malformed_protobuf_is_invalid_argument_with_a_message(rx: Running) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await rx.call(TRACES, b"\x0a\xff\xff\xff")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "did not parse" in (caught.value.details() or "")
    assert rx.refused("malformed") == 1 and rx.sink.calls == []


async def test_a_request_over_the_limit_is_resource_exhausted_and_counted() -> None:
    rx = await _start(max_mib=0.01)  # 10 KiB
    try:
        big = Span(trace_id=GOOD.trace_id, span_id=GOOD.span_id, name="x" * 20_000)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await rx.call(TRACES, _request(big))
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "limit" in (caught.value.details() or "")
        # Not retryable: no RetryInfo.
        assert "google.rpc.retryinfo-bin" not in dict(caught.value.trailing_metadata() or ())
        assert rx.refused("oversized") == 1 and rx.sink.calls == []
        # Under the limit still works.
        await rx.call(TRACES, _request(GOOD))
        assert len(rx.sink.spans) == 1
    finally:
        await rx.receiver.stop(grace=0)


async def test_gzip_over_the_limit_after_inflating_is_resource_exhausted() -> None:
    rx = await _start(max_mib=0.01)
    try:
        big = Span(trace_id=GOOD.trace_id, span_id=GOOD.span_id, name="x" * 15_000)
        async with grpc.aio.insecure_channel(rx.target) as channel:
            rpc = channel.unary_unary(TRACES, request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await rpc(_request(big), timeout=5, compression=grpc.Compression.Gzip)
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert rx.refused("oversized") == 1
    finally:
        await rx.receiver.stop(grace=0)


def _retry_delay(error: grpc.aio.AioRpcError) -> tuple[float, float]:
    """The RetryInfo delay in grpc-status-details-bin and in google.rpc.retryinfo-bin."""
    trailers = dict(error.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    assert status.code == grpc.StatusCode.UNAVAILABLE.value[0]
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info)
    direct = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    return (info.retry_delay.ToTimedelta().total_seconds(),
            direct.retry_delay.ToTimedelta().total_seconds())


async def test_overloaded_is_unavailable_with_retry_info_and_counted(rx: Running) -> None:
    rx.sink.overloaded = Overloaded("queue_full", retry_after=2.5)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await rx.call(TRACES, _request(GOOD))
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert _retry_delay(caught.value) == (2.5, 2.5)
    assert rx.refused("queue_full") == 1 and rx.sink.calls == []


async def test_overloaded_on_accept_counts_the_spans(rx: Running) -> None:
    rx.sink.accept_error = Overloaded("memory", retry_after=1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await rx.call(TRACES, _request(GOOD, Span(trace_id=GOOD.trace_id,
                                                  span_id=b"\x09" * 8, name="b")))
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert _retry_delay(caught.value) == (1.0, 1.0)
    assert rx.refused("memory") == 2 and rx.received() == 0


async def test_the_official_exporter_waits_the_retry_delay_then_succeeds(
        rx: Running, caplog: pytest.LogCaptureFixture) -> None:
    rx.sink.overloaded = Overloaded("queue_full", retry_after=0.2)
    rx.sink.overloaded_times = 1
    exporter = _span_exporter(rx)
    caplog.set_level(logging.WARNING, logger="opentelemetry.exporter.otlp.proto.grpc.exporter")
    try:
        assert await asyncio.to_thread(exporter.export, make_spans(1)) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert "retrying in 0.20s" in caplog.text
    assert len(rx.sink.spans) == 1 and rx.refused("queue_full") == 1


async def test_an_unexpected_sink_error_is_retryable_logged_and_counted(
        rx: Running, caplog: pytest.LogCaptureFixture) -> None:
    rx.sink.accept_error = RuntimeError("disk on fire")
    with caplog.at_level(logging.ERROR, logger="scorecar.receivers"):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await rx.call(TRACES, _request(GOOD))
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "disk on fire" in caplog.text  # logged with its traceback...
    assert "disk on fire" not in (caught.value.details() or "")  # ...not sent to the client
    assert rx.refused("internal") == 1


async def test_health_is_serving_then_not_serving_on_stop() -> None:
    rx = await _start()
    try:
        async with grpc.aio.insecure_channel(rx.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            serving = health_pb2.HealthCheckResponse.SERVING
            for service in ("", "opentelemetry.proto.collector.trace.v1.TraceService",
                            "opentelemetry.proto.collector.logs.v1.LogsService"):
                answer = await stub.Check(health_pb2.HealthCheckRequest(service=service))
                assert answer.status == serving
            watch = stub.Watch(health_pb2.HealthCheckRequest(service=""))
            assert (await watch.read()).status == serving
            stopping = asyncio.create_task(rx.receiver.stop(grace=0.3))
            update = await asyncio.wait_for(watch.read(), timeout=5)
            assert update.status == health_pb2.HealthCheckResponse.NOT_SERVING
            await stopping
    finally:
        await rx.receiver.stop()


async def test_stop_is_idempotent_and_safe_without_start() -> None:
    receiver = GrpcReceiver(RecordingSink(), Metrics(), endpoint="127.0.0.1:0")
    await receiver.stop()
    port = await receiver.start()
    await receiver.stop(grace=0)
    await receiver.stop(grace=0)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        rpc = channel.unary_unary(TRACES, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await rpc(b"", timeout=2)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
