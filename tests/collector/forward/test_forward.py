"""Pass-through (`collector.forward._forwarder`) against a real OTLP backend over gRPC and HTTP: agents'
requests arrive unchanged, outages are ridden out within the queue bound, servers' delays are
honoured, and every drop is counted by reason."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web
from google.protobuf import json_format
from google.protobuf.duration_pb2 import Duration
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from pydantic import ValidationError

from bench.forward_outage import run_outage
from collector._telemetry import Metrics
from collector.config import ForwardConfig
from collector.forward import Forwarder, ForwardingSink
from collector.otlp import json_to_protobuf
from collector.receivers import GrpcReceiver, HttpReceiver
from tests.fakes.metrics import sample
from tests.fakes.otlp_backend import OtlpBackend
from tests.fakes.sdk_telemetry import make_logs, make_spans
from tests.fakes.sinks import RecordingSink

SECRET = "sekret-header-value-8d1f"


def forwarded(metrics: Metrics, outcome: str, signal: str = "traces") -> float:
    return sample(metrics, "scorecar_forward_total", signal=signal, outcome=outcome)


class Sleeps:
    """Records every backoff the forwarder asks for, and waits briefly (the decision is what
    is tested, not the clock)."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        await asyncio.sleep(min(seconds, 0.02))


def trace_request(n: int = 3, tag: int = 1) -> ExportTraceServiceRequest:
    spans = [Span(trace_id=bytes([tag]) * 16, span_id=bytes([tag, i + 1]) * 4, name=f"s{i}",
                  start_time_unix_nano=1_000 + i, end_time_unix_nano=2_000 + i)
             for i in range(n)]
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        scope_spans=[ScopeSpans(spans=spans)])])


def log_request(n: int = 2) -> ExportLogsServiceRequest:
    records = [LogRecord(trace_id=b"\x07" * 16, span_id=bytes([9, i + 1]) * 4,
                         time_unix_nano=5 + i, event_name="gen_ai.choice") for i in range(n)]
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        scope_logs=[ScopeLogs(log_records=records)])])


def as_otlp_json(message: Any) -> bytes:
    """OTLP/JSON as the spec writes it: proto3 JSON with ids in hex."""
    doc = json_format.MessageToDict(message)

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for key, value in obj.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    obj[key] = base64.b64decode(value).hex()
                else:
                    walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(doc)
    return json.dumps(doc).encode()


@pytest.fixture
def backend() -> Iterator[OtlpBackend]:
    with OtlpBackend() as b:
        yield b


def make_forwarder(backend: OtlpBackend, protocol: str, metrics: Metrics,
                   **kwargs: Any) -> Forwarder:
    endpoint = backend.endpoint if protocol == "grpc" else backend.http_endpoint
    kwargs.setdefault("initial_backoff", 0.02)
    kwargs.setdefault("max_backoff", 0.1)
    kwargs.setdefault("timeout", 5.0)
    return Forwarder(endpoint, metrics, protocol=protocol, **kwargs)


@pytest.fixture(params=["grpc", "http"])
async def fwd(request: pytest.FixtureRequest, backend: OtlpBackend
              ) -> AsyncIterator[tuple[Forwarder, Metrics, Sleeps]]:
    metrics, sleeps = Metrics(), Sleeps()
    forwarder = make_forwarder(backend, request.param, metrics, sleep=sleeps,
                               headers={"x-api-key": SECRET})
    await forwarder.start()
    yield forwarder, metrics, sleeps
    await forwarder.stop(grace=1.0)


# --------------------------------------------------------------------------- unchanged


