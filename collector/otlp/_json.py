"""OTLP decoding: protobuf and JSON export requests -> plain `Span` / `LogEvent` values.

The receivers and `scorecar inspect` use this. Nothing here raises on bad input: a request
that does not parse, or a span/log record with bad ids, is refused and counted under a fixed
reason code in `Decoded.refused`, and everything else in the same request is kept. OTLP/JSON
follows proto3 JSON strictly (DESIGN §6): a field of the wrong JSON type anywhere makes the
whole request one `malformed_json` refusal whose message names the field's path.

Reason codes (`transforms.reasons.Reason`): `malformed_protobuf`, `malformed_json`,
`invalid_utf8`, `too_deep`, `bad_trace_id`, `bad_span_id`, `bad_parent_id`,
`log_without_trace`, `not_otlp`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

from transforms.reasons import Reason
from transforms.types import LogEvent, Span, SpanEvent, SpanLink

__all__ = [
    "Decoded",
    "decode_json",
    "decode_json_bytes",
    "decode_logs_protobuf",
    "decode_traces_protobuf",
    "scan_traces_protobuf",
    "utf8_text",
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
        undecoded: spans of the request not decoded yet: a receiver only scanned the body
            (`scan_traces_protobuf`) and leaves the full decode to the sink, off the request
            path. `spans` is then empty.
        trace_ids: with `undecoded`, the trace ids of those spans.
    """

    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    undecoded: int = 0
    trace_ids: set[str] = field(default_factory=set)

    def refuse(self, reason: Reason, message: str) -> None:
        """Count one refusal and remember its message (the first 20 only).

        Raises:
            ValueError: `reason` is not a `Reason` code (the set is closed; checked at run
                time too, for untyped callers).
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


def _parse_traces(data: bytes, out: Decoded) -> ExportTraceServiceRequest | None:
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as exc:
        out.refuse(Reason.MALFORMED_PROTOBUF, f"ExportTraceServiceRequest did not parse: {exc}")
        return None
    return req


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
                    resource, scope_name, scope_version,
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
#
# proto3 JSON, strictly (DESIGN §6): camelCase or the proto's snake_case field names, `null`
# for a field's default, unknown fields ignored, int64/fixed64/uint32 as a JSON number or a
# decimal string, enums by name or number. A field of the wrong JSON type makes the whole
# request malformed: `_Malformed` carries the field's path out to `decode_json`, which keeps
# nothing of the request. Ids that are strings of the wrong length or bad hex only drop their
# span (`_BadId`). The loops check `type(x) is T` inline and call a helper only when that
# fails (null, a subclass, or an error): the common shapes cost no extra call.

_I31 = 1 << 31
_I63 = 1 << 63
_U32 = 1 << 32
_U64 = 1 << 64
_FLOAT_TEXT = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
_FLOAT_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_EMPTY: dict[str, Any] = {}  # read only: an absent or null message field


class _Malformed(Exception):
    """A field of the wrong JSON type. `path` is innermost first; callers add their segment."""

    def __init__(self, expected: str, got: Any, segment: str = "", *,
                 numeric: bool = False) -> None:
        super().__init__(expected)
        self.expected = expected
        self.got = got
        self.numeric = numeric  # a number can be of the right type but out of range: show it
        self.path: list[str] = [segment] if segment else []

    def at(self, segment: str) -> _Malformed:
        self.path.append(segment)
        return self

    def item(self, seq: Sequence[Any], item: Any, name: str) -> _Malformed:
        # The index is looked up only here, on the error path: the loops need no enumerate.
        index = next((i for i, x in enumerate(seq) if x is item), -1)
        return self.at(f"{name}[{index}]")

    def __str__(self) -> str:
        path = ".".join(reversed(self.path)) or "request"
        got = self.got
        if self.numeric and isinstance(got, int | float) and not isinstance(got, bool):
            return f"{path}: expected {self.expected}, got the number {got!r}"
        return f"{path}: expected {self.expected}, got {_describe(got)}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:40] + "..."
        return f"the string {json.dumps(text, ensure_ascii=False)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _name(d: dict[str, Any], camel: str, snake: str) -> str:
    """The spelling of a field `d` uses (for error paths)."""
    return snake if camel not in d and snake in d else camel


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    # OTLP/JSON is camelCase; proto3 JSON parsers also accept the proto's snake_case names.
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _object(value: Any, segment: str, what: str = "an object") -> dict[str, Any]:
    """A message field that is not a plain dict: {} for null, else malformed."""
    if value is None:
        return _EMPTY
    if isinstance(value, dict):
        return value
    raise _Malformed(what, value, segment)


def _array(value: Any, segment: str) -> Sequence[Any]:
    """A repeated field that is not a plain list: () for null, else malformed."""
    if value is None:
        return ()
    if isinstance(value, list):
        return value
    raise _Malformed("an array", value, segment)


def _element(value: Any, what: str) -> dict[str, Any]:
    """An item of a repeated message field that is not a plain dict (null is no item)."""
    if isinstance(value, dict):
        return value
    raise _Malformed(what, value)


def _string(value: Any, segment: str) -> str:
    """A string field that is not a plain str: "" for null, else malformed."""
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)
    raise _Malformed("a string", value, segment)


def _uint(value: Any, segment: str, limit: int = _U64) -> int:
    """uint64/fixed64 (uint32/fixed32 with `limit`): a JSON number or a decimal string."""
    kind = type(value)
    if kind is str:
        if value.isdigit() and value.isascii():
            n = int(value)
            if n < limit:
                return n
    elif kind is int:
        if 0 <= value < limit:
            return int(value)
    elif kind is float:
        if value.is_integer() and 0 <= value < limit:
            return int(value)
    elif value is None:
        return 0
    bits = 64 if limit == _U64 else 32
    raise _Malformed(f"a uint{bits} (a JSON number or a decimal string)", value, segment,
                     numeric=True)


def _uint_at(d: dict[str, Any], camel: str, snake: str) -> int:
    """The uint64/fixed64 field `camel` (or `snake`) of `d`."""
    value = d.get(camel)
    if value is None:
        value = d.get(snake)
    if type(value) is str and value.isdigit() and value.isascii():
        n = int(value)
        if n < _U64:
            return n
    return _uint(value, _name(d, camel, snake))


def _uint32(value: Any, segment: str) -> int:
    return _uint(value, segment, _U32)


def _int64(value: Any, segment: str) -> int:
    """int64: a JSON number or a decimal string."""
    kind = type(value)
    if kind is str:
        digits = value[1:] if value[:1] == "-" else value
        if digits.isdigit() and digits.isascii():
            n = int(value)
            if -_I63 <= n < _I63:
                return n
    elif kind is int:
        if -_I63 <= value < _I63:
            return int(value)
    elif kind is float:
        if value.is_integer() and -_I63 <= value < _I63:
            return int(value)
    elif value is None:
        return 0
    raise _Malformed("an int64 (a JSON number or a decimal string)", value, segment,
                     numeric=True)


def _double(value: Any, segment: str) -> float:
    """double: a JSON number, a numeric string, "NaN", "Infinity" or "-Infinity"."""
    kind = type(value)
    if kind is float:
        return float(value)
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            pass
    elif kind is str:
        named = _FLOAT_NAMES.get(value)
        if named is not None:
            return named
        if _FLOAT_TEXT.fullmatch(value):
            return float(value)
    elif value is None:
        return 0.0
    raise _Malformed('a double (a JSON number, a numeric string, "NaN" or "Infinity")', value,
                     segment, numeric=True)


def _bool(value: Any, segment: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise _Malformed("true or false", value, segment)


def _bytes(value: Any, segment: str) -> bytes:
    """bytes: standard or URL-safe base64, padded or not."""
    if value is None:
        return b""
    if isinstance(value, str):
        text = value.replace("-", "+").replace("_", "/")
        try:
            return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            pass
    raise _Malformed("a base64 string", value, segment)


def _enum(value: Any, by_number: dict[int, str], by_name: dict[str, str], default: str,
          what: str, segment: str) -> str:
    """An enum by name or number; an unknown number is the default (proto3 enums are open)."""
    kind = type(value)
    if kind is int:
        if -_I31 <= value < _I31:
            return by_number.get(value, default)
    elif kind is str:
        name = by_name.get(value)
        if name is not None:
            return name
    elif kind is float:
        if value.is_integer() and -_I31 <= value < _I31:
            return by_number.get(int(value), default)
    elif value is None:
        return default
    raise _Malformed(f"a {what} name or an int32 number", value, segment, numeric=True)


def _enum_names(names: tuple[str, ...], prefix: str) -> dict[str, str]:
    # The proto names (SPAN_KIND_CLIENT), and the short ones (CLIENT) as some exporters write.
    return {**{f"{prefix}{n}": n for n in names}, **{n: n for n in names}}


_KIND_BY_NAME = _enum_names(_KINDS, "SPAN_KIND_")
_STATUS_BY_NAME = _enum_names(_STATUS, "STATUS_CODE_")
_SEVERITY_BY_NUMBER = {int(v): str(k) for k, v in SeverityNumber.items()}
_SEVERITY_BY_NAME = {str(k): str(k) for k in SeverityNumber.keys()}

# Fields of a message that nothing downstream reads, checked for their type only:
# (camelCase, snake_case, check).
_Check = Callable[[Any, str], object]
_SPAN_UNREAD: tuple[tuple[str, str, _Check], ...] = (
    ("traceState", "trace_state", _string), ("flags", "flags", _uint32),
    ("droppedAttributesCount", "dropped_attributes_count", _uint32),
    ("droppedEventsCount", "dropped_events_count", _uint32),
    ("droppedLinksCount", "dropped_links_count", _uint32))
_LINK_UNREAD: tuple[tuple[str, str, _Check], ...] = (
    ("traceState", "trace_state", _string), ("flags", "flags", _uint32),
    ("droppedAttributesCount", "dropped_attributes_count", _uint32))
_COUNT_UNREAD: tuple[tuple[str, str, _Check], ...] = (
    ("droppedAttributesCount", "dropped_attributes_count", _uint32),)
_SCHEMA_UNREAD: tuple[tuple[str, str, _Check], ...] = (("schemaUrl", "schema_url", _string),)
_LOG_UNREAD: tuple[tuple[str, str, _Check], ...] = (
    ("flags", "flags", _uint32),
    ("droppedAttributesCount", "dropped_attributes_count", _uint32),
    ("severityNumber", "severity_number",
     lambda v, seg: _enum(v, _SEVERITY_BY_NUMBER, _SEVERITY_BY_NAME, "", "SeverityNumber", seg)))


def _check_unread(d: dict[str, Any], fields: tuple[tuple[str, str, _Check], ...]) -> None:
    for camel, snake, check in fields:
        value = d.get(camel)
        if value is None:
            value = d.get(snake)
            if value is None:
                continue
        check(value, _name(d, camel, snake))


class _BadId(ValueError):
    pass


def _json_id(d: dict[str, Any], camel: str, snake: str, size: int) -> str | None:
    """The id field `camel` (or `snake`) of `d`: hex per the spec; base64 accepted, as
    protobuf's JSON writes it.

    Returns None for an empty/absent id; raises `_BadId` for a string that is no id, and
    `_Malformed` for anything that is not a string.
    """
    value = d.get(camel)
    if value is None:
        value = d.get(snake)
    if type(value) is not str:
        if value is None:
            return None
        if not isinstance(value, str):
            raise _Malformed("a hex string", value, _name(d, camel, snake))
    if not value:
        return None
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


_LINK_IDS = (("traceId", "trace_id", 16), ("spanId", "span_id", 8))
_ANY_MEMBERS = {
    "stringValue": "stringValue", "string_value": "stringValue",
    "boolValue": "boolValue", "bool_value": "boolValue",
    "intValue": "intValue", "int_value": "intValue",
    "doubleValue": "doubleValue", "double_value": "doubleValue",
    "arrayValue": "arrayValue", "array_value": "arrayValue",
    "kvlistValue": "kvlistValue", "kvlist_value": "kvlistValue",
    "bytesValue": "bytesValue", "bytes_value": "bytesValue",
}


def _json_value(v: Any, depth: int, out: Decoded) -> Any:
    """One AnyValue (null or `{}`: None). Raises `_Malformed`, its path relative to `v`."""
    if type(v) is not dict:
        if v is None:
            return None
        if not isinstance(v, dict):
            raise _Malformed("an AnyValue object", v)
    key: str | None = None
    x: Any = None
    for k, val in v.items():
        if val is None or k not in _ANY_MEMBERS:
            continue  # null is the default; unknown fields are ignored
        if key is not None:
            raise _Malformed(f"one value in an AnyValue, not both {key} and {k}", v)
        key, x = k, val
    if key is None:
        return None
    member = _ANY_MEMBERS[key]
    if member == "stringValue":
        return x if type(x) is str else _string(x, key)
    if member == "intValue":
        return _int64(x, key)
    if member == "boolValue":
        return _bool(x, key)
    if member == "doubleValue":
        return _double(x, key)
    if member == "bytesValue":
        return _bytes(x, key)
    if type(x) is not dict:
        x = _object(x, key, f"an {member[0].upper()}{member[1:]} object")
    if depth >= MAX_VALUE_DEPTH:
        out.refuse(Reason.TOO_DEEP, f"attribute value nested deeper than {MAX_VALUE_DEPTH}")
        return _TOO_DEEP
    values = x.get("values")
    if member == "kvlistValue":
        try:
            return _json_attrs(values, out, "values", depth + 1)
        except _Malformed as exc:
            raise exc.at(key) from None
    if type(values) is not list:
        try:
            values = _array(values, "values")
        except _Malformed as exc:
            raise exc.at(key) from None
    items = []
    for item in values:
        # The common case inlined: an array of strings.
        if type(item) is dict and len(item) == 1:
            s = item.get("stringValue")
            if type(s) is str:
                items.append(s)
                continue
        try:
            if item is None:
                raise _Malformed("an AnyValue object", None)  # no null in repeated fields
            items.append(_json_value(item, depth + 1, out))
        except _Malformed as exc:
            raise exc.item(values, item, "values").at(key) from None
    return items


def _json_attrs(kvs: Any, out: Decoded, name: str = "attributes",
                depth: int = 0) -> dict[str, Any]:
    """A repeated KeyValue field. Raises `_Malformed`, its path starting at `name`."""
    result: dict[str, Any] = {}
    if type(kvs) is not list:
        kvs = _array(kvs, name)
    for kv in kvs:
        try:
            if type(kv) is not dict:
                kv = _element(kv, "a KeyValue object")
            key = kv.get("key")
            if type(key) is not str:
                key = _string(key, "key")
            v = kv.get("value")
            # The common case inlined (this loop is the JSON decoder's hot path).
            if type(v) is dict and len(v) == 1:
                s = v.get("stringValue")
                if type(s) is str:
                    result[key] = s
                    continue
            try:
                result[key] = _json_value(v, depth, out)
            except _Malformed as exc:
                raise exc.at("value") from None
        except _Malformed as exc:
            raise exc.item(kvs, kv, name) from None
    return result


def _decode_json_span(s: Any, resource: dict[str, Any], scope_name: str, scope_version: str,
                      out: Decoded) -> Span | None:
    """One span; None when an id drops it (counted). Raises `_Malformed`."""
    if type(s) is not dict:
        s = _element(s, "a Span object")
    name = s.get("name")
    if type(name) is not str:
        name = _string(name, "name")
    # Every field is checked before an id drops the span: a wrong type anywhere is malformed.
    bad: tuple[Reason, str] | None = None
    trace_id = span_id = parent = None
    try:
        trace_id = _json_id(s, "traceId", "trace_id", 16)
        if trace_id is None:
            raise _BadId("")
    except _BadId as exc:
        bad = (Reason.BAD_TRACE_ID, f"span {name!r} has trace id {exc}")
    try:
        span_id = _json_id(s, "spanId", "span_id", 8)
        if span_id is None:
            raise _BadId("")
    except _BadId as exc:
        bad = bad or (Reason.BAD_SPAN_ID, f"span {name!r} has span id {exc}")
    try:
        parent = _json_id(s, "parentSpanId", "parent_span_id", 8)
    except _BadId as exc:
        bad = bad or (Reason.BAD_PARENT_ID, f"span {name!r} has parent id {exc}")
    sink = out if bad is None else Decoded()  # a dropped span counts nothing else
    status = s.get("status")
    if type(status) is not dict:
        status = _object(status, "status")
    message = status.get("message")
    if type(message) is not str:
        try:
            message = _string(message, "message")
        except _Malformed as exc:
            raise exc.at("status") from None
    try:
        status_code = _enum(status.get("code"), _STATUS_NAMES, _STATUS_BY_NAME, "UNSET",
                            "StatusCode", "code")
    except _Malformed as exc:
        raise exc.at("status") from None
    raw_events = s.get("events")
    events: list[SpanEvent] = []
    if raw_events is not None:
        if type(raw_events) is not list:
            raw_events = _array(raw_events, "events")
        for e in raw_events:
            try:
                if type(e) is not dict:
                    e = _element(e, "an Event object")
                ename = e.get("name")
                if type(ename) is not str:
                    ename = _string(ename, "name")
                _check_unread(e, _COUNT_UNREAD)
                events.append(SpanEvent(
                    ename,
                    _uint_at(e, "timeUnixNano", "time_unix_nano"),
                    _json_attrs(e.get("attributes"), sink)))
            except _Malformed as exc:
                raise exc.item(raw_events, e, "events") from None
    raw_links = s.get("links")
    links: list[SpanLink] = []
    if raw_links is not None:
        if type(raw_links) is not list:
            raw_links = _array(raw_links, "links")
        for lk in raw_links:
            try:
                if type(lk) is not dict:
                    lk = _element(lk, "a Link object")
                _check_unread(lk, _LINK_UNREAD)
                link_attrs = _json_attrs(lk.get("attributes"), sink)
                ids: list[str] = []
                for camel, snake, size in _LINK_IDS:
                    try:
                        ids.append(_json_id(lk, camel, snake, size) or "")
                    except _BadId:
                        pass  # a bad link loses only the link
                if len(ids) == 2:
                    links.append(SpanLink(ids[0], ids[1], link_attrs))
            except _Malformed as exc:
                raise exc.item(raw_links, lk, "links") from None
    _check_unread(s, _SPAN_UNREAD)
    kind = s.get("kind")
    span = Span(
        trace_id=trace_id or "", span_id=span_id or "", parent_span_id=parent, name=name,
        kind=_KIND_NAMES.get(kind, "UNSPECIFIED") if type(kind) is int and -_I31 <= kind < _I31
        else _enum(kind, _KIND_NAMES, _KIND_BY_NAME, "UNSPECIFIED", "SpanKind", "kind"),
        start_time_unix_nano=_uint_at(s, "startTimeUnixNano", "start_time_unix_nano"),
        end_time_unix_nano=_uint_at(s, "endTimeUnixNano", "end_time_unix_nano"),
        status_code=status_code, status_message=message,
        attributes=_json_attrs(s.get("attributes"), sink),
        events=events, links=links, resource=resource,
        scope_name=scope_name, scope_version=scope_version,
    )
    if bad is not None:
        out.refuse(*bad)
        return None
    return span


def _decode_scope(container: dict[str, Any]) -> tuple[str, str]:
    """Name and version of a ScopeSpans/ScopeLogs' scope; its other fields checked."""
    scope = container.get("scope")
    if type(scope) is not dict:
        scope = _object(scope, "scope")
    try:
        name = scope.get("name")
        if type(name) is not str:
            name = _string(name, "name")
        version = scope.get("version")
        if type(version) is not str:
            version = _string(version, "version")
        if scope.get("attributes") is not None:
            _json_attrs(scope["attributes"], Decoded())  # checked, not used
        _check_unread(scope, _COUNT_UNREAD)
    except _Malformed as exc:
        raise exc.at("scope") from None
    return name, version


