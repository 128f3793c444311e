"""OTLP decoding: protobuf and JSON export requests -> plain `Span` / `LogEvent` values.

The receivers and `scorecar inspect` use this. Nothing here raises on bad input: a request
that does not parse, or a span/log record with bad ids, is refused and counted under a fixed
reason code in `Decoded.refused`, and everything else in the same request is kept.

Reason codes (`transforms.reasons.Reason`): `malformed_protobuf`, `malformed_json`,
`invalid_utf8`, `too_deep`, `bad_trace_id`, `bad_span_id`, `bad_parent_id`,
`log_without_trace`, `not_otlp`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from transforms.reasons import Reason
from transforms.types import LogEvent, Span, SpanEvent, SpanLink

__all__ = [
    "Decoded",
    "decode_json",
    "decode_json_bytes",
    "decode_logs_protobuf",
    "decode_traces_protobuf",
]

_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS = ("UNSET", "OK", "ERROR")
# AnyValue nesting deeper than this is kept as a marker string and counted: real telemetry
# never nests this deep, and unbounded depth would let one request blow the stack.
MAX_VALUE_DEPTH = 64
_TOO_DEEP = "[scorecar: value nested too deep]"


@dataclass(slots=True)
class Decoded:
    """What one or more OTLP requests decoded into.

    Attributes:
        spans: decoded spans, in request order.
        logs: decoded log records, in request order.
        refused: refusal counts by reason code (one per refused span, log record or request).
        errors: a few human-readable messages about refusals (for logs and partial_success).
    """

    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def refuse(self, reason: Reason | str, message: str) -> None:
        """Count one refusal and remember its message (the first 20 only).

        Raises:
            ValueError: `reason` is not a `Reason` code (the set is closed).
        """
        reason = Reason(reason)
        self.refused[reason] += 1
        if len(self.errors) < 20:
            self.errors.append(f"{reason}: {message}")

    def extend(self, other: Decoded) -> None:
        """Merge another result into this one."""
        self.spans.extend(other.spans)
        self.logs.extend(other.logs)
        self.refused.update(other.refused)
        self.errors.extend(other.errors[: max(0, 20 - len(self.errors))])


# --------------------------------------------------------------------------- protobuf


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
_KIND_NAMES = dict(enumerate(_KINDS))
_STATUS_NAMES = dict(enumerate(_STATUS))


def _hex_id(raw: bytes, size: int) -> str | None:
    """Lowercase hex of a valid id, None when the length is wrong or it is all zeros."""
    if len(raw) != size or raw == bytes(size):
        return None
    return raw.hex()


def decode_traces_protobuf(data: bytes) -> Decoded:
    """Decode a protobuf `ExportTraceServiceRequest` body.

    Args:
        data: the serialized request (already un-gzipped).

    Returns:
        The decoded spans; a body that does not parse (including invalid UTF-8 in a string
        field, which protobuf refuses) is one `malformed_protobuf` refusal.
    """
    out = Decoded()
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        out.refuse(Reason.MALFORMED_PROTOBUF, f"ExportTraceServiceRequest did not parse: {exc}")
        return out
    spans = out.spans
    kind_names, status_names = _KIND_NAMES, _STATUS_NAMES
    for rs in req.resource_spans:
        resource = _pb_attrs(rs.resource.attributes, out)
        for ss in rs.scope_spans:
            scope_name, scope_version = ss.scope.name, ss.scope.version
            for s in ss.spans:
                # _hex_id, inlined: once per span id on the hot path.
                raw_trace, raw_span = s.trace_id, s.span_id
                if len(raw_trace) != 16 or raw_trace == _ZERO_TRACE:
                    out.refuse(Reason.BAD_TRACE_ID, f"span {s.name!r} has trace id {raw_trace.hex()!r}")
                    continue
                if len(raw_span) != 8 or raw_span == _ZERO_SPAN:
                    out.refuse(Reason.BAD_SPAN_ID, f"span {s.name!r} has span id {raw_span.hex()!r}")
                    continue
                parent: str | None = None
                raw_parent = s.parent_span_id
                if raw_parent:
                    if len(raw_parent) != 8 or raw_parent == _ZERO_SPAN:
                        out.refuse(Reason.BAD_PARENT_ID,
                                   f"span {s.name!r} has parent id {raw_parent.hex()!r}")
                        continue
                    parent = raw_parent.hex()
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
                    resource, scope_name, scope_version,
                ))
    return out


def decode_logs_protobuf(data: bytes) -> Decoded:
    """Decode a protobuf `ExportLogsServiceRequest` body into `LogEvent`s.

    Log records without a valid trace id cannot be joined to a run: they are refused
    (`log_without_trace`). A missing span id is kept ("").
    """
    out = Decoded()
    req = ExportLogsServiceRequest()
    try:
        req.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        out.refuse(Reason.MALFORMED_PROTOBUF, f"ExportLogsServiceRequest did not parse: {exc}")
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


# --------------------------------------------------------------------------- JSON


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    # OTLP/JSON is camelCase; protobuf's json_format with preserving_proto_field_name is
    # snake_case. Accept both.
    value = d.get(camel)
    return d.get(snake) if value is None else value


class _BadId(ValueError):
    pass


def _json_id(value: Any, size: int) -> str | None:
    """Hex id from OTLP JSON (hex per spec; base64 accepted, as some exporters write it).

    Returns None for an empty/absent id; raises `_BadId` for a malformed one.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _BadId(repr(value))
    text = value.strip()
    if len(text) == size * 2:
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raw = b""
        if raw:
            if raw == bytes(size):
                raise _BadId(value)
            return raw.hex()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _BadId(value) from None
    if len(raw) != size or raw == bytes(size):
        raise _BadId(value)
    return raw.hex()