@pytest.mark.parametrize("receiver_kind", ["grpc", "http"])
@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_agent_requests_arrive_at_the_next_collector_unchanged(
        backend: OtlpBackend, receiver_kind: str, protocol: str) -> None:
    metrics, inner = Metrics(), RecordingSink()
    forwarder = make_forwarder(backend, protocol, metrics)
    sink = ForwardingSink(inner, forwarder)
    receiver: GrpcReceiver | HttpReceiver = (
        GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0") if receiver_kind == "grpc"
        else HttpReceiver(sink, metrics, endpoint="127.0.0.1:0"))
    await forwarder.start()
    port = await receiver.start()
    try:
        if receiver_kind == "grpc":
            span_exporter: Any = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
            log_exporter = OTLPLogExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
            await asyncio.to_thread(log_exporter.export, make_logs())
            log_exporter.shutdown()
        else:
            span_exporter = HttpSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
        await asyncio.to_thread(span_exporter.export, make_spans(4))
        span_exporter.shutdown()
        assert await forwarder.flush(10)
    finally:
        await receiver.stop()
        await forwarder.stop(1.0)
    # What the agent sent (as the receiver got it) is what the next collector got.
    sent_traces = [ExportTraceServiceRequest.FromString(c.body) for c in inner.calls
                   if c.kind == "traces_protobuf"]
    sent_logs = [ExportLogsServiceRequest.FromString(c.body) for c in inner.calls
                 if c.kind == "logs_protobuf"]
    assert [r.request for r in backend.trace_requests] == sent_traces
    assert [r.request for r in backend.log_requests] == sent_logs
    assert {r.transport for r in backend.received} == {protocol}
    assert len(backend.spans()) == 4
    assert forwarded(metrics, "forwarded") == 4  # and scored: the inner sink has them too
    assert len(inner.spans) == 4
    if receiver_kind == "grpc":
        assert forwarded(metrics, "forwarded", "logs") == len(backend.log_records()) > 0


async def test_json_bodies_are_forwarded_as_the_same_request_in_protobuf(
        fwd: tuple[Forwarder, Metrics, Sleeps], backend: OtlpBackend) -> None:
    forwarder, metrics, _ = fwd
    traces, logs = trace_request(3), log_request(2)
    assert forwarder.submit("traces_json", as_otlp_json(traces), 3)
    assert forwarder.submit("logs_json", as_otlp_json(logs), 2)
    assert await forwarder.flush(10)
    assert [r.request for r in backend.trace_requests] == [traces]
    assert [r.request for r in backend.log_requests] == [logs]
    assert backend.spans()[0]["trace_id"] == "01" * 16


def test_json_that_protobuf_cannot_hold_is_refused() -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}
    with pytest.raises(ValueError):
        json_to_protobuf(json.dumps(doc).encode(), "traces")
    # unknown fields are ignored, as an OTLP receiver must
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "future": 1}]}]}],
           "extra": True}
    assert ExportTraceServiceRequest.FromString(json_to_protobuf(
        json.dumps(doc).encode(), "traces")).resource_spans[0].scope_spans[0].spans[0].name == "x"


async def test_an_unconvertible_json_body_is_dropped_as_permanent(
        fwd: tuple[Forwarder, Metrics, Sleeps], backend: OtlpBackend) -> None:
    forwarder, metrics, _ = fwd
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}
    forwarder.submit("traces_json", json.dumps(doc).encode(), 1)
    assert await forwarder.flush(10)
    assert forwarded(metrics, "dropped_permanent") == 1
    assert backend.received == []


# --------------------------------------------------------------------------- outages


async def test_backend_down_then_up_delivers_everything_within_the_bound(
        fwd: tuple[Forwarder, Metrics, Sleeps], backend: OtlpBackend) -> None:
    forwarder, metrics, sleeps = fwd
    backend.down()
    for tag in range(1, 21):
        assert forwarder.submit("traces_protobuf",
                                trace_request(3, tag).SerializeToString(), 3)
    while forwarded(metrics, "retried") < 12:  # every consumer has failed a few times
        await asyncio.sleep(0.01)
    assert not await forwarder.flush(0.1)
    await asyncio.to_thread(backend.up)
    assert await forwarder.flush(20)
    got = {(s["trace_id"], s["span_id"]) for s in backend.spans()}
    assert len(got) == 60 and len(backend.spans()) == 60  # none lost, none twice
    assert forwarded(metrics, "forwarded") == 60
    for outcome in ("dropped_full", "dropped_permanent", "dropped_shutdown"):
        assert forwarded(metrics, outcome) == 0
    # jittered exponential backoff, capped at max_backoff
    assert sleeps.asked and all(0.01 <= s <= 0.1 for s in sleeps.asked)
    assert len(set(sleeps.asked)) > 1