def _decode_resource(container: dict[str, Any], out: Decoded) -> dict[str, Any]:
    resource = container.get("resource")
    if type(resource) is not dict:
        resource = _object(resource, "resource")
    try:
        _check_unread(resource, _COUNT_UNREAD)
        return _json_attrs(resource.get("attributes"), out)
    except _Malformed as exc:
        raise exc.at("resource") from None


def _decode_json_spans(doc: dict[str, Any], out: Decoded) -> None:
    all_rs = _get(doc, "resourceSpans", "resource_spans")
    if type(all_rs) is not list:
        all_rs = _array(all_rs, _name(doc, "resourceSpans", "resource_spans"))
    for rs in all_rs:
        try:
            if type(rs) is not dict:
                rs = _element(rs, "a ResourceSpans object")
            _check_unread(rs, _SCHEMA_UNREAD)
            resource = _decode_resource(rs, out)
            all_ss = _get(rs, "scopeSpans", "scope_spans")
            if type(all_ss) is not list:
                all_ss = _array(all_ss, _name(rs, "scopeSpans", "scope_spans"))
            for ss in all_ss:
                try:
                    if type(ss) is not dict:
                        ss = _element(ss, "a ScopeSpans object")
                    _check_unread(ss, _SCHEMA_UNREAD)
                    scope_name, scope_version = _decode_scope(ss)
                    spans = ss.get("spans")
                    if type(spans) is not list:
                        spans = _array(spans, "spans")
                    for s in spans:
                        try:
                            span = _decode_json_span(s, resource, scope_name, scope_version, out)
                        except _Malformed as exc:
                            raise exc.item(spans, s, "spans") from None
                        if span is not None:
                            out.spans.append(span)
                except _Malformed as exc:
                    raise exc.item(all_ss, ss, _name(rs, "scopeSpans", "scope_spans")) from None
        except _Malformed as exc:
            raise exc.item(all_rs, rs, _name(doc, "resourceSpans", "resource_spans")) from None


