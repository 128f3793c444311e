"""The fake OTLP backend itself (tests/fakes/otlp_backend.py), driven by the official SDK
exporters: it records what arrives, injects faults, and goes down and up on the same ports."""

from __future__ import annotations

import threading

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fakes.otlp_backend import OtlpBackend


def make_spans(n: int = 2) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("my.instrumentation")
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gen_ai.agent.name", "weather")
        root.add_event("note", {"n": 1})
        for i in range(n - 1):
            with tracer.start_as_current_span(f"chat {i}") as child:
                child.set_attribute("gen_ai.usage.input_tokens", 10 + i)
                child.set_attribute("tags", ["a", "b"])
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_spans_arrive_as_simple_dicts_over_grpc_and_gzip_http() -> None:
    spans = make_spans(2)
    with OtlpBackend() as backend:
        grpc_exporter = GrpcExporter(endpoint=backend.endpoint, insecure=True,
                                     headers={"x-key": "v"})
        http_exporter = HttpExporter(endpoint=f"{backend.http_endpoint}/v1/traces",
                                     compression=Compression.Gzip)
        assert grpc_exporter.export(spans) is SpanExportResult.SUCCESS
        assert http_exporter.export(spans) is SpanExportResult.SUCCESS
        grpc_exporter.shutdown()
        http_exporter.shutdown()
        got = backend.wait_for_spans(4, timeout=5)
    assert [s["transport"] for s in got] == ["grpc", "grpc", "http", "http"]
    by_name = {s["name"]: s for s in got[:2]}
    root, child = by_name["invoke_agent weather"], by_name["chat 0"]
    assert child["parent_span_id"] == root["span_id"] and root["parent_span_id"] == ""
    assert root["trace_id"] == format(spans[0].context.trace_id, "032x")
    assert child["attributes"] == {"gen_ai.usage.input_tokens": 10, "tags": ["a", "b"]}
    assert root["events"][0]["name"] == "note" and root["events"][0]["attributes"] == {"n": 1}
    assert root["scope"] == "my.instrumentation"
    assert root["resource"]["service.name"] == "agent"
    assert backend.trace_requests[0].headers["x-key"] == "v"
    assert got[2:] == [dict(s, transport="http") for s in got[:2]]


def test_injected_faults_refuse_the_next_requests_then_stop() -> None:
    spans = make_spans(1)
    with OtlpBackend() as backend:
        backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=2)
        # This exporter retries only DATA_LOSS, so UNAVAILABLE fails at once.
        exporter = GrpcExporter(endpoint=backend.endpoint, insecure=True, timeout=5,
                                retryable_error_codes=[grpc.StatusCode.DATA_LOSS])
        assert exporter.export(spans) is SpanExportResult.FAILURE
        http_exporter = HttpExporter(endpoint=f"{backend.http_endpoint}/v1/traces", timeout=0.5)
        assert http_exporter.export(spans) is SpanExportResult.FAILURE  # 503
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        http_exporter.shutdown()
        assert [(s, t, c.name) for s, t, c in backend.refused] == [
            ("traces", "grpc", "UNAVAILABLE"), ("traces", "http", "UNAVAILABLE")]
        assert len(backend.spans()) == 1


def test_down_and_up_keep_the_same_ports() -> None:
    spans = make_spans(1)
    with OtlpBackend() as backend:
        endpoint, http_endpoint = backend.endpoint, backend.http_endpoint
        backend.down()
        assert not backend.is_up
        exporter = HttpExporter(endpoint=f"{http_endpoint}/v1/traces", timeout=0.5)
        assert exporter.export(spans) is SpanExportResult.FAILURE
        backend.up()
        assert (backend.endpoint, backend.http_endpoint) == (endpoint, http_endpoint)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        grpc_exporter = GrpcExporter(endpoint=endpoint, insecure=True)
        assert grpc_exporter.export(spans) is SpanExportResult.SUCCESS
        grpc_exporter.shutdown()
        assert len(backend.spans()) == 2


def test_wait_for_spans_wakes_on_arrival_and_times_out_otherwise() -> None:
    spans = make_spans(3)
    with OtlpBackend() as backend:
        with pytest.raises(TimeoutError):
            backend.wait_for_spans(1, timeout=0.1)
        exporter = GrpcExporter(endpoint=backend.endpoint, insecure=True)
        sender = threading.Thread(target=exporter.export, args=(spans,))
        sender.start()
        assert len(backend.wait_for_spans(3, timeout=10)) == 3
        sender.join()
        exporter.shutdown()
        backend.clear()
        assert backend.spans() == [] and backend.log_records() == []
