"""OTLP/JSON request bodies -> the same requests in binary protobuf (what the pass-through sends
on: the next collector always receives protobuf)."""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

__all__ = ["Signal", "json_to_protobuf"]

Signal = Literal["traces", "logs"]

_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _ids_to_base64(obj: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex; proto3 JSON `bytes` are base64: convert in place."""
    for key in _ID_FIELDS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _each(obj: dict[str, Any], *keys: str) -> list[Any]:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, list):
            return value
    return []


def json_to_protobuf(body: bytes, signal: Signal) -> bytes:
    """An OTLP/JSON request body as the same request in binary protobuf.

    OTLP/JSON differs from proto3 JSON only in ids (hex, not base64); enum numbers, camelCase
    or snake_case names and int64 as strings or numbers are proto3 JSON already. Unknown fields
    are ignored, as OTLP receivers must.

    Raises:
        ValueError: the body is not an OTLP/JSON request of `signal` (e.g. an id not in hex).
    """
    doc = json.loads(body)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if signal == "traces":
        for rs in _each(doc, "resourceSpans", "resource_spans"):
            for ss in _each(rs, "scopeSpans", "scope_spans") if isinstance(rs, dict) else []:
                for span in _each(ss, "spans") if isinstance(ss, dict) else []:
                    if isinstance(span, dict):
                        _ids_to_base64(span)
                        for link in _each(span, "links"):
                            if isinstance(link, dict):
                                _ids_to_base64(link)
        request: Any = trace_service_pb2.ExportTraceServiceRequest()
    else:
        for rl in _each(doc, "resourceLogs", "resource_logs"):
            for sl in _each(rl, "scopeLogs", "scope_logs") if isinstance(rl, dict) else []:
                for record in _each(sl, "logRecords", "log_records") if isinstance(sl, dict) \
                        else []:
                    if isinstance(record, dict):
                        _ids_to_base64(record)
        request = logs_service_pb2.ExportLogsServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None
    return bytes(request.SerializeToString())
