"""The loopback OTLP capture server writes OTLP/JSON lines with hex ids (as the Collector does)."""

from __future__ import annotations

import gzip
import json
import sys
import urllib.request
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, str(Path(__file__).parent / "fakes"))

from otlp_capture import OtlpCaptureServer

TRACE_ID = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN_ID = bytes.fromhex("b7ad6b7169203331")
PARENT_ID = bytes.fromhex("00f067aa0ba902b7")


def _post(url: str, body: bytes, content_type: str, encoding: str | None = None) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    if encoding:
        request.add_header("Content-Encoding", encoding)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _trace_request() -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.parent_span_id = TRACE_ID, SPAN_ID, PARENT_ID
    span.name, span.kind = "chat gpt-4o", 3
    span.start_time_unix_nano = 1_700_000_000_000_000_000
    attr = span.attributes.add()
    attr.key, attr.value.bytes_value = "blob", b"\x00\x01"
    link = span.links.add()
    link.trace_id, link.span_id = TRACE_ID, PARENT_ID
    return req


def test_protobuf_gzip_and_json_requests_become_identical_otlp_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "c.otlp.jsonl"
    with OtlpCaptureServer(out) as server:
        body = _trace_request().SerializeToString()
        assert _post(f"{server.endpoint}/v1/traces", body, "application/x-protobuf") == 200
        assert _post(f"{server.endpoint}/v1/traces", gzip.compress(body), "application/x-protobuf", "gzip") == 200
        first = json.loads(out.read_text().splitlines()[0])
        assert _post(f"{server.endpoint}/v1/traces", json.dumps(first).encode(), "application/json") == 200
        logs = ExportLogsServiceRequest()
        record = logs.resource_logs.add().scope_logs.add().log_records.add()
        record.trace_id, record.span_id, record.event_name = TRACE_ID, SPAN_ID, "gen_ai.choice"
        assert _post(f"{server.endpoint}/v1/logs", logs.SerializeToString(), "application/x-protobuf") == 200
        assert _post(f"{server.endpoint}/v1/metrics", b"", "application/x-protobuf") == 200
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4  # metrics are dropped
    span = lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == TRACE_ID.hex()
    assert span["spanId"] == SPAN_ID.hex()
    assert span["parentSpanId"] == PARENT_ID.hex()
    assert span["links"][0]["spanId"] == PARENT_ID.hex()
    assert span["kind"] == 3  # enum as int, per OTLP JSON
    assert span["startTimeUnixNano"] == "1700000000000000000"  # int64 as string
    assert span["attributes"][0]["value"] == {"bytesValue": "AAE="}  # bytes values stay base64
    assert lines[1] == lines[0] == lines[2]
    log = lines[3]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert (log["traceId"], log["spanId"], log["eventName"]) == (TRACE_ID.hex(), SPAN_ID.hex(), "gen_ai.choice")


def test_garbage_is_refused_and_counted_without_a_line(tmp_path: Path) -> None:
    out = tmp_path / "c.otlp.jsonl"
    with OtlpCaptureServer(out) as server:
        assert _post(f"{server.endpoint}/v1/traces", b"\xff\xfe not protobuf", "application/x-protobuf") == 400
        assert _post(f"{server.endpoint}/v1/traces", b"{not json", "application/json") == 400
        assert _post(f"{server.endpoint}/v1/nope", b"", "application/x-protobuf") == 404
    assert server.refused == 2
    assert out.read_text() == ""


def test_chunked_request_bodies_are_read_whole(tmp_path: Path) -> None:
    # Node's OTLP exporters (Mastra) send chunked bodies without Content-Length.
    import http.client

    out = tmp_path / "c.otlp.jsonl"
    body = _trace_request().SerializeToString()
    with OtlpCaptureServer(out) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request(
            "POST",
            "/v1/traces",
            body=iter([body[:7], body[7:]]),
            headers={"Content-Type": "application/x-protobuf"},
            encode_chunked=True,
        )
        assert conn.getresponse().status == 200
        conn.close()
    span = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["name"], span["spanId"]) == ("chat gpt-4o", SPAN_ID.hex())
