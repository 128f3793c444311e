"""OTLP decoding from what the official OTel SDK encoder produces (protobuf), and the same
requests as OTLP/JSON (hex ids per the spec; base64 ids as protobuf's json_format writes)."""

from __future__ import annotations

import base64
import json

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from collector.otlp import (
    decode_json,
    decode_json_bytes,
    decode_logs_protobuf,
    decode_traces_protobuf,
)
from transforms import Trace, build_runs


def _sdk_spans():  # type: ignore[no-untyped-def]
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-app",
                                                        "deployment.environment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my.instrumentation", "1.2.3")
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
            "flag": True, "count": 7, "ratio": 0.5, "tags": ["a", "b"], "nums": [1, 2, 3],
            "naïve": "ünïcödé ✓"}) as root:
        root.add_event("checkpoint", {"step": 1})
        with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT, links=[
                Link(root.get_span_context(), {"why": "test"})], attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                    {"type": "text", "content": "Hi"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "Hello!"}], "finish_reason": "stop"}])}) as chat:
            chat.set_status(Status(StatusCode.ERROR, "boom"))
    provider.shutdown()
    return exporter.get_finished_spans()


def test_protobuf_from_the_sdk_encoder() -> None:
    sdk = _sdk_spans()
    body = encode_spans(sdk).SerializeToString()
    out = decode_traces_protobuf(body)
    assert not out.refused
    by_name = {s.name: s for s in out.spans}
    root_sdk = next(s for s in sdk if s.name == "invoke_agent weather")
    root, chat = by_name["invoke_agent weather"], by_name["chat gpt-4o"]
    assert root.trace_id == format(root_sdk.context.trace_id, "032x")
    assert root.span_id == format(root_sdk.context.span_id, "016x")
    assert root.parent_span_id is None
    assert chat.parent_span_id == root.span_id
    assert root.attributes == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
        "flag": True, "count": 7, "ratio": 0.5, "tags": ["a", "b"], "nums": [1, 2, 3],
        "naïve": "ünïcödé ✓"}
    assert (root.start_time_unix_nano, root.end_time_unix_nano) == (
        root_sdk.start_time, root_sdk.end_time)
    assert [(e.name, e.attributes) for e in root.events] == [("checkpoint", {"step": 1})]
    assert (chat.kind, chat.status_code, chat.status_message) == ("CLIENT", "ERROR", "boom")
    assert [(lk.span_id, lk.attributes) for lk in chat.links] == [(root.span_id,
                                                                   {"why": "test"})]
    assert root.resource["service.name"] == "weather-app"
    assert (root.scope_name, root.scope_version) == ("my.instrumentation", "1.2.3")
    # And the decoded spans are what the builder needs.
    [run] = build_runs(Trace(root.trace_id, out.spans)).runs
    assert (run.target.entity_name, run.output[0].text) == ("weather", "Hello!")


def test_json_with_hex_ids_and_with_base64_ids_decode_the_same() -> None:
    request = encode_spans(_sdk_spans())
    from_pb = decode_traces_protobuf(request.SerializeToString()).spans
    as_json = MessageToDict(request)  # protobuf's own JSON: camelCase, base64 ids
    base64_spans = decode_json(as_json).spans
    for rs in as_json["resourceSpans"]:  # OTLP/JSON proper: hex ids
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64decode(s[key]).hex()
                for lk in s.get("links", []):
                    for key in ("traceId", "spanId"):
                        lk[key] = base64.b64decode(lk[key]).hex()
    hex_out = decode_json_bytes(json.dumps(as_json).encode())
    assert not hex_out.refused
    assert hex_out.spans == from_pb
    assert base64_spans == from_pb