def _decode_json_log(r: Any, resource: dict[str, Any], scope_name: str, scope_version: str,
                     out: Decoded) -> LogEvent | None:
    """One log record; None when it has no valid trace id (counted). Raises `_Malformed`."""
    if type(r) is not dict:
        r = _element(r, "a LogRecord object")
    try:
        trace_id = _json_id(r, "traceId", "trace_id", 16)
    except _BadId:
        trace_id = None
    try:
        span_id = _json_id(r, "spanId", "span_id", 8) or ""
    except _BadId:
        span_id = ""
    sink = out if trace_id is not None else Decoded()  # a dropped record counts nothing else
    _check_unread(r, _LOG_UNREAD)
    attrs = _json_attrs(r.get("attributes"), sink)
    body = r.get("body")
    if body is not None:
        try:
            body = _json_value(body, 0, sink)
        except _Malformed as exc:
            raise exc.at("body") from None
    event_name = _get(r, "eventName", "event_name")
    if type(event_name) is not str:
        event_name = _string(event_name, _name(r, "eventName", "event_name"))
    severity = _get(r, "severityText", "severity_text")
    if type(severity) is not str:
        severity = _string(severity, _name(r, "severityText", "severity_text"))
    time_unix_nano = _uint_at(r, "timeUnixNano", "time_unix_nano")
    observed = _uint_at(r, "observedTimeUnixNano", "observed_time_unix_nano")
    if trace_id is None:
        out.refuse(Reason.LOG_WITHOUT_TRACE, "log record without a valid trace id")
        return None
    return LogEvent(
        event_name=event_name or str(attrs.get("event.name", "") or ""),
        trace_id=trace_id, span_id=span_id, time_unix_nano=time_unix_nano or observed,
        attributes=attrs, body=body, resource=resource,
        scope_name=scope_name, scope_version=scope_version, severity_text=severity,
    )


