"""OTLP decoding from what the official OTel SDK encoder produces (protobuf), and the same
requests as OTLP/JSON (hex ids per the spec; base64 ids as protobuf's json_format writes)."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator

import pytest
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
from transforms import Span, Trace, build_runs


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


# --------------------------------------------------------------------------- proto3 JSON rules

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def _doc(**span: object) -> dict:  # type: ignore[type-arg]
    """A request whose fourth span (resourceSpans[0].scopeSpans[1].spans[3]) is `span`."""
    good = {"traceId": TRACE, "spanId": SPAN, "name": "ok"}
    return {"resourceSpans": [{"scopeSpans": [
        {"scope": {"name": "a"}, "spans": [good]},
        {"scope": {"name": "b"}, "spans": [good, good, good, {**good, **span}]}]}]}


AT = "resourceSpans[0].scopeSpans[1].spans[3]"


@pytest.mark.parametrize(("doc", "message"), [
    ({"resourceSpans": 5}, "resourceSpans: expected an array, got a number"),
    ({"resourceSpans": "x"}, 'resourceSpans: expected an array, got the string "x"'),
    ({"resourceSpans": [5]}, "resourceSpans[0]: expected a ResourceSpans object, got a number"),
    ({"resourceSpans": [{"scopeSpans": {}}]},
     "resourceSpans[0].scopeSpans: expected an array, got an object"),
    ({"resourceSpans": [{"resource": []}]},
     "resourceSpans[0].resource: expected an object, got an array"),
    ({"resourceSpans": [{"resource": {"attributes": [{"key": 1}]}}]},
     "resourceSpans[0].resource.attributes[0].key: expected a string, got a number"),
    ({"resourceSpans": [{"scopeSpans": [{"scope": {"name": 7}}]}]},
     "resourceSpans[0].scopeSpans[0].scope.name: expected a string, got a number"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [None]}]}]},
     "resourceSpans[0].scopeSpans[0].spans[0]: expected a Span object, got null"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": ["span"]}]}]},
     'resourceSpans[0].scopeSpans[0].spans[0]: expected a Span object, got the string "span"'),
    (_doc(traceId=5), f"{AT}.traceId: expected a hex string, got a number"),
    (_doc(spanId=[SPAN]), f"{AT}.spanId: expected a hex string, got an array"),
    (_doc(parentSpanId=True), f"{AT}.parentSpanId: expected a hex string, got a boolean"),
    (_doc(name={}), f"{AT}.name: expected a string, got an object"),
    (_doc(startTimeUnixNano="soon"),
     f'{AT}.startTimeUnixNano: expected a uint64 (a JSON number or a decimal string), '
     'got the string "soon"'),
    (_doc(endTimeUnixNano="1.5"), f"{AT}.endTimeUnixNano: expected a uint64"),
    (_doc(endTimeUnixNano=-1), f"{AT}.endTimeUnixNano: expected a uint64 (a JSON number or a "
                               "decimal string), got the number -1"),
    (_doc(startTimeUnixNano=str(1 << 64)), f"{AT}.startTimeUnixNano: expected a uint64"),
    (_doc(kind="SPAN_KIND_SIDEWAYS"), f'{AT}.kind: expected a SpanKind name or an int32 number, '
                                      'got the string "SPAN_KIND_SIDEWAYS"'),
    (_doc(kind=2.5), f"{AT}.kind: expected a SpanKind name"),
    (_doc(status="ERROR"), f'{AT}.status: expected an object, got the string "ERROR"'),
    (_doc(status={"code": True}), f"{AT}.status.code: expected a StatusCode name"),
    (_doc(status={"message": 3}), f"{AT}.status.message: expected a string, got a number"),
    (_doc(attributes="k=v"), f'{AT}.attributes: expected an array, got the string "k=v"'),
    (_doc(attributes=[["k", "v"]]), f"{AT}.attributes[0]: expected a KeyValue object, got an "
                                    "array"),
    (_doc(attributes=[{"key": "k", "value": "v"}]),
     f'{AT}.attributes[0].value: expected an AnyValue object, got the string "v"'),
    (_doc(attributes=[{"key": "k", "value": {"stringValue": 5}}]),
     f"{AT}.attributes[0].value.stringValue: expected a string, got a number"),
    (_doc(attributes=[{"key": "k", "value": {"intValue": "12abc"}}]),
     f"{AT}.attributes[0].value.intValue: expected an int64"),
    (_doc(attributes=[{"key": "k", "value": {"boolValue": "true"}}]),
     f'{AT}.attributes[0].value.boolValue: expected true or false, got the string "true"'),
    (_doc(attributes=[{"key": "k", "value": {"doubleValue": "fast"}}]),
     f"{AT}.attributes[0].value.doubleValue: expected a double"),
    (_doc(attributes=[{"key": "k", "value": {"bytesValue": "not base64!"}}]),
     f"{AT}.attributes[0].value.bytesValue: expected a base64 string"),
    (_doc(attributes=[{"key": "k", "value": {"stringValue": "a", "intValue": "1"}}]),
     f"{AT}.attributes[0].value: expected one value in an AnyValue, not both"),
    (_doc(attributes=[{"key": "k", "value": {"arrayValue": [1]}}]),
     f"{AT}.attributes[0].value.arrayValue: expected an ArrayValue object, got an array"),
    (_doc(attributes=[{"key": "k", "value": {"arrayValue": {"values": [
        {"stringValue": "a"}, None]}}}]),
     f"{AT}.attributes[0].value.arrayValue.values[1]: expected an AnyValue object, got null"),
    (_doc(attributes=[{"key": "k", "value": {"kvlistValue": {"values": [
        {"key": "x", "value": {"intValue": 1.5}}]}}}]),
     f"{AT}.attributes[0].value.kvlistValue.values[0].value.intValue: expected an int64"),
    (_doc(events={"name": "e"}), f"{AT}.events: expected an array, got an object"),
    (_doc(events=[{"name": "e", "timeUnixNano": "later"}]), f"{AT}.events[0].timeUnixNano"),
    (_doc(links=[{"traceId": TRACE, "spanId": 8}]),
     f"{AT}.links[0].spanId: expected a hex string, got a number"),
    (_doc(flags="sampled"), f"{AT}.flags: expected a uint32"),
    (_doc(droppedAttributesCount=-3), f"{AT}.droppedAttributesCount: expected a uint32"),
    (_doc(traceState=1), f"{AT}.traceState: expected a string, got a number"),
    ({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": TRACE, "body": "hi"}]}]}]},
     'resourceLogs[0].scopeLogs[0].logRecords[0].body: expected an AnyValue object, got the '
     'string "hi"'),
    ({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": TRACE,
                                                       "severityNumber": "LOUD"}]}]}]},
     "resourceLogs[0].scopeLogs[0].logRecords[0].severityNumber: expected a SeverityNumber"),
    ({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": 1}]}]}]},
     "resourceLogs[0].scopeLogs[0].logRecords[0].traceId: expected a hex string, got a number"),
    ({"resourceLogs": [{"scopeLogs": {}}]},
     "resourceLogs[0].scopeLogs: expected an array, got an object"),
])
def test_a_field_of_the_wrong_type_makes_the_request_malformed(doc: dict,  # type: ignore[type-arg]
                                                               message: str) -> None:
    out = decode_json(doc)
    assert out.refused == {"malformed_json": 1}
    assert out.spans == [] and out.logs == []
    [error] = out.errors
    assert error.startswith(f"malformed_json: {message}")
    # The same through the bytes decoder (what the receivers and `scorecar inspect` call).
    assert decode_json_bytes(json.dumps(doc).encode()).errors == [error]


def test_the_path_names_the_fields_as_the_request_spells_them() -> None:
    doc = {"resource_spans": [{"scope_spans": [{"spans": [
        {"trace_id": TRACE, "span_id": SPAN, "start_time_unix_nano": "x"}]}]}]}
    assert decode_json(doc).errors == [
        "malformed_json: resource_spans[0].scope_spans[0].spans[0].start_time_unix_nano: "
        'expected a uint64 (a JSON number or a decimal string), got the string "x"']


def test_a_malformed_request_keeps_nothing_not_even_earlier_refusals() -> None:
    doc = _doc(attributes=5)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append({"traceId": "abc", "spanId": SPAN})
    out = decode_json_bytes(json.dumps(doc).encode())
    assert (out.spans, dict(out.refused)) == ([], {"malformed_json": 1})
    # A span dropped for its id is still checked: a wrong type in it is malformed too.
    assert decode_json(_doc(traceId="abc", kind={})).refused == {"malformed_json": 1}
    # Invalid UTF-8 was already counted (the bad bytes were replaced) before the type error.
    body = json.dumps(_doc(name="XX", kind="?")).encode().replace(b"XX", b"\xff")
    assert decode_json_bytes(body).refused == {"invalid_utf8": 1, "malformed_json": 1}


def test_ids_that_are_strings_but_no_ids_still_only_drop_their_span() -> None:
    out = decode_json(_doc(spanId="not-an-id", links=[{"traceId": "zz", "spanId": SPAN}]))
    assert [s.name for s in out.spans] == ["ok", "ok", "ok", "ok"]
    assert out.refused == {"bad_span_id": 1}
    # A link with a bad id string loses only the link.
    [span] = decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": TRACE, "spanId": SPAN, "links": [{"traceId": "zz", "spanId": SPAN},
                                                     {"traceId": TRACE, "spanId": SPAN}]}]}]}]}
    ).spans
    assert [(lk.trace_id, lk.span_id) for lk in span.links] == [(TRACE, SPAN)]


def _one_span(**fields: object) -> Span:
    out = decode_json({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": TRACE, "spanId": SPAN, **fields}]}]}]})
    assert not out.refused, out.errors
    [span] = out.spans
    return span


def _attr(value: object) -> object:
    return _one_span(attributes=[{"key": "k", "value": value}]).attributes["k"]


def test_64_bit_integers_as_numbers_or_decimal_strings() -> None:
    span = _one_span(startTimeUnixNano="1796001578912937755", endTimeUnixNano=1796001578912937984,
                     flags="257", droppedAttributesCount=0,
                     events=[{"name": "e", "timeUnixNano": 1.5e9}])
    assert (span.start_time_unix_nano, span.end_time_unix_nano) == (1796001578912937755,
                                                                    1796001578912937984)
    assert span.events[0].time_unix_nano == 1_500_000_000
    assert _attr({"intValue": "-9223372036854775808"}) == -(1 << 63)
    assert _attr({"intValue": 42}) == 42 and _attr({"intValue": 4.0}) == 4
    assert _attr({"doubleValue": 0.5}) == 0.5 and _attr({"doubleValue": "2.5e3"}) == 2500.0
    assert _attr({"doubleValue": 3}) == 3.0
    assert math.isnan(_attr({"doubleValue": "NaN"}))  # type: ignore[arg-type]
    assert _attr({"doubleValue": "-Infinity"}) == -math.inf
    for bad in ("9223372036854775808", "1e3", " 12", "+5", "", "0x10"):
        out = decode_json(_doc(attributes=[{"key": "k", "value": {"intValue": bad}}]))
        assert out.refused == {"malformed_json": 1}, bad


def test_enums_by_name_or_number() -> None:
    assert _one_span(kind="SPAN_KIND_CLIENT").kind == "CLIENT"
    assert _one_span(kind=3).kind == "CLIENT"
    assert _one_span(kind=99).kind == "UNSPECIFIED"  # proto3 enums are open: unknown numbers
    assert _one_span(status={"code": "STATUS_CODE_ERROR"}).status_code == "ERROR"
    assert _one_span(status={"code": 1}).status_code == "OK"
    logs = decode_json({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": TRACE, "severityNumber": "SEVERITY_NUMBER_WARN"},
        {"traceId": TRACE, "severityNumber": 13}]}]}]})
    assert not logs.refused and len(logs.logs) == 2


def test_snake_case_field_names_decode_like_camel_case() -> None:
    request = encode_spans(_sdk_spans())
    snake = MessageToDict(request, preserving_proto_field_name=True)  # base64 ids, snake_case
    assert "resource_spans" in snake
    out = decode_json(snake)
    assert not out.refused
    assert out.spans == decode_traces_protobuf(request.SerializeToString()).spans
    logs = decode_json({"resource_logs": [{"scope_logs": [{"log_records": [{
        "trace_id": TRACE, "span_id": SPAN, "event_name": "e", "time_unix_nano": "5",
        "severity_text": "INFO", "body": {"kvlist_value": {"values": [
            {"key": "n", "value": {"int_value": "3"}},
            {"key": "b", "value": {"bytes_value": "AQI="}}]}}}]}]}]})
    [log] = logs.logs
    assert (log.event_name, log.time_unix_nano, log.severity_text, log.body) == (
        "e", 5, "INFO", {"n": 3, "b": b"\x01\x02"})


def test_null_is_the_default_and_unknown_fields_are_ignored() -> None:
    span = _one_span(name=None, kind=None, parentSpanId=None, startTimeUnixNano=None,
                     attributes=None, events=None, links=None, status=None, flags=None,
                     traceState=None, somethingNew={"from": "a later proto"})
    assert (span.name, span.kind, span.parent_span_id, span.start_time_unix_nano) == (
        "", "UNSPECIFIED", None, 0)
    assert (span.attributes, span.events, span.links, span.status_code) == ({}, [], [], "UNSET")
    assert _one_span(status={"code": None, "message": None}).status_message == ""
    assert _attr(None) is None and _attr({}) is None
    assert _attr({"stringValue": None, "intValue": "7"}) == 7  # a null member is unset
    assert _attr({"stringValue": "s", "futureValue": 1}) == "s"
    assert _one_span(attributes=[{"key": None, "value": {"stringValue": "v"}}]).attributes == {
        "": "v"}
    out = decode_json({"resourceSpans": [{"resource": None, "scopeSpans": [
        {"scope": None, "spans": [{"traceId": TRACE, "spanId": SPAN}], "schemaUrl": None}]}],
        "resourceLogs": None})
    assert [s.scope_name for s in out.spans] == [""] and not out.refused


_WRONG = (5, -1, 2.5, "x", "", True, None, [], [5], {}, {"x": 1})


def _mutations(node: object) -> Iterator[tuple[object, object]]:
    """Every (copy of the document with one node replaced, replacement)."""
    if isinstance(node, dict):
        for key, child in node.items():
            for wrong in _WRONG:
                yield {**node, key: wrong}, wrong
            for changed, wrong in _mutations(child):
                yield {**node, key: changed}, wrong
    elif isinstance(node, list):
        for i, child in enumerate(node):
            for wrong in _WRONG:
                yield node[:i] + [wrong] + node[i + 1:], wrong
            for changed, wrong in _mutations(child):
                yield node[:i] + [changed] + node[i + 1:], wrong


def test_any_value_of_any_type_anywhere_never_raises() -> None:
    request = MessageToDict(encode_spans(_sdk_spans()))
    doc = {"resourceSpans": request["resourceSpans"][:1]}
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = doc["resourceSpans"][0]["scopeSpans"][0][
        "spans"][:1]
    baseline = decode_json(doc)
    assert not baseline.refused and len(baseline.spans) == 1
    n = 0
    for changed, _ in _mutations(doc):
        n += 1
        out = decode_json(changed)  # must not raise
        if out.refused.get("malformed_json"):
            assert (out.spans, len(out.refused)) == ([], 1)
            assert out.errors[0].startswith("malformed_json: resourceSpans")
    assert n > 500