class RetryInfoBackend(OtlpBackend):
    """Answers the next `times` gRPC exports with `code` and a `RetryInfo` of `delay`."""

    def __init__(self) -> None:
        super().__init__()
        self.plan: list[tuple[grpc.StatusCode, float | None]] = []

    def _grpc_export(self, signal: str, request: Any, context: grpc.ServicerContext) -> None:
        with self._lock:
            step = self.plan.pop(0) if self.plan else None
        if step is not None:
            code, delay = step
            if delay is not None:
                info = error_details_pb2.RetryInfo(retry_delay=Duration(
                    seconds=int(delay), nanos=int(delay % 1 * 1e9)))
                status = status_pb2.Status(code=code.value[0], message="slow down")
                status.details.add().Pack(info)
                context.set_trailing_metadata(
                    [("grpc-status-details-bin", status.SerializeToString())])
            context.abort(code, "slow down")
        super()._grpc_export(signal, request, context)


async def test_grpc_retry_info_is_honoured() -> None:
    with RetryInfoBackend() as backend:
        metrics, sleeps = Metrics(), Sleeps()
        forwarder = make_forwarder(backend, "grpc", metrics, sleep=sleeps, consumers=1)
        backend.plan = [(grpc.StatusCode.UNAVAILABLE, 2.5),
                        (grpc.StatusCode.RESOURCE_EXHAUSTED, 4.0)]
        await forwarder.start()
        forwarder.submit("traces_protobuf", trace_request(2).SerializeToString(), 2)
        assert await forwarder.flush(10)
        # RESOURCE_EXHAUSTED without RetryInfo is permanent (OTLP spec)
        backend.plan = [(grpc.StatusCode.RESOURCE_EXHAUSTED, None)]
        forwarder.submit("traces_protobuf", trace_request(1, 2).SerializeToString(), 1)
        assert await forwarder.flush(10)
        await forwarder.stop(1)
    assert sleeps.asked == [2.5, 4.0]
    assert forwarded(metrics, "retried") == 4 and forwarded(metrics, "forwarded") == 2
    assert forwarded(metrics, "dropped_permanent") == 1
    assert len(backend.spans()) == 2


