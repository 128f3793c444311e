"""Protobuf OTLP requests -> `Decoded`: traces (decoded, or only scanned on the request path)
and logs. A body that does not parse is one `malformed_protobuf` refusal; a span or log record
with bad ids is refused alone and counted."""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from collector.otlp._decoded import (
    _KIND_NAMES,
    _STATUS_NAMES,
    _TOO_DEEP,
    MAX_VALUE_DEPTH,
    Decoded,
)
from transforms.reasons import Reason
from transforms.types import LogEvent, Span, SpanEvent, SpanLink

__all__ = ["decode_logs_protobuf", "decode_traces_protobuf", "scan_traces_protobuf"]

_SCALARS = frozenset({"string_value", "int_value", "bool_value", "double_value", "bytes_value"})


def _pb_value(v: AnyValue, depth: int, out: Decoded) -> Any:
    which = v.WhichOneof("value")
    if which in _SCALARS:
        return getattr(v, which)
    if which is None:
        return None
    if depth >= MAX_VALUE_DEPTH:
        out.refuse(Reason.TOO_DEEP, f"attribute value nested deeper than {MAX_VALUE_DEPTH}")
        return _TOO_DEEP
    depth += 1
    # Scalar members inlined (one WhichOneof each): maps and arrays of strings are common.
    if which == "array_value":
        items = []
        for x in v.array_value.values:
            w = x.WhichOneof("value")
            items.append(getattr(x, w) if w in _SCALARS else _pb_value(x, depth, out))
        return items
    result: dict[str, Any] = {}
    for kv in v.kvlist_value.values:
        x = kv.value
        w = x.WhichOneof("value")
        result[kv.key] = getattr(x, w) if w in _SCALARS else _pb_value(x, depth, out)
    return result


def _pb_attrs(kvs: Any, out: Decoded) -> dict[str, Any]:
    result: dict[str, Any] = {}
    scalars = _SCALARS
    for kv in kvs:
        v = kv.value
        which = v.WhichOneof("value")
        # Inline the common scalar case: this loop is the decoder's hot path.
        result[kv.key] = getattr(v, which) if which in scalars else _pb_value(v, 0, out)
    return result


_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


def _hex_id(raw: bytes, size: int) -> str | None:
    """Lowercase hex of a valid id, None when the length is wrong or it is all zeros."""
    if len(raw) != size or raw == bytes(size):
        return None
    return raw.hex()


_Request = TypeVar("_Request", ExportTraceServiceRequest, ExportLogsServiceRequest)


def _parse(request: type[_Request], data: bytes, out: Decoded) -> _Request | None:
    """`data` parsed as `request`; None (refused as `malformed_protobuf`) when it does not
    parse."""
    req = request()
    try:
        req.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        out.refuse(Reason.MALFORMED_PROTOBUF, f"{request.__name__} did not parse: {exc}")
        return None
    return req


def _parse_traces(data: bytes, out: Decoded) -> ExportTraceServiceRequest | None:
    return _parse(ExportTraceServiceRequest, data, out)


def _checked_ids(s: Any, out: Decoded) -> tuple[bytes, bytes, str | None] | None:
    """The span's raw trace and span ids and its hex parent id, or None (refused, counted)."""
    raw_trace, raw_span = s.trace_id, s.span_id
    if len(raw_trace) != 16 or raw_trace == _ZERO_TRACE:
        out.refuse(Reason.BAD_TRACE_ID, f"span {s.name!r} has trace id {raw_trace.hex()!r}")
        return None
    if len(raw_span) != 8 or raw_span == _ZERO_SPAN:
        out.refuse(Reason.BAD_SPAN_ID, f"span {s.name!r} has span id {raw_span.hex()!r}")
        return None
    raw_parent = s.parent_span_id
    if raw_parent:
        if len(raw_parent) != 8 or raw_parent == _ZERO_SPAN:
            out.refuse(Reason.BAD_PARENT_ID, f"span {s.name!r} has parent id {raw_parent.hex()!r}")
            return None
        return raw_trace, raw_span, raw_parent.hex()
    return raw_trace, raw_span, None


