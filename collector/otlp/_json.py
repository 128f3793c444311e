"""OTLP/JSON requests -> `Decoded`, following proto3 JSON strictly (DESIGN §6).

camelCase or the proto's snake_case field names, `null` for a field's default, unknown fields
ignored, int64/fixed64/uint32 as a JSON number or a decimal string, enums by name or number. A
field of the wrong JSON type anywhere makes the whole request one `malformed_json` refusal whose
message names the field's path: `_Malformed` carries the path out to `decode_json`, which keeps
nothing of the request. Ids that are strings of the wrong length or bad hex only drop their span
(`_BadId`). The loops check `type(x) is T` inline and call a field reader
(`collector.otlp._json_fields`) only when that fails (null, a subclass, or an error): the common
shapes cost no extra call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from collector.otlp._decoded import (
    _KIND_NAMES,
    _STATUS_NAMES,
    _TOO_DEEP,
    MAX_VALUE_DEPTH,
    Decoded,
    _no_lone_surrogates,
    utf8_text,
)
from collector.otlp._json_fields import (
    _COUNT_UNREAD,
    _I31,
    _KIND_BY_NAME,
    _LINK_UNREAD,
    _LOG_UNREAD,
    _SCHEMA_UNREAD,
    _SPAN_UNREAD,
    _STATUS_BY_NAME,
    _array,
    _BadId,
    _bool,
    _bytes,
    _check_unread,
    _double,
    _element,
    _enum,
    _get,
    _int64,
    _json_id,
    _Malformed,
    _name,
    _object,
    _string,
    _uint32,
    _uint_at,
)
from transforms.reasons import Reason
from transforms.types import LogEvent, Span, SpanEvent, SpanLink

__all__ = ["decode_json", "decode_json_bytes"]


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
    _check_unread(s, _SPAN_UNREAD)  # flags included: validated there, read here
    flags = s.get("flags")
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
        flags=0 if flags is None else _uint32(flags, "flags"),
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


@dataclass(frozen=True, slots=True)
class _Signal:
    """The field names of one signal's nesting: resource -> scope -> items."""

    resources: tuple[str, str]
    resource_what: str
    scopes: tuple[str, str]
    scope_what: str
    items: tuple[str, str]


_SPANS = _Signal(("resourceSpans", "resource_spans"), "a ResourceSpans object",
                 ("scopeSpans", "scope_spans"), "a ScopeSpans object", ("spans", "spans"))
_LOGS = _Signal(("resourceLogs", "resource_logs"), "a ResourceLogs object",
                ("scopeLogs", "scope_logs"), "a ScopeLogs object", ("logRecords", "log_records"))


def _decode_json_signal(doc: dict[str, Any], out: Decoded, sig: _Signal,
                        decode: Callable[[Any, dict[str, Any], str, str, Decoded], Any],
                        into: list[Any]) -> None:
    """Walk one signal's resources, scopes and items, decoding each item with `decode` (None:
    dropped, counted by `decode`) into `into`; a malformed part raises `_Malformed` with its
    path."""
    all_rs = _get(doc, *sig.resources)
    if type(all_rs) is not list:
        all_rs = _array(all_rs, _name(doc, *sig.resources))
    for rs in all_rs:
        try:
            if type(rs) is not dict:
                rs = _element(rs, sig.resource_what)
            _check_unread(rs, _SCHEMA_UNREAD)
            resource = _decode_resource(rs, out)
            all_ss = _get(rs, *sig.scopes)
            if type(all_ss) is not list:
                all_ss = _array(all_ss, _name(rs, *sig.scopes))
            for ss in all_ss:
                try:
                    if type(ss) is not dict:
                        ss = _element(ss, sig.scope_what)
                    _check_unread(ss, _SCHEMA_UNREAD)
                    scope_name, scope_version = _decode_scope(ss)
                    items = _get(ss, *sig.items)
                    if type(items) is not list:
                        items = _array(items, _name(ss, *sig.items))
                    for item in items:
                        try:
                            value = decode(item, resource, scope_name, scope_version, out)
                        except _Malformed as exc:
                            raise exc.item(items, item, _name(ss, *sig.items)) from None
                        if value is not None:
                            into.append(value)
                except _Malformed as exc:
                    raise exc.item(all_ss, ss, _name(rs, *sig.scopes)) from None
        except _Malformed as exc:
            raise exc.item(all_rs, rs, _name(doc, *sig.resources)) from None


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
        _decode_json_signal(doc, out, _SPANS, _decode_json_span, out.spans)
        _decode_json_signal(doc, out, _LOGS, _decode_json_log, out.logs)
    except _Malformed as exc:
        out = Decoded()
        out.refuse(Reason.MALFORMED_JSON, str(exc))
    except RecursionError:
        out.refuse(Reason.TOO_DEEP, "OTLP JSON nested too deep")
    return out


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
