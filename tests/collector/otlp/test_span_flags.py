"""Span flags, as the official SDK writes them: whether a span's parent is remote (another
process's) reaches assembly, from protobuf and JSON alike."""

from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from collector.otlp import decode_json_bytes, decode_traces_protobuf


def _sdk_request() -> bytes:
    """A local child, and a span whose parent came from another process (a remote context,
    as a W3C traceparent header gives it)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    remote = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(1))
    with tracer.start_as_current_span("invoke_agent",
                                      context=trace_api.set_span_in_context(
                                          NonRecordingSpan(remote))):
        with tracer.start_as_current_span("chat"):
            pass
    with tracer.start_as_current_span("root"):
        pass
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def test_protobuf_keeps_whether_the_parent_is_remote() -> None:
    spans = {s.name: s for s in decode_traces_protobuf(_sdk_request()).spans}
    assert spans["invoke_agent"].parent_is_remote is True
    assert spans["chat"].parent_is_remote is False
    assert spans["root"].parent_is_remote is False  # the SDK says so for roots too


def test_json_keeps_the_same_flags() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest.FromString(_sdk_request())
    body = json.dumps(MessageToDict(request)).encode()
    from_json = {s.name: s.parent_is_remote for s in decode_json_bytes(body).spans}
    assert from_json == {"invoke_agent": True, "chat": False, "root": False}


def test_spans_without_flags_do_not_say() -> None:
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "1" * 32, "spanId": "2" * 16, "parentSpanId": "3" * 16, "name": "old sdk"},
        {"traceId": "1" * 32, "spanId": "4" * 16, "name": "bad flags", "flags": "x"}]}]}]})
    decoded = decode_json_bytes(body.encode())
    assert [s.parent_is_remote for s in decoded.spans] == []  # "x" is no uint32: malformed
    assert decoded.refused
    ok = json.loads(body)
    ok["resourceSpans"][0]["scopeSpans"][0]["spans"].pop()
    [span] = decode_json_bytes(json.dumps(ok).encode()).spans
    assert span.parent_is_remote is None