def decode_traces_protobuf(data: bytes) -> Decoded:
    """Decode a protobuf `ExportTraceServiceRequest` body.

    Args:
        data: the serialized request (already un-gzipped).

    Returns:
        The decoded spans; a body that does not parse (including invalid UTF-8 in a string
        field, which protobuf refuses) is one `malformed_protobuf` refusal.
    """
    out = Decoded()
    req = _parse_traces(data, out)
    if req is None:
        return out
    spans = out.spans
    kind_names, status_names = _KIND_NAMES, _STATUS_NAMES
    for rs in req.resource_spans:
        resource = _pb_attrs(rs.resource.attributes, out)
        for ss in rs.scope_spans:
            scope_name, scope_version = ss.scope.name, ss.scope.version
            for s in ss.spans:
                ids = _checked_ids(s, out)
                if ids is None:
                    continue
                raw_trace, raw_span, parent = ids
                status = s.status
                events = s.events
                links = s.links
                spans.append(Span(
                    raw_trace.hex(), raw_span.hex(), s.name, parent,
                    kind_names.get(s.kind, "UNSPECIFIED"),
                    s.start_time_unix_nano, s.end_time_unix_nano,
                    status_names.get(status.code, "UNSET"), status.message,
                    _pb_attrs(s.attributes, out),
                    [SpanEvent(e.name, e.time_unix_nano, _pb_attrs(e.attributes, out))
                     for e in events] if events else [],
                    [SpanLink(lk.trace_id.hex(), lk.span_id.hex(),
                              _pb_attrs(lk.attributes, out)) for lk in links] if links else [],
                    resource, scope_name, scope_version, s.flags,
                ))
    return out


def scan_traces_protobuf(data: bytes) -> Decoded:
    """Parse a protobuf `ExportTraceServiceRequest` (in C) and check every span's ids, without
    turning any attribute into a Python value: enough to answer the client (partial success
    included) and to log the body, while the full decode happens off the request path.

    Returns:
        No spans; `undecoded` spans that `decode_traces_protobuf` will keep, their
        `trace_ids`, and the same refusals (spans, reasons, messages) it makes.
    """
    out = Decoded()
    req = _parse_traces(data, out)
    if req is not None:
        trace_ids = out.trace_ids
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    ids = _checked_ids(s, out)
                    if ids is not None:
                        out.undecoded += 1
                        trace_ids.add(ids[0].hex())
    return out


def decode_logs_protobuf(data: bytes) -> Decoded:
    """Decode a protobuf `ExportLogsServiceRequest` body into `LogEvent`s.

    Log records without a valid trace id cannot be joined to a run: they are refused
    (`log_without_trace`). A missing span id is kept ("").
    """
    out = Decoded()
    req = _parse(ExportLogsServiceRequest, data, out)
    if req is None:
        return out
    for rl in req.resource_logs:
        resource = _pb_attrs(rl.resource.attributes, out)
        for sl in rl.scope_logs:
            for r in sl.log_records:
                trace_id = _hex_id(r.trace_id, 16)
                if trace_id is None:
                    out.refuse(Reason.LOG_WITHOUT_TRACE, "log record without a valid trace id")
                    continue
                span_id = _hex_id(r.span_id, 8) or ""
                attrs = _pb_attrs(r.attributes, out)
                body = _pb_value(r.body, 0, out) if r.HasField("body") else None
                out.logs.append(LogEvent(
                    event_name=r.event_name or str(attrs.get("event.name", "")),
                    trace_id=trace_id, span_id=span_id,
                    time_unix_nano=r.time_unix_nano or r.observed_time_unix_nano,
                    attributes=attrs, body=body, resource=resource,
                    scope_name=sl.scope.name, scope_version=sl.scope.version,
                    severity_text=r.severity_text,
                ))
    return out