def test_logs_from_the_sdk_encoder() -> None:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "weather-app"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    tracer_provider = TracerProvider()
    tracer = tracer_provider.get_tracer("t")
    logger = provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.3b0")
    with tracer.start_as_current_span("chat gpt-4o") as s:
        logger.emit(event_name="gen_ai.choice", attributes={"gen_ai.system": "openai"},
                    body={"index": 0, "finish_reason": "stop",
                          "message": {"content": "Hello!", "role": "assistant"}})
        ctx = s.get_span_context()
    logger.emit(event_name="no.trace", body="dropped: no trace to join")
    provider.shutdown()
    out = decode_logs_protobuf(encode_logs(exporter.get_finished_logs()).SerializeToString())
    assert out.refused == {"log_without_trace": 1}
    [log] = out.logs
    assert log.event_name == "gen_ai.choice"
    assert (log.trace_id, log.span_id) == (format(ctx.trace_id, "032x"),
                                           format(ctx.span_id, "016x"))
    assert log.body == {"index": 0, "finish_reason": "stop",
                        "message": {"content": "Hello!", "role": "assistant"}}
    assert log.scope_name == "opentelemetry.instrumentation.openai_v2"


def test_bad_ids_are_refused_and_counted_the_rest_kept() -> None:
    good = {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
            "name": "ok"}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        good,
        {**good, "traceId": "00000000000000000000000000000000", "name": "zero trace"},
        {**good, "spanId": "abc", "name": "short span"},
        {**good, "spanId": "zzzzzzzzzzzzzzzz", "name": "not hex"},
        {**good, "parentSpanId": "123", "name": "bad parent"},
    ]}]}]}
    out = decode_json(doc)
    assert [s.name for s in out.spans] == ["ok"]
    assert out.refused == {"bad_trace_id": 1, "bad_span_id": 2, "bad_parent_id": 1}


def test_malformed_protobuf_is_one_refusal() -> None:
    out = decode_traces_protobuf(b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert out.spans == [] and out.refused == {"malformed_protobuf": 1}


def test_invalid_utf8_in_protobuf_is_refused_not_raised() -> None:
    request = encode_spans(_sdk_spans())
    raw = "ünïcödé".encode()
    body = request.SerializeToString().replace(raw, b"\xff" * len(raw))  # same length
    assert body != request.SerializeToString()
    out = decode_traces_protobuf(body)
    assert out.refused == {"malformed_protobuf": 1}


def test_invalid_utf8_in_json_is_replaced_and_counted() -> None:
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": "chat", "attributes": [{"key": "gen_ai.operation.name",
                                        "value": {"stringValue": "chat"}},
                                       {"key": "note", "value": {"stringValue": "XX"}}]}]}]}]})
    out = decode_json_bytes(line.encode().replace(b"XX", b"\xffok"))
    assert out.refused == {"invalid_utf8": 1}
    [s] = out.spans
    assert s.attributes["note"] == "\ufffdok"


def test_deeply_nested_values_do_not_blow_the_stack() -> None:
    value: dict = {"stringValue": "bottom"}
    for _ in range(500):
        value = {"arrayValue": {"values": [value]}}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": "deep", "attributes": [{"key": "deep", "value": value}]}]}]}]}
    out = decode_json(doc)
    assert out.refused == {"too_deep": 1}
    assert [s.name for s in out.spans] == ["deep"]
    assert decode_json_bytes(b"[" * 200_000).refused == {"too_deep": 1}


def test_json_enums_as_names_and_int64_as_strings() -> None:
    out = decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": "x", "kind": "SPAN_KIND_CLIENT", "status": {"code": "STATUS_CODE_ERROR"},
        "startTimeUnixNano": "1796001578912937755",
        "attributes": [{"key": "n", "value": {"intValue": "9007199254740993"}}]}]}]}]})
    [s] = out.spans
    assert (s.kind, s.status_code, s.start_time_unix_nano) == ("CLIENT", "ERROR",
                                                               1796001578912937755)
    assert s.attributes["n"] == 9007199254740993


def test_not_otlp_json_is_refused() -> None:
    assert decode_json_bytes(b'{"hello": 1}').refused == {"not_otlp": 1}
    assert decode_json_bytes(b"{not json").refused == {"malformed_json": 1}