def _decode_json_logs(doc: dict[str, Any], out: Decoded) -> None:
    all_rl = _get(doc, "resourceLogs", "resource_logs")
    if type(all_rl) is not list:
        all_rl = _array(all_rl, _name(doc, "resourceLogs", "resource_logs"))
    for rl in all_rl:
        try:
            if type(rl) is not dict:
                rl = _element(rl, "a ResourceLogs object")
            _check_unread(rl, _SCHEMA_UNREAD)
            resource = _decode_resource(rl, out)
            all_sl = _get(rl, "scopeLogs", "scope_logs")
            if type(all_sl) is not list:
                all_sl = _array(all_sl, _name(rl, "scopeLogs", "scope_logs"))
            for sl in all_sl:
                try:
                    if type(sl) is not dict:
                        sl = _element(sl, "a ScopeLogs object")
                    _check_unread(sl, _SCHEMA_UNREAD)
                    scope_name, scope_version = _decode_scope(sl)
                    records = _get(sl, "logRecords", "log_records")
                    if type(records) is not list:
                        records = _array(records, _name(sl, "logRecords", "log_records"))
                    for r in records:
                        try:
                            log = _decode_json_log(r, resource, scope_name, scope_version, out)
                        except _Malformed as exc:
                            raise exc.item(records, r, _name(sl, "logRecords",
                                                             "log_records")) from None
                        if log is not None:
                            out.logs.append(log)
                except _Malformed as exc:
                    raise exc.item(all_sl, sl, _name(rl, "scopeLogs", "scope_logs")) from None
        except _Malformed as exc:
            raise exc.item(all_rl, rl, _name(doc, "resourceLogs", "resource_logs")) from None


