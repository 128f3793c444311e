"""The OTLP/HTTP receiver against the official OTel HTTP exporters and a raw aiohttp client."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult

from collector._telemetry import Metrics
from collector.intake import Overloaded
from collector.otlp import decode_json_bytes, decode_traces_protobuf
from collector.receivers import HttpReceiver
from tests.fakes.metrics import sample
from tests.fakes.sdk_telemetry import make_logs, make_spans
from tests.fakes.sinks import RecordingSink

PB = "application/x-protobuf"
JSON = "application/json"
TRACE_ID = "0102030405060708090a0b0c0d0e0f10"


class Running:
    def __init__(self, receiver: HttpReceiver, port: int, sink: RecordingSink,
                 metrics: Metrics, session: aiohttp.ClientSession) -> None:
        self.receiver, self.port, self.sink, self.metrics = receiver, port, sink, metrics
        self.session = session
        self.base = f"http://127.0.0.1:{port}"

    def refused(self, reason: str) -> float:
        return sample(self.metrics, "scorecar_spans_refused_total", reason=reason)

    def received(self) -> float:
        return sample(self.metrics, "scorecar_spans_received_total", transport="http")

    async def post(self, path: str, body: bytes | AsyncIterator[bytes], content_type: str = PB,
                   headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        async with self.session.post(self.base + path, data=body, headers={
                "Content-Type": content_type, **(headers or {})}) as resp:
            return resp.status, dict(resp.headers), await resp.read()


async def _start(max_mib: float = 64) -> tuple[HttpReceiver, int, RecordingSink, Metrics]:
    sink, metrics = RecordingSink(), Metrics()
    receiver = HttpReceiver(sink, metrics, endpoint="127.0.0.1:0", max_recv_msg_size_mib=max_mib)
    return receiver, await receiver.start(), sink, metrics


@pytest.fixture
async def rx() -> AsyncIterator[Running]:
    receiver, port, sink, metrics = await _start()
    async with aiohttp.ClientSession() as session:
        yield Running(receiver, port, sink, metrics, session)
    await receiver.stop()


@pytest.fixture
async def small() -> AsyncIterator[Running]:
    """A receiver with a 64 KiB limit."""
    receiver, port, sink, metrics = await _start(max_mib=1 / 16)
    async with aiohttp.ClientSession() as session:
        yield Running(receiver, port, sink, metrics, session)
    await receiver.stop()


def _json_request(*spans: dict[str, object]) -> bytes:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name",
                                     "value": {"stringValue": "agent-under-test"}}]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}).encode()


def _json_span(span_id: str = "0102030405060708", **extra: object) -> dict[str, object]:
    return {"traceId": TRACE_ID, "spanId": span_id, "name": "chat", "kind": 3,
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}],
            **extra}


def _pb_request(name: str = "chat") -> bytes:
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(
        spans=[Span(trace_id=bytes.fromhex(TRACE_ID), span_id=b"\x01" * 8, name=name)])])]
    ).SerializeToString()


def _status(body: bytes, content_type: str = PB) -> status_pb2.Status:
    if content_type == JSON:
        doc = json.loads(body)
        return status_pb2.Status(code=doc.get("code", 0), message=doc.get("message", ""))
    return status_pb2.Status.FromString(body)


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
async def test_spans_from_the_official_exporter_arrive(rx: Running,
                                                       compression: Compression) -> None:
    spans = make_spans(3)
    exporter = OTLPSpanExporter(endpoint=rx.base + "/v1/traces", timeout=5,
                                compression=compression)
    try:
        assert await asyncio.to_thread(exporter.export, spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    [call] = rx.sink.calls
    assert call.transport == "http" and call.kind == "traces_protobuf"
    got = {s.span_id: s for s in call.decoded.spans}
    for sdk in spans:
        span = got[f"{sdk.context.span_id:016x}"]
        assert span.trace_id == f"{sdk.context.trace_id:032x}"
        assert span.attributes == dict(sdk.attributes or {})
    assert decode_traces_protobuf(call.body).spans == call.decoded.spans  # inflated body
    assert rx.received() == 3


async def test_log_records_from_the_official_exporter_arrive(rx: Running) -> None:
    records = make_logs()
    exporter = OTLPLogExporter(endpoint=rx.base + "/v1/logs", timeout=5)
    try:
        assert await asyncio.to_thread(exporter.export, records) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    [call] = rx.sink.calls
    assert call.kind == "logs_protobuf"
    assert call.decoded.logs[0].trace_id == f"{records[0].log_record.trace_id:032x}"


@pytest.mark.parametrize("encoding", ["", "gzip", "deflate"])
async def test_json_spans_arrive_and_the_answer_is_json(rx: Running, encoding: str) -> None:
    body = _json_request(_json_span())
    headers = {}
    if encoding:
        body = gzip.compress(body) if encoding == "gzip" else zlib.compress(body)
        headers["Content-Encoding"] = encoding
    status, resp_headers, answer = await rx.post("/v1/traces", body, JSON, headers)
    assert status == 200 and resp_headers["Content-Type"].startswith(JSON)
    assert json.loads(answer) == {}
    [call] = rx.sink.calls
    assert call.kind == "traces_json"
    [span] = call.decoded.spans
    assert (span.trace_id, span.span_id, span.kind) == (TRACE_ID, "0102030405060708", "CLIENT")
    assert span.attributes == {"gen_ai.usage.input_tokens": 12}
    assert decode_json_bytes(call.body).spans == [span]


async def test_json_log_records_arrive(rx: Running) -> None:
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "traceId": TRACE_ID, "spanId": "0102030405060708", "eventName": "e",
        "body": {"stringValue": "hi"}}]}]}]}).encode()
    status, _, _ = await rx.post("/v1/logs", body, JSON)
    assert status == 200
    assert [(r.event_name, r.body) for r in rx.sink.logs] == [("e", "hi")]
    assert rx.sink.calls[0].kind == "logs_json"


async def test_spans_with_bad_ids_are_rejected_in_partial_success(rx: Running) -> None:
    body = _json_request(_json_span(), _json_span(span_id="xyz"))
    status, _, answer = await rx.post("/v1/traces", body, JSON)
    assert status == 200
    partial = json.loads(answer)["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "bad_span_id" in partial["errorMessage"]
    assert len(rx.sink.spans) == 1
    assert rx.refused("bad_span_id") == 1 and rx.received() == 1


async def test_partial_success_is_protobuf_for_protobuf_requests(rx: Running) -> None:
    req = ExportTraceServiceRequest.FromString(_pb_request())
    req.resource_spans[0].scope_spans[0].spans.add(trace_id=b"\x00" * 16, span_id=b"\x02" * 8)
    status, headers, answer = await rx.post("/v1/traces", req.SerializeToString())
    assert status == 200 and headers["Content-Type"].startswith(PB)
    assert ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans == 1


async def test_bodies_over_a_few_mib_are_accepted(rx: Running) -> None:
    status, _, _ = await rx.post("/v1/traces", _pb_request("x" * (3 << 20)))
    assert status == 200 and len(rx.sink.spans[0].name) == 3 << 20


@pytest.mark.parametrize(("body", "content_type", "says"), [
    (b"\x0a\xff\xff\xff", PB, "did not parse"),
    (b"{not json", JSON, "not JSON"),
    (b"[1, 2]", JSON, "object"),
    (b'{"resourceSpans": 5}', JSON, "resourceSpans: expected an array, got a number"),
])
async def test_a_malformed_body_is_400_with_a_status_in_the_request_encoding(
        rx: Running, body: bytes, content_type: str, says: str) -> None:
    status, headers, answer = await rx.post("/v1/traces", body, content_type)
    assert status == 400 and headers["Content-Type"].startswith(content_type)
    st = _status(answer, content_type)
    assert st.code == code_pb2.INVALID_ARGUMENT and says in st.message
    assert rx.refused("malformed") == 1 and rx.sink.calls == []


AT = "resourceSpans[0].scopeSpans[0].spans[1]"


@pytest.mark.parametrize(("fields", "says"), [
    ({"traceId": 5}, f"{AT}.traceId: expected a hex string, got a number"),
    ({"name": {"text": "chat"}}, f"{AT}.name: expected a string, got an object"),
    ({"startTimeUnixNano": "yesterday"},
     f'{AT}.startTimeUnixNano: expected a uint64 (a JSON number or a decimal string), '
     'got the string "yesterday"'),
    ({"attributes": "gen_ai.system=openai"},
     f'{AT}.attributes: expected an array, got the string "gen_ai.system=openai"'),
    ({"attributes": [{"key": "n", "value": 12}]},
     f"{AT}.attributes[0].value: expected an AnyValue object, got a number"),
    ({"attributes": [{"key": "n", "value": {"intValue": "twelve"}}]},
     f"{AT}.attributes[0].value.intValue: expected an int64"),
    ({"kind": "SPAN_KIND_SIDEWAYS"}, f"{AT}.kind: expected a SpanKind name"),
    ({"status": {"code": "bad"}}, f"{AT}.status.code: expected a StatusCode name"),
    ({"events": [{"name": "e", "timeUnixNano": []}]}, f"{AT}.events[0].timeUnixNano"),
])
async def test_a_json_field_of_the_wrong_type_is_400_naming_the_field(
        rx: Running, fields: dict[str, object], says: str) -> None:
    # One good span before the bad one: the request is refused whole, nothing is kept.
    body = _json_request(_json_span(), _json_span(span_id="0102030405060709", **fields))
    status, headers, answer = await rx.post("/v1/traces", body, JSON)
    assert status == 400 and headers["Content-Type"].startswith(JSON)
    st = _status(answer, JSON)
    assert st.code == code_pb2.INVALID_ARGUMENT and says in st.message
    assert rx.refused("malformed") == 1 and rx.sink.calls == [] and rx.received() == 0


async def test_wrong_types_are_400_on_the_logs_endpoint_too_even_after_bad_utf8(
        rx: Running) -> None:
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": TRACE_ID, "body": {"stringValue": "XX"}},
        {"traceId": TRACE_ID, "severityText": 9}]}]}]}).encode().replace(b"XX", b"\xff")
    status, _, answer = await rx.post("/v1/logs", body, JSON)
    assert status == 400
    assert ("resourceLogs[0].scopeLogs[0].logRecords[1].severityText: expected a string, "
            "got a number") in _status(answer, JSON).message
    assert rx.refused("malformed") == 1 and rx.sink.calls == []


async def test_proto3_json_spellings_are_accepted(rx: Running) -> None:
    span = {"trace_id": TRACE_ID, "span_id": "0102030405060708", "name": "chat",
            "kind": "SPAN_KIND_CLIENT", "start_time_unix_nano": 1700000000000000000,
            "end_time_unix_nano": "1700000001000000000", "status": None, "parentSpanId": None,
            "attributes": [{"key": "n", "value": {"int_value": 12}}], "newField": [1]}
    body = json.dumps({"resource_spans": [{"scope_spans": [{"spans": [span]}]}]}).encode()
    status, _, answer = await rx.post("/v1/traces", body, JSON)
    assert (status, json.loads(answer)) == (200, {})
    [got] = rx.sink.spans
    assert (got.kind, got.start_time_unix_nano, got.attributes) == (
        "CLIENT", 1700000000000000000, {"n": 12})


async def test_a_json_body_of_the_other_signal_is_refused(rx: Running) -> None:
    status, _, answer = await rx.post("/v1/logs", _json_request(_json_span()), JSON)
    assert status == 400
    assert "/v1/traces" in _status(answer, JSON).message
    assert rx.sink.calls == []


async def test_an_empty_json_object_is_an_empty_request(rx: Running) -> None:
    status, _, answer = await rx.post("/v1/traces", b"{}", JSON)
    assert (status, json.loads(answer)) == (200, {})
    assert rx.sink.calls == [] and rx.refused("not_otlp") == 0


async def test_a_broken_gzip_body_is_400(rx: Running) -> None:
    status, _, answer = await rx.post("/v1/traces", b"\x1f\x8b not really gzip",
                                      headers={"Content-Encoding": "gzip"})
    assert status == 400 and "inflate" in _status(answer).message
    truncated = gzip.compress(_pb_request())[:-12]
    status, _, answer = await rx.post("/v1/traces", truncated, headers={"Content-Encoding": "gzip"})
    assert status == 400 and "truncated" in _status(answer).message
    assert rx.refused("malformed") == 2


async def test_a_body_cut_short_by_the_client_is_counted_not_an_error(
        rx: Running, caplog: pytest.LogCaptureFixture) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", rx.port)
    writer.write(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: " + PB.encode()
                 + b"\r\nContent-Length: 100\r\n\r\n0123456789")
    await writer.drain()
    writer.write_eof()
    await asyncio.wait_for(reader.read(), timeout=5)
    writer.close()
    for _ in range(100):
        if rx.refused("malformed"):
            break
        await asyncio.sleep(0.01)
    assert rx.refused("malformed") == 1 and rx.sink.calls == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_other_content_types_and_encodings_are_415(rx: Running) -> None:
    status, _, answer = await rx.post("/v1/traces", b"hello", "text/plain")
    assert status == 415 and "text/plain" in _status(answer).message
    status, _, _ = await rx.post("/v1/traces", _pb_request(), headers={"Content-Encoding": "br"})
    assert status == 415
    assert rx.refused("unsupported_media_type") == 2 and rx.sink.calls == []


async def test_other_paths_and_methods_are_404_and_405(rx: Running) -> None:
    async with rx.session.get(rx.base + "/v1/traces") as resp:
        assert resp.status == 405
    async with rx.session.post(rx.base + "/v1/metrics", data=b"") as resp:
        assert resp.status == 404


async def test_a_body_over_the_limit_is_413_by_content_length(small: Running) -> None:
    status, _, answer = await small.post("/v1/traces", _pb_request("x" * 70_000))
    assert status == 413
    st = _status(answer)
    assert st.code == code_pb2.RESOURCE_EXHAUSTED and "Content-Length" in st.message
    assert small.refused("oversized") == 1 and small.sink.calls == []


async def test_a_chunked_body_over_the_limit_is_413_while_reading(small: Running) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"\x00" * 8192

    status, _, _ = await small.post("/v1/traces", chunks())
    assert status == 413 and small.refused("oversized") == 1


async def test_a_gzip_bomb_is_413_without_inflating_it(small: Running) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    bomb = b"".join(packer.compress(block) for _ in range(48)) + packer.flush()  # 48 MiB
    assert len(bomb) < small.receiver.max_bytes  # small on the wire
    status, _, answer = await small.post("/v1/traces", bomb, headers={"Content-Encoding": "gzip"})
    assert status == 413 and "inflated" in _status(answer).message
    assert small.refused("oversized") == 1 and small.sink.calls == []
    # Still serving, and a small gzip body passes.
    status, _, _ = await small.post("/v1/traces", gzip.compress(_pb_request()),
                                    headers={"Content-Encoding": "gzip"})
    assert status == 200 and len(small.sink.spans) == 1


async def test_overloaded_is_503_with_retry_after_and_counted(rx: Running) -> None:
    rx.sink.overloaded = Overloaded("queue_full", retry_after=2.5)
    status, headers, answer = await rx.post("/v1/traces", _pb_request())
    assert status == 503 and headers["Retry-After"] == "3"
    st = _status(answer)
    info = error_details_pb2.RetryInfo()
    assert st.code == code_pb2.UNAVAILABLE and st.details[0].Unpack(info)
    assert info.retry_delay.seconds == 3
    rx.sink.overloaded = Overloaded("memory", retry_after=0.1)
    status, headers, _ = await rx.post("/v1/traces", _json_request(_json_span()), JSON)
    assert status == 503 and headers["Retry-After"] == "1"
    assert rx.refused("queue_full") == 1 and rx.refused("memory") == 1
    assert rx.sink.calls == []


async def test_an_unexpected_sink_error_is_503_and_counted(rx: Running) -> None:
    rx.sink.accept_error = RuntimeError("disk on fire")
    status, headers, answer = await rx.post("/v1/traces", _pb_request())
    assert status == 503 and int(headers["Retry-After"]) >= 1
    assert "disk on fire" not in _status(answer).message
    assert rx.refused("internal") == 1
    rx.sink.accept_error = None
    status, _, _ = await rx.post("/v1/traces", _pb_request())
    assert status == 200 and rx.received() == 1


async def test_stop_is_idempotent_and_safe_without_start() -> None:
    receiver = HttpReceiver(RecordingSink(), Metrics(), endpoint="127.0.0.1:0")
    await receiver.stop()
    port = await receiver.start()
    await receiver.stop()
    await receiver.stop()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.post(f"http://127.0.0.1:{port}/v1/traces", data=b"")