async def test_http_retry_after_is_honoured_and_only_retryable_statuses_are_retried() -> None:
    answers = [(429, "3"), (503, None), (502, "0.5"), (200, None), (400, None)]
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        status, retry_after = answers.pop(0)
        headers = {"Retry-After": retry_after} if retry_after else {}
        return web.Response(status=status, body=b"", headers=headers)

    app = web.Application()
    app.router.add_post("/v1/traces", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    metrics, sleeps = Metrics(), Sleeps()
    forwarder = Forwarder(f"http://127.0.0.1:{port}", metrics, protocol="http/protobuf",
                          sleep=sleeps, consumers=1, initial_backoff=0.2, max_backoff=1.0)
    try:
        await forwarder.start()
        body = trace_request(2).SerializeToString()
        forwarder.submit("traces_protobuf", body, 2)
        assert await forwarder.flush(10)
        forwarder.submit("traces_protobuf", body, 2)  # answered 400: permanent
        assert await forwarder.flush(10)
    finally:
        await forwarder.stop(1)
        await runner.cleanup()
    assert seen == [body] * 5
    assert sleeps.asked[0] == 3.0 and sleeps.asked[2] == 0.5
    # no Retry-After: the jittered backoff of the second attempt (0.2 s doubled, 50-100 %)
    assert 0.2 <= sleeps.asked[1] <= 0.4
    assert forwarded(metrics, "retried") == 6
    assert forwarded(metrics, "forwarded") == 2
    assert forwarded(metrics, "dropped_permanent") == 2


@pytest.mark.parametrize("code", [grpc.StatusCode.INVALID_ARGUMENT,
                                  grpc.StatusCode.UNAUTHENTICATED,
                                  grpc.StatusCode.NOT_FOUND])
async def test_permanent_errors_are_dropped_and_counted(
        fwd: tuple[Forwarder, Metrics, Sleeps], backend: OtlpBackend,
        code: grpc.StatusCode) -> None:
    forwarder, metrics, sleeps = fwd
    backend.fail_with(code, times=1)
    forwarder.submit("traces_protobuf", trace_request(3).SerializeToString(), 3)
    assert await forwarder.flush(10)
    forwarder.submit("logs_protobuf", log_request(2).SerializeToString(), 2)
    assert await forwarder.flush(10)
    assert forwarded(metrics, "dropped_permanent") == 3
    assert forwarded(metrics, "retried") == 0 and sleeps.asked == []
    assert forwarded(metrics, "forwarded", "logs") == 2 and len(backend.log_records()) == 2
    assert backend.spans() == []


async def test_unimplemented_logs_on_a_traces_only_backend_are_dropped_not_retried() -> None:
    with OtlpBackend(logs=False) as backend:
        metrics, sleeps = Metrics(), Sleeps()
        for protocol in ("grpc", "http"):
            forwarder = make_forwarder(backend, protocol, metrics, sleep=sleeps)
            await forwarder.start()
            forwarder.submit("logs_protobuf", log_request(2).SerializeToString(), 2)
            assert await forwarder.flush(10)
            await forwarder.stop(1)
    assert forwarded(metrics, "dropped_permanent", "logs") == 4
    assert sleeps.asked == []


# --------------------------------------------------------------------------- bounds


async def test_a_full_queue_drops_the_new_requests_counted_and_accept_never_waits(
        backend: OtlpBackend) -> None:
    metrics, inner = Metrics(), RecordingSink()
    forwarder = make_forwarder(backend, "grpc", metrics, queue_size=4, consumers=2)
    sink = ForwardingSink(inner, forwarder)
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0")
    backend.down()
    await forwarder.start()
    port = await receiver.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True, timeout=10)
        results = [await asyncio.to_thread(exporter.export, make_spans(2)) for _ in range(10)]
        exporter.shutdown()
        # every request was accepted (and kept for scoring) although the next collector is down
        assert all(r.name == "SUCCESS" for r in results)
        assert len(inner.spans) == 20
        assert forwarder.queued == 4
        assert forwarded(metrics, "dropped_full") == 12
        await asyncio.to_thread(backend.up)
        assert await forwarder.flush(20)
    finally:
        await receiver.stop()
        await forwarder.stop(1)
    assert len(backend.spans()) == 8
    assert forwarded(metrics, "forwarded") == 8


async def test_the_byte_bound_drops_too(backend: OtlpBackend) -> None:
    metrics = Metrics()
    body = trace_request(3).SerializeToString()
    forwarder = make_forwarder(backend, "http", metrics, queue_max_bytes=2 * len(body))
    # not started: nothing leaves the queue
    assert forwarder.submit("traces_protobuf", body, 3)
    assert forwarder.submit("traces_protobuf", body, 3)
    assert not forwarder.submit("traces_protobuf", body, 3)
    assert forwarder.queued_bytes == 2 * len(body)
    assert forwarded(metrics, "dropped_full") == 3
    await forwarder.start()
    assert await forwarder.flush(10)
    await forwarder.stop(1)
    assert forwarded(metrics, "forwarded") == 6