def _json_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def _json_value(v: Any, depth: int, out: Decoded) -> Any:
    if not isinstance(v, dict):
        return v  # lenient: a bare JSON scalar where an AnyValue was expected
    if "stringValue" in v or "string_value" in v:
        return _get(v, "stringValue", "string_value")
    if "intValue" in v or "int_value" in v:
        return _json_int(_get(v, "intValue", "int_value"))
    if "boolValue" in v or "bool_value" in v:
        return bool(_get(v, "boolValue", "bool_value"))
    if "doubleValue" in v or "double_value" in v:
        d = _get(v, "doubleValue", "double_value")
        try:
            return float(d)  # "NaN"/"Infinity" strings are how JSON spells them
        except (TypeError, ValueError):
            return None
    if depth >= MAX_VALUE_DEPTH:
        out.refuse(Reason.TOO_DEEP, f"attribute value nested deeper than {MAX_VALUE_DEPTH}")
        return _TOO_DEEP
    if "arrayValue" in v or "array_value" in v:
        arr = _get(v, "arrayValue", "array_value") or {}
        return [_json_value(x, depth + 1, out) for x in (arr.get("values") or [])]
    if "kvlistValue" in v or "kvlist_value" in v:
        kvl = _get(v, "kvlistValue", "kvlist_value") or {}
        return {str(kv.get("key", "")): _json_value(kv.get("value"), depth + 1, out)
                for kv in (kvl.get("values") or []) if isinstance(kv, dict)}
    if "bytesValue" in v or "bytes_value" in v:
        try:
            return base64.b64decode(str(_get(v, "bytesValue", "bytes_value")))
        except (binascii.Error, ValueError):
            return None
    return None


def _json_attrs(kvs: Any, out: Decoded) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if isinstance(kvs, list):
        for kv in kvs:
            if isinstance(kv, dict) and "key" in kv:
                result[str(kv["key"])] = _json_value(kv.get("value"), 0, out)
    return result


def _json_enum(value: Any, names: tuple[str, ...], prefix: str, default: str) -> str:
    if isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str):
        name = value.removeprefix(prefix)
        if name in names:
            return name
    return default


def _decode_json_spans(doc: dict[str, Any], out: Decoded) -> None:
    for rs in _get(doc, "resourceSpans", "resource_spans") or []:
        if not isinstance(rs, dict):
            out.refuse(Reason.NOT_OTLP, "resourceSpans item is not an object")
            continue
        resource = _json_attrs((rs.get("resource") or {}).get("attributes"), out)
        for ss in _get(rs, "scopeSpans", "scope_spans") or []:
            if not isinstance(ss, dict):
                continue
            scope = ss.get("scope") or {}
            for s in ss.get("spans") or []:
                if not isinstance(s, dict):
                    out.refuse(Reason.NOT_OTLP, "span is not an object")
                    continue
                name = str(s.get("name", ""))
                try:
                    trace_id = _json_id(_get(s, "traceId", "trace_id"), 16)
                    if trace_id is None:
                        raise _BadId("")
                except _BadId as exc:
                    out.refuse(Reason.BAD_TRACE_ID, f"span {name!r} has trace id {exc}")
                    continue
                try:
                    span_id = _json_id(_get(s, "spanId", "span_id"), 8)
                    if span_id is None:
                        raise _BadId("")
                except _BadId as exc:
                    out.refuse(Reason.BAD_SPAN_ID, f"span {name!r} has span id {exc}")
                    continue
                try:
                    parent = _json_id(_get(s, "parentSpanId", "parent_span_id"), 8)
                except _BadId as exc:
                    out.refuse(Reason.BAD_PARENT_ID, f"span {name!r} has parent id {exc}")
                    continue
                status = s.get("status") or {}
                events = []
                for e in s.get("events") or []:
                    if isinstance(e, dict):
                        events.append(SpanEvent(str(e.get("name", "")),
                                                _json_int(_get(e, "timeUnixNano", "time_unix_nano")),
                                                _json_attrs(e.get("attributes"), out)))
                links = []
                for lk in s.get("links") or []:
                    if isinstance(lk, dict):
                        try:
                            links.append(SpanLink(
                                _json_id(_get(lk, "traceId", "trace_id"), 16) or "",
                                _json_id(_get(lk, "spanId", "span_id"), 8) or "",
                                _json_attrs(lk.get("attributes"), out)))
                        except _BadId:
                            pass  # a bad link loses only the link
                out.spans.append(Span(
                    trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name,
                    kind=_json_enum(s.get("kind"), _KINDS, "SPAN_KIND_", "UNSPECIFIED"),
                    start_time_unix_nano=_json_int(_get(s, "startTimeUnixNano",
                                                        "start_time_unix_nano")),
                    end_time_unix_nano=_json_int(_get(s, "endTimeUnixNano", "end_time_unix_nano")),
                    status_code=_json_enum(status.get("code"), _STATUS, "STATUS_CODE_", "UNSET"),
                    status_message=str(status.get("message", "") or ""),
                    attributes=_json_attrs(s.get("attributes"), out),
                    events=events, links=links, resource=resource,
                    scope_name=str(scope.get("name", "") or ""),
                    scope_version=str(scope.get("version", "") or ""),
                ))