def decode_json(doc: Any) -> Decoded:
    """Decode one parsed OTLP/JSON document (`ExportTraceServiceRequest` and/or
    `ExportLogsServiceRequest`, as the Collector's file exporter writes them).

    proto3 JSON is followed strictly: a field of the wrong JSON type anywhere (a number as a
    trace id, a string where an array belongs, ...) makes the whole document one
    `malformed_json` refusal naming the field's path, and none of its spans or log records
    is kept. Ids that are strings but no valid id only drop their span or log record.

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
    except _Malformed as exc:
        out = Decoded()
        out.refuse(Reason.MALFORMED_JSON, str(exc))
    except RecursionError:
        out.refuse(Reason.TOO_DEEP, "OTLP JSON nested too deep")
    return out


# A JSON escape of a lone UTF-16 surrogate (`"\ud800"` without its pair) parses into a str that
# cannot be encoded as UTF-8: a run holding it could not be stored in the queue or exported, and
# the whole scheduling pass failed with it (found by bench/faults.py fuzz). Such escapes become
# U+FFFD before parsing, counted as `invalid_utf8`; pairs (emoji) are kept. transforms/_toolkit.py
# does the same to JSON text inside attributes.
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(?:[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|[dD][c-fC-F][0-9a-fA-F]{2})")


def _no_lone_surrogates(text: str, out: Decoded) -> str:
    if "\\u" not in text or not _SURROGATE_HINT.search(text):
        return text
    lone = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal lone
        if match.group(2):
            return match.group(0)
        lone += 1
        return match.group(1) + "\\ufffd"

    fixed = _SURROGATE_ESCAPE.sub(replace, text)
    if lone:
        out.refuse(Reason.INVALID_UTF8, f"request body escapes {lone} lone UTF-16 surrogate(s) "
                                        f"(\\ud800-\\udfff without a pair); replaced")
    return fixed


def utf8_text(data: bytes, out: Decoded) -> str:
    """`data` as text; invalid UTF-8 is replaced and counted (`invalid_utf8`), never fatal.

    JSON escapes of lone surrogates, which would decode into text that is not Unicode, are
    replaced (U+FFFD) and counted the same way.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.refuse(Reason.INVALID_UTF8, f"request body is not valid UTF-8 ({exc.reason} at "
                                        f"byte {exc.start}); bad bytes replaced")
        text = data.decode("utf-8", errors="replace")
    return _no_lone_surrogates(text, out)


def decode_json_bytes(data: bytes | str) -> Decoded:
    """Decode the bytes of one OTLP/JSON request body.

    Invalid UTF-8 is replaced (U+FFFD) and counted as `invalid_utf8`: the rest of the
    request is still used. JSON that does not parse, or whose fields have the wrong JSON
    types (see `decode_json`), is one `malformed_json` refusal.
    """
    out = Decoded()
    text = utf8_text(data, out) if isinstance(data, bytes) else _no_lone_surrogates(data, out)
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