async def test_stop_flushes_within_grace_and_counts_what_is_left(backend: OtlpBackend) -> None:
    metrics = Metrics()
    forwarder = make_forwarder(backend, "grpc", metrics)
    await forwarder.start()
    for tag in range(1, 6):
        forwarder.submit("traces_protobuf", trace_request(2, tag).SerializeToString(), 2)
    await forwarder.stop(grace=10)
    assert forwarded(metrics, "forwarded") == 10 and len(backend.spans()) == 10

    metrics = Metrics()
    forwarder = make_forwarder(backend, "grpc", metrics)
    backend.down()
    await forwarder.start()
    for tag in range(1, 6):
        forwarder.submit("traces_protobuf", trace_request(2, tag).SerializeToString(), 2)
    await forwarder.stop(grace=0.2)
    assert forwarded(metrics, "dropped_shutdown") == 10
    assert forwarder.queued == 0
    assert not forwarder.submit("traces_protobuf", trace_request(1).SerializeToString(), 1)
    assert forwarded(metrics, "dropped_shutdown") == 11


# --------------------------------------------------------------------------- secrets


async def test_headers_are_sent_and_never_logged(
        fwd: tuple[Forwarder, Metrics, Sleeps], backend: OtlpBackend,
        caplog: pytest.LogCaptureFixture) -> None:
    forwarder, metrics, _ = fwd
    caplog.set_level(logging.DEBUG)
    backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=1)
    forwarder.submit("traces_protobuf", trace_request(1).SerializeToString(), 1)
    assert await forwarder.flush(10)
    backend.fail_with(grpc.StatusCode.INVALID_ARGUMENT, times=1)
    forwarder.submit("traces_protobuf", trace_request(1, 2).SerializeToString(), 1)
    assert await forwarder.flush(10)
    assert [r.headers.get("x-api-key") for r in backend.received] == [SECRET]
    assert "retrying" in caplog.text and "permanent" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in repr(forwarder)
    assert SECRET.encode() not in metrics.render()


# --------------------------------------------------------------------------- config


def test_forward_config_defaults_and_checks(tmp_path: Path) -> None:
    cfg = ForwardConfig()
    assert (cfg.endpoint, cfg.protocol, cfg.insecure, cfg.timeout, cfg.queue_size,
            cfg.queue_max_mib, cfg.consumers) == (None, "grpc", True, 10.0, 1000, 64.0, 4)
    assert ForwardConfig(endpoint="collector:4318", protocol="http").protocol == "http/protobuf"
    with pytest.raises(ValidationError, match="cert_file and key_file"):
        cert = tmp_path / "c.pem"
        cert.write_text("x")
        ForwardConfig(endpoint="collector:4317", cert_file=cert)
    with pytest.raises(ValidationError, match="file not found"):
        ForwardConfig(ca_file=tmp_path / "missing.pem")
    with pytest.raises(ValidationError, match="initial_backoff"):
        ForwardConfig(initial_backoff=5, max_backoff=1)
    with pytest.raises(ValidationError):
        ForwardConfig(queue_size=0)


# --------------------------------------------------------------------------- the figure


async def test_outage_figure_no_loss_within_the_bound_and_drops_equal_the_counter() -> None:
    figure = await run_outage(seconds=1.0, rate=200.0, spans_per_request=5, queue_size=100,
                              initial_backoff=0.05, max_backoff=0.2)
    assert figure.lost_within_bound == 0
    assert figure.dropped_past_bound > 0  # 200 req/s for 1 s cannot fit 100 requests
    assert figure.dropped_past_bound == figure.counter_dropped
    assert figure.delivered + figure.dropped_past_bound == figure.sent


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_stop_without_start_counts_what_was_queued_and_is_idempotent(
        backend: OtlpBackend, protocol: str) -> None:
    metrics = Metrics()
    forwarder = make_forwarder(backend, protocol, metrics)
    assert forwarder.submit("traces_protobuf", trace_request(3).SerializeToString(), 3)
    await forwarder.stop(grace=0.1)  # never started: nothing was sent, the 3 spans are counted
    await forwarder.stop(grace=0.1)
    assert forwarded(metrics, "dropped_shutdown") == 3
    assert forwarded(metrics, "forwarded") == 0 and backend.spans() == []
    assert forwarder.queued == 0