def _decode_json_logs(doc: dict[str, Any], out: Decoded) -> None:
    for rl in _get(doc, "resourceLogs", "resource_logs") or []:
        if not isinstance(rl, dict):
            out.refuse(Reason.NOT_OTLP, "resourceLogs item is not an object")
            continue
        resource = _json_attrs((rl.get("resource") or {}).get("attributes"), out)
        for sl in _get(rl, "scopeLogs", "scope_logs") or []:
            if not isinstance(sl, dict):
                continue
            scope = sl.get("scope") or {}
            for r in _get(sl, "logRecords", "log_records") or []:
                if not isinstance(r, dict):
                    out.refuse(Reason.NOT_OTLP, "log record is not an object")
                    continue
                try:
                    trace_id = _json_id(_get(r, "traceId", "trace_id"), 16)
                except _BadId:
                    trace_id = None
                if trace_id is None:
                    out.refuse(Reason.LOG_WITHOUT_TRACE, "log record without a valid trace id")
                    continue
                try:
                    span_id = _json_id(_get(r, "spanId", "span_id"), 8) or ""
                except _BadId:
                    span_id = ""
                attrs = _json_attrs(r.get("attributes"), out)
                body = _json_value(r["body"], 0, out) if isinstance(r.get("body"), dict) else None
                out.logs.append(LogEvent(
                    event_name=str(_get(r, "eventName", "event_name")
                                   or attrs.get("event.name", "") or ""),
                    trace_id=trace_id, span_id=span_id,
                    time_unix_nano=_json_int(_get(r, "timeUnixNano", "time_unix_nano"))
                    or _json_int(_get(r, "observedTimeUnixNano", "observed_time_unix_nano")),
                    attributes=attrs, body=body, resource=resource,
                    scope_name=str(scope.get("name", "") or ""),
                    scope_version=str(scope.get("version", "") or ""),
                    severity_text=str(_get(r, "severityText", "severity_text") or ""),
                ))


def decode_json(doc: Any) -> Decoded:
    """Decode one parsed OTLP/JSON document (`ExportTraceServiceRequest` and/or
    `ExportLogsServiceRequest`, as the Collector's file exporter writes them).

    Args:
        doc: the result of `json.loads` on one request.

    Returns:
        The decoded spans and log records; anything that is not an OTLP request object is
        one `not_otlp` refusal.
    """
    out = Decoded()
    if not isinstance(doc, dict) or not any(
            k in doc for k in ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")):
        out.refuse(Reason.NOT_OTLP, "not an OTLP ExportTraceServiceRequest/ExportLogsServiceRequest")
        return out
    try:
        _decode_json_spans(doc, out)
        _decode_json_logs(doc, out)
    except RecursionError:
        out.refuse(Reason.TOO_DEEP, "OTLP JSON nested too deep")
    return out


def decode_json_bytes(data: bytes | str) -> Decoded:
    """Decode the bytes of one OTLP/JSON request body.

    Invalid UTF-8 is replaced (U+FFFD) and counted as `invalid_utf8`: the rest of the
    request is still used. JSON that does not parse is one `malformed_json` refusal.
    """
    out = Decoded()
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.refuse(Reason.INVALID_UTF8, f"request body is not valid UTF-8 ({exc.reason} at "
                                       f"byte {exc.start}); bad bytes replaced")
            text = data.decode("utf-8", errors="replace")
    else:
        text = data
    try:
        doc = json.loads(text)
    except RecursionError:
        out.refuse(Reason.TOO_DEEP, "JSON nested too deep")
        return out
    except ValueError as exc:
        out.refuse(Reason.MALFORMED_JSON, f"not JSON: {exc}")
        return out
    out.extend(decode_json(doc))
    return out
