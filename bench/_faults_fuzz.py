"""Fuzzing figure (issue 12): malformed OTLP against the decoders, the receivers and the
transforms. Run: python bench/faults.py fuzz [--quick]

Structure-aware cases made with hypothesis:

- protobuf bodies written field by field on the wire (`_Wire`): the OTLP messages' real field
  numbers, mostly with the right wire types and values, sometimes a wrong wire type, an invalid
  id, invalid UTF-8 in a string, an AnyValue nested past protobuf's recursion limit, a huge
  repeated field; then truncated, bit-flipped or padded with garbage;
- OTLP/JSON documents with fields of the wrong JSON type, invalid ids (wrong length, not hex,
  all zeros, numbers), attributes that are truncated or nested JSON text, AnyValues nested past
  the decoder's depth limit, lone `\\ud800` escapes; then truncated, or with invalid UTF-8 bytes;
- gzip and deflate bombs (HTTP `Content-Encoding`, gRPC `grpc-encoding: gzip`);
- for the transforms: real captured traces (tests/testdata/captures) decoded and then mutated
  span by span (attributes cut, of the wrong type, nested deep, keys of other conventions,
  parent cycles, duplicate and missing spans, times reversed).

Three levels, each case with a time limit (a hang is a case past it):

1. decoder: the receivers' own request path in process (`_ingest.ingest` with a sink that
   fully decodes, groups and builds runs and serializes them as the queue does), plus
   `decode_*` directly: most of the cases, as they are cheap;
2. receiver: the real `GrpcReceiver` and `HttpReceiver` on loopback ports (free ports, a
   recording sink), raw requests from a gRPC channel and an HTTP client;
3. transforms: `build_runs` on mutated real traces, every run serialized as the queue does.

Figure: cases run; crashes (an exception out of a decoder, `ingest` or `build_runs`, a sink
failure answered as 503 "internal", a gRPC UNKNOWN/INTERNAL or an HTTP 500); hangs (past the
per-case limit); unexpected statuses (anything but OK / partial success, INVALID_ARGUMENT/400,
RESOURCE_EXHAUSTED/413, 415, UNAVAILABLE/503); refusals not counted in
`scorecar_spans_refused_total` (the counter's growth against the refusals the answers report).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import http.client
import json
import signal
import struct
import sys
import threading
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped,unused-ignore]  # noqa: E402
from google.rpc import status_pb2  # type: ignore[import-untyped,unused-ignore]  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: E402
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceResponse,
)

from collector._telemetry import Metrics  # noqa: E402
from collector.intake._ingest import decode_body  # noqa: E402
from collector.intake._ports import BodyKind  # noqa: E402
from collector.otlp import (  # noqa: E402
    Decoded,
    decode_json_bytes,
    decode_logs_protobuf,
    decode_traces_protobuf,
    scan_traces_protobuf,
)
from collector.receivers import GrpcReceiver, HttpReceiver  # noqa: E402
from collector.receivers._request import Refused, ingest  # noqa: E402
from transforms import Reason, Span, Trace, build_runs, group_traces  # noqa: E402
from transforms.types import LogEvent  # noqa: E402

CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
LIMIT_MIB = 1.0  # the fuzzed receivers' size limit: bombs and huge fields pass it cheaply
LIMIT = int(LIMIT_MIB * 1024 * 1024)
GRPC_TRANSPORT_LIMIT = max(2 * LIMIT, 4 * 1024 * 1024)  # GrpcReceiver's own transport limit
CASE_TIMEOUT = 10.0  # seconds: a case past this is a hang
MUTANTS = 7  # byte-level mutants run per structured body at the decoder level

# --------------------------------------------------------------------------- protobuf wire

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes | int) -> bytes:
    tag = _varint((number << 3) | wire)
    if wire == _VARINT:
        assert isinstance(payload, int)
        return tag + _varint(payload)
    if wire == _I64:
        assert isinstance(payload, int)
        return tag + struct.pack("<Q", payload & ((1 << 64) - 1))
    if wire == _I32:
        assert isinstance(payload, int)
        return tag + struct.pack("<I", payload & 0xFFFFFFFF)
    assert isinstance(payload, bytes)
    return tag + _varint(len(payload)) + payload


# The OTLP messages' fields: number -> (wire type, type). Types: a message name, "str", "bytes",
# "id16", "id8", "u64" (varint), "f64" (fixed64), "f32" (fixed32), "dbl", "bool", "enum".
SCHEMA: dict[str, dict[int, tuple[int, str]]] = {
    "ExportTraceServiceRequest": {1: (_LEN, "ResourceSpans")},
    "ExportLogsServiceRequest": {1: (_LEN, "ResourceLogs")},
    "ResourceSpans": {1: (_LEN, "Resource"), 2: (_LEN, "ScopeSpans"), 3: (_LEN, "str")},
    "ResourceLogs": {1: (_LEN, "Resource"), 2: (_LEN, "ScopeLogs"), 3: (_LEN, "str")},
    "Resource": {1: (_LEN, "KeyValue"), 2: (_VARINT, "u64")},
    "Scope": {1: (_LEN, "str"), 2: (_LEN, "str"), 3: (_LEN, "KeyValue")},
    "ScopeSpans": {1: (_LEN, "Scope"), 2: (_LEN, "Span"), 3: (_LEN, "str")},
    "ScopeLogs": {1: (_LEN, "Scope"), 2: (_LEN, "LogRecord"), 3: (_LEN, "str")},
    "Span": {1: (_LEN, "id16"), 2: (_LEN, "id8"), 3: (_LEN, "str"), 4: (_LEN, "id8"),
             5: (_LEN, "str"), 6: (_VARINT, "enum"), 7: (_I64, "f64"), 8: (_I64, "f64"),
             9: (_LEN, "KeyValue"), 10: (_VARINT, "u64"), 11: (_LEN, "Event"),
             12: (_VARINT, "u64"), 13: (_LEN, "Link"), 14: (_VARINT, "u64"),
             15: (_LEN, "Status"), 16: (_I32, "f32")},
    "Event": {1: (_I64, "f64"), 2: (_LEN, "str"), 3: (_LEN, "KeyValue"), 4: (_VARINT, "u64")},
    "Link": {1: (_LEN, "id16"), 2: (_LEN, "id8"), 3: (_LEN, "str"), 4: (_LEN, "KeyValue")},
    "Status": {2: (_LEN, "str"), 3: (_VARINT, "enum")},
    "LogRecord": {1: (_I64, "f64"), 2: (_VARINT, "enum"), 3: (_LEN, "str"), 5: (_LEN, "AnyValue"),
                  6: (_LEN, "KeyValue"), 7: (_VARINT, "u64"), 8: (_I32, "f32"),
                  9: (_LEN, "id16"), 10: (_LEN, "id8"), 11: (_I64, "f64"), 12: (_LEN, "str")},
    "KeyValue": {1: (_LEN, "str"), 2: (_LEN, "AnyValue")},
    "AnyValue": {1: (_LEN, "str"), 2: (_VARINT, "bool"), 3: (_VARINT, "u64"), 4: (_I64, "dbl"),
                 5: (_LEN, "ArrayValue"), 6: (_LEN, "KeyValueList"), 7: (_LEN, "bytes")},
    "ArrayValue": {1: (_LEN, "AnyValue")},
    "KeyValueList": {1: (_LEN, "KeyValue")},
}
_REPEATED_CHILD = {"ExportTraceServiceRequest": 1, "ExportLogsServiceRequest": 1,
                   "ResourceSpans": 2, "ResourceLogs": 2, "ScopeSpans": 2, "ScopeLogs": 2,
                   "Span": 9, "LogRecord": 6, "ArrayValue": 1, "KeyValueList": 1}
GENAI_KEYS = ["gen_ai.operation.name", "gen_ai.input.messages", "gen_ai.output.messages",
              "gen_ai.system_instructions", "gen_ai.agent.name", "gen_ai.tool.name",
              "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value",
              "output.value", "openinference.span.kind", "ai.prompt.messages",
              "ai.response.text", "llm.input_messages.0.message.content", "service.name"]
_GENAI_TEXT = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
                          {"role": "assistant", "parts": [
                              {"type": "tool_call", "id": "c1", "name": "get_weather",
                               "arguments": {"city": "Paris"}}]}])

_INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80",
                 b"\xe2\x82"]


def _id_bytes(size: int) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(min_size=size, max_size=size).filter(any),  # a valid id
        st.binary(min_size=size, max_size=size).filter(any),
        st.binary(min_size=size, max_size=size).filter(any),
        st.just(bytes(size)),                                  # all zeros
        st.binary(max_size=2 * size + 3),                      # wrong length
    )


def _text_bytes() -> st.SearchStrategy[bytes]:
    good = st.one_of(st.text(max_size=20), st.sampled_from(["invoke_agent", "chat",
                                                            "execute_tool", _GENAI_TEXT]),
                     st.sampled_from(GENAI_KEYS),
                     st.integers(0, len(_GENAI_TEXT)).map(lambda n: _GENAI_TEXT[:n]))
    return st.one_of(good.map(lambda s: s.encode("utf-8", "surrogatepass")),
                     good.map(lambda s: s.encode("utf-8", "surrogatepass")),
                     st.tuples(good, st.sampled_from(_INVALID_UTF8)).map(
                         lambda t: t[0].encode("utf-8", "surrogatepass") + t[1]))


_SCALARS: dict[str, st.SearchStrategy[bytes | int]] = {}


def _scalar_payload(wire: int, kind: str) -> st.SearchStrategy[bytes | int]:
    if kind not in _SCALARS:
        _SCALARS[kind] = _make_scalar(kind)
    return _SCALARS[kind]


def _make_scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind == "id16":
        return _id_bytes(16)
    if kind == "id8":
        return _id_bytes(8)
    if kind == "str":
        return _text_bytes()
    if kind == "bytes":
        return st.binary(max_size=24)
    if kind in ("f64", "dbl"):
        return st.one_of(st.integers(0, (1 << 64) - 1),
                         st.floats().map(lambda f: struct.unpack("<Q", struct.pack("<d", f))[0]))
    if kind == "f32":
        return st.integers(0, 0xFFFFFFFF)
    if kind == "bool":
        return st.integers(0, 3)
    return st.one_of(st.integers(0, 7), st.integers(0, (1 << 64) - 1))  # u64 / enum


_WRONG: dict[int, st.SearchStrategy[bytes]] = {}


def _wrong_field(number: int) -> st.SearchStrategy[bytes]:
    if number not in _WRONG:
        _WRONG[number] = _make_wrong(number)
    return _WRONG[number]


def _make_wrong(number: int) -> st.SearchStrategy[bytes]:
    """A field with a number the message has, or not, of any wire type (often the wrong one)."""
    return st.one_of(
        st.tuples(st.just(number), st.sampled_from([_VARINT, _I64, _I32]),
                  st.integers(0, (1 << 64) - 1)).map(lambda t: _field(*t)),
        st.tuples(st.just(number), st.just(_LEN), st.binary(max_size=16)).map(
            lambda t: _field(*t)),
        st.tuples(st.integers(1, 40), st.sampled_from([_VARINT, _I64, _LEN, _I32]),
                  st.integers(0, 1000)).map(
            lambda t: _field(t[0], t[1], t[2] if t[1] != _LEN else b"x" * (t[2] % 7))),
        st.sampled_from([b"\x0f", b"\x0b", b"\x0c", b"\x80", b"\xff\xff\xff\xff\xff"
                         b"\xff\xff\xff\xff\xff\x01"]),  # wire types 3, 4, 7; bad varints
    )


def _deep_any(depth: int) -> bytes:
    """An AnyValue of `depth` nested arrays around a string."""
    value = _field(1, _LEN, b"deep")
    for i in range(depth):
        wrapper = _field(1, _LEN, value)  # ArrayValue.values
        value = _field(5, _LEN, wrapper) if i % 2 else _field(6, _LEN, _field(
            1, _LEN, _field(1, _LEN, b"k") + _field(2, _LEN, value)))
    return value


_MAX_DEPTH = 5
_PB: dict[tuple[str, int], st.SearchStrategy[bytes]] = {}


def pb_message(name: str, depth: int = 0) -> st.SearchStrategy[bytes]:
    """One message of `SCHEMA[name]`, field by field, sometimes broken (strategies cached)."""
    key = (name, min(depth, _MAX_DEPTH))
    if key not in _PB:
        _PB[key] = _pb_message(name, key[1])
    return _PB[key]


@st.composite
def _pb_message(draw: st.DrawFn, name: str, depth: int) -> bytes:
    fields = SCHEMA[name]
    numbers = draw(st.lists(st.sampled_from(sorted(fields)), max_size=4 if depth < 3 else 2))
    repeated = _REPEATED_CHILD.get(name)
    if repeated is not None and depth < 3:
        numbers += [repeated] * draw(st.integers(0, 2))
    out = bytearray()
    for number in numbers:
        wire, kind = fields[number]
        if draw(st.integers(0, 19)) == 0:
            out += draw(_wrong_field(number))
            continue
        if kind in SCHEMA:
            if depth >= _MAX_DEPTH:
                continue
            if kind == "AnyValue" and draw(st.integers(0, 39)) == 0:
                out += _field(number, _LEN, _deep_any(draw(st.sampled_from([40, 70, 120]))))
                continue
            out += _field(number, _LEN, draw(pb_message(kind, depth + 1)))
        else:
            out += _field(number, wire, draw(_scalar_payload(wire, kind)))
    if repeated is not None and depth < 3 and draw(st.integers(0, 59)) == 0:
        # A huge repeated field: one small child copied many times.
        child = draw(pb_message(fields[repeated][1], _MAX_DEPTH))
        out += _field(repeated, _LEN, child) * draw(st.sampled_from([500, 5_000]))
    return bytes(out)


def _mutate_bytes(body: bytes, how: int, at: int, garbage: bytes) -> bytes:
    if how == 1 and body:
        return body[: at % len(body)]                       # truncated
    if how == 2 and body:
        i = at % len(body)
        return body[:i] + bytes([body[i] ^ (1 << (at % 8))]) + body[i + 1:]  # a bit flipped
    if how == 3:
        return body + garbage                               # trailing garbage
    if how == 4 and body:
        i = at % len(body)
        return body[:i] + garbage + body[i:]                # garbage inside
    return body


@st.composite
def pb_body(draw: st.DrawFn, logs: bool) -> bytes:
    body = draw(pb_message("ExportLogsServiceRequest" if logs else "ExportTraceServiceRequest"))
    how = draw(st.integers(0, 9))
    return _mutate_bytes(body, how, draw(st.integers(0, 1 << 20)), draw(st.binary(max_size=12)))


# --------------------------------------------------------------------------- OTLP/JSON

_JUNK: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=1 << 64),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(["NaN", "Infinity", "-1", "1e400", "0x10", "١٢", "18446744073709551616"]),
    st.just([]), st.just({}), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def _or_junk(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly `good`, one time in six a value of any JSON type."""
    return st.one_of(good, good, good, good, good, _JUNK)


def _json_id(size: int) -> st.SearchStrategy[Any]:
    return _or_junk(st.one_of(
        st.binary(min_size=size, max_size=size).filter(any).map(bytes.hex),
        st.binary(min_size=size, max_size=size).filter(any).map(bytes.hex),
        st.binary(min_size=size, max_size=size).filter(any).map(
            lambda b: base64.b64encode(b).decode()),
        st.just("0" * 2 * size), st.just(""), st.text(max_size=2 * size + 2),
        st.binary(max_size=size + 3).map(bytes.hex)))


_JSON_TEXT = st.one_of(
    st.text(max_size=12), st.sampled_from(["invoke_agent", "chat", "execute_tool", _GENAI_TEXT]),
    st.integers(0, len(_GENAI_TEXT)).map(lambda n: _GENAI_TEXT[:n]),     # truncated JSON text
    st.integers(1, 300).map(lambda n: "[" * n + "]" * (n // 2)),          # nested JSON text
    st.sampled_from(["a\ud800b", "\udfff", "\ud83d\ude00"]))               # lone surrogates


# Span text as the decoders give it: no lone surrogates (they replace them), escapes of them
# inside JSON text kept.
_SPAN_TEXT = _JSON_TEXT.filter(lambda t: t.encode("utf-8", "surrogatepass") == t.encode(
    "utf-8", "replace")) | st.just('["a\\ud800"]')


def _json_any(depth: int = 0) -> st.SearchStrategy[Any]:
    scalar = st.one_of(
        st.builds(lambda s: {"stringValue": s}, _or_junk(_JSON_TEXT)),
        st.builds(lambda i: {"intValue": i}, _or_junk(st.one_of(
            st.integers(-(1 << 63), (1 << 63) - 1), st.integers().map(str)))),
        st.builds(lambda b: {"boolValue": b}, _or_junk(st.booleans())),
        st.builds(lambda d: {"doubleValue": d}, _or_junk(st.one_of(
            st.floats(allow_nan=False, allow_infinity=False),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5"])))),
        st.builds(lambda b: {"bytesValue": b}, _or_junk(st.binary(max_size=8).map(
            lambda b: base64.b64encode(b).decode()))),
        st.just({}), st.just({"stringValue": "a", "intValue": 1}))
    if depth >= 3:
        return scalar
    inner = st.deferred(lambda: _json_any(depth + 1))
    return st.one_of(
        scalar, scalar, scalar,
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, _or_junk(st.lists(inner, max_size=3))),
        st.builds(lambda kvs: {"kvlistValue": {"values": kvs}},
                  _or_junk(st.lists(_json_kv(depth + 1), max_size=3))),
        st.integers(60, 140).map(_deep_json_any))


def _deep_json_any(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "deep"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def _json_kv(depth: int = 0) -> st.SearchStrategy[Any]:
    return _or_junk(st.fixed_dictionaries(
        {"key": _or_junk(st.one_of(st.sampled_from(GENAI_KEYS), st.text(max_size=6)))},
        optional={"value": _json_any(depth)}))


def _json_attrs() -> st.SearchStrategy[Any]:
    return _or_junk(st.lists(_json_kv(), max_size=4))


def _uint_json() -> st.SearchStrategy[Any]:
    return _or_junk(st.one_of(st.integers(0, (1 << 64) - 1).map(str),
                              st.integers(0, (1 << 64) - 1)))


def _json_span() -> st.SearchStrategy[Any]:
    return _or_junk(st.fixed_dictionaries({
        "traceId": _json_id(16), "spanId": _json_id(8)}, optional={
        "parentSpanId": _json_id(8), "name": _or_junk(_JSON_TEXT),
        "kind": _or_junk(st.one_of(st.integers(0, 6), st.sampled_from(
            ["SPAN_KIND_CLIENT", "INTERNAL", "BOGUS"]))),
        "startTimeUnixNano": _uint_json(), "endTimeUnixNano": _uint_json(),
        "attributes": _json_attrs(),
        "events": _or_junk(st.lists(_or_junk(st.fixed_dictionaries(
            {"name": _or_junk(_JSON_TEXT)}, optional={"timeUnixNano": _uint_json(),
                                                      "attributes": _json_attrs()})),
            max_size=2)),
        "links": _or_junk(st.lists(_or_junk(st.fixed_dictionaries(
            {"traceId": _json_id(16), "spanId": _json_id(8)}, optional={
                "attributes": _json_attrs(), "flags": _uint_json()})), max_size=2)),
        "status": _or_junk(st.fixed_dictionaries({}, optional={
            "code": _or_junk(st.sampled_from([0, 1, 2, "STATUS_CODE_ERROR", 7])),
            "message": _or_junk(_JSON_TEXT)})),
        "flags": _uint_json(), "droppedAttributesCount": _uint_json(),
        "traceState": _or_junk(st.text(max_size=4))}))


def _json_log() -> st.SearchStrategy[Any]:
    return _or_junk(st.fixed_dictionaries({"traceId": _json_id(16)}, optional={
        "spanId": _json_id(8), "eventName": _or_junk(_JSON_TEXT), "body": _json_any(),
        "attributes": _json_attrs(), "timeUnixNano": _uint_json(),
        "observedTimeUnixNano": _uint_json(),
        "severityNumber": _or_junk(st.sampled_from([0, 9, "SEVERITY_NUMBER_INFO", 99])),
        "severityText": _or_junk(st.text(max_size=5))}))


def _json_resource() -> st.SearchStrategy[Any]:
    return _or_junk(st.fixed_dictionaries({}, optional={"attributes": _json_attrs()}))


def _json_scope() -> st.SearchStrategy[Any]:
    return _or_junk(st.fixed_dictionaries({}, optional={
        "name": _or_junk(st.text(max_size=6)), "version": _or_junk(st.text(max_size=4)),
        "attributes": _json_attrs()}))


def json_doc(logs: bool) -> st.SearchStrategy[Any]:
    """An OTLP/JSON request object, its fields sometimes of the wrong JSON type."""
    if logs:
        inner = st.fixed_dictionaries({"scope": _json_scope(), "logRecords": _or_junk(
            st.lists(_json_log(), max_size=3))})
        outer = st.fixed_dictionaries({"resource": _json_resource(), "scopeLogs": _or_junk(
            st.lists(_or_junk(inner), max_size=2))})
        key = "resourceLogs"
    else:
        inner = st.fixed_dictionaries({"scope": _json_scope(), "spans": _or_junk(
            st.lists(_json_span(), max_size=3))})
        outer = st.fixed_dictionaries({"resource": _json_resource(), "scopeSpans": _or_junk(
            st.lists(_or_junk(inner), max_size=2))})
        key = "resourceSpans"
    return st.one_of(
        st.builds(lambda v: {key: v}, _or_junk(st.lists(_or_junk(outer), max_size=2))),
        st.builds(lambda v: {key: v}, _or_junk(st.lists(_or_junk(outer), max_size=2))),
        st.builds(lambda v: {key: v}, _or_junk(st.lists(_or_junk(outer), max_size=2))),
        _JUNK, st.just({"resourceSpans": [], "resourceLogs": []}))


_DOCS: dict[bool, st.SearchStrategy[Any]] = {}


@st.composite
def json_body(draw: st.DrawFn, logs: bool) -> bytes:
    if logs not in _DOCS:
        _DOCS[logs] = json_doc(logs)
    doc = draw(_DOCS[logs])
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    how = draw(st.integers(0, 11))
    if how == 5:
        n = draw(st.sampled_from([50, 2_000, 100_000]))
        text = "[" * n + "]" * n                              # nested past the parser's stack
    elif how == 6:
        text = text.replace('"', "'", 1)
    raw = text.encode("utf-8", "surrogatepass")
    if how == 7:
        i = draw(st.integers(0, len(raw)))
        return raw[:i] + draw(st.sampled_from(_INVALID_UTF8)) + raw[i:]   # invalid UTF-8
    return _mutate_bytes(raw, how if how < 5 else 0, draw(st.integers(0, 1 << 20)),
                         draw(st.binary(max_size=6)))


KINDS: tuple[BodyKind, ...] = ("traces_protobuf", "logs_protobuf", "traces_json", "logs_json")


_BODIES: dict[str, st.SearchStrategy[bytes]] = {}


def body_for(kind: BodyKind) -> st.SearchStrategy[bytes]:
    """Bodies of one kind (strategies cached: building them costs more than drawing)."""
    if kind not in _BODIES:
        logs = kind.startswith("logs")
        _BODIES[kind] = pb_body(logs) if kind.endswith("protobuf") else json_body(logs)
    return _BODIES[kind]


any_case = st.sampled_from(KINDS).flatmap(lambda k: st.tuples(st.just(k), body_for(k)))

# --------------------------------------------------------------------------- compression bombs

_BOMBS: dict[tuple[str, int], bytes] = {}


def bomb(encoding: str, size: int) -> bytes:
    """`size` zero bytes compressed (gzip or deflate): a few KB that inflate past the limit."""
    key = (encoding, size)
    if key not in _BOMBS:
        raw = bytes(size)
        _BOMBS[key] = gzip.compress(raw, 9) if encoding == "gzip" else zlib.compress(raw, 9)
    return _BOMBS[key]


BOMB_SIZES = (LIMIT // 2, LIMIT + 1, 3 * LIMIT, 40 * LIMIT)

# --------------------------------------------------------------------------- the oracle


@dataclass
class Figure:
    """What one fuzz level counted."""

    cases: int = 0
    crashes: int = 0
    hangs: int = 0
    unexpected: int = 0
    refusals: int = 0          # refusals the answers reported (requests + dropped items)
    counted: float = 0.0       # growth of scorecar_spans_refused_total
    statuses: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def problem(self, kind: str, detail: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < 8:
            self.examples.append(f"{kind}: {detail}")

    @property
    def uncounted(self) -> int:
        return int(self.refusals - self.counted)

    def merge(self, other: Figure) -> None:
        for name in ("cases", "crashes", "hangs", "unexpected", "refusals", "counted"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.statuses.update(other.statuses)
        self.examples.extend(other.examples[: max(0, 8 - len(self.examples))])


class CaseTimeout(Exception):
    """A case ran past `CASE_TIMEOUT`."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `CaseTimeout` in this (main) thread after `seconds`; a no-op off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"over {seconds}s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def refused_total(metrics: Metrics) -> float:
    """The sum of `scorecar_spans_refused_total` over its reasons."""
    total = 0.0
    for family in metrics.registry.collect():
        if family.name == "scorecar_spans_refused":
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return total


def check_runs(spans: list[Span], logs: list[LogEvent]) -> None:
    """What the app does with decoded spans: group, build runs, serialize them for the queue.

    Raises:
        AssertionError: a reason code outside `transforms.Reason`.
        Exception: whatever `build_runs` or the serialization raised (a crash).
    """
    for trace in group_traces(spans, logs).values():
        built = build_runs(trace)
        stray = [k for k in built.reasons if not isinstance(k, Reason)]
        assert not stray, f"reason codes outside transforms.Reason: {stray}"
        for run in built.runs:
            run.model_dump_json(by_alias=True)  # the queue stores runs so (collector/scoring/queue/_sqlite.py)


class CheckingSink:
    """A `SpanSink` that does the app's work on what it gets and remembers what failed.

    Unlike the app's it never raises: a failure here would be answered as a retryable 503 and
    hide the crash, so it is recorded in `failures` instead.
    """

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.accepted = 0
        self.undecoded_bytes = 0

    def check_capacity(self) -> None:
        return None

    async def accept(self, decoded: Decoded, transport: str, body: bytes,
                     kind: BodyKind) -> None:
        self.accepted += 1
        try:
            full = decode_body(kind, body) if decoded.undecoded else decoded
            if decoded.undecoded:
                assert len(full.spans) == decoded.undecoded, (
                    f"scan kept {decoded.undecoded} spans, decode {len(full.spans)}")
            check_runs(full.spans, full.logs)
        except CaseTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            self.failures.append(f"{kind} sink: {type(exc).__name__}: {exc}"[:300])


def _short(body: bytes) -> str:
    return repr(body[:120]) + (f"... ({len(body)} bytes)" if len(body) > 120 else "")


def mutants(body: bytes, seed: int, n: int) -> list[bytes]:
    """`body` and `n` byte-level mutants of it (cut, bit flips, garbage, invalid UTF-8)."""
    import random
    rng = random.Random(seed)
    out = [body]
    for _ in range(n):
        how = rng.randrange(6)
        if how == 5 and body:
            i = rng.randrange(len(body))
            out.append(body[:i] + rng.choice(_INVALID_UTF8) + body[i:])
        else:
            out.append(_mutate_bytes(body, how or 1, rng.randrange(1 << 20),
                                     rng.randbytes(rng.randrange(1, 8))))
    return out


def decoder_case(fig: Figure, loop: asyncio.AbstractEventLoop, kind: BodyKind,
                 body: bytes) -> None:
    """One body through the receivers' request path in process, and through every decoder."""
    metrics, sink = Metrics(), CheckingSink()
    fig.cases += 1
    try:
        with time_limit(CASE_TIMEOUT):
            for decode in (decode_traces_protobuf, scan_traces_protobuf, decode_logs_protobuf,
                           decode_json_bytes):
                decoded = decode(body)
                assert all(isinstance(r, Reason) or r in Reason.__members__.values()
                           for r in decoded.refused), decoded.refused
            try:
                accepted = loop.run_until_complete(ingest(sink, metrics, "fuzz", body, kind))
            except Refused as exc:
                fig.statuses[exc.status] += 1
                fig.refusals += 1
                if exc.status == "internal":
                    fig.problem("crashes", f"{kind} answered internal: {exc.message[:200]}")
                elif exc.status not in ("malformed", "oversized", "unsupported", "overloaded"):
                    fig.problem("unexpected", f"{kind} {exc.status}")
            else:
                fig.statuses["partial" if accepted.rejected else "ok"] += 1
                fig.refusals += accepted.rejected
    except CaseTimeout:
        fig.problem("hangs", f"{kind} {_short(body)}")
        return
    except Exception as exc:  # noqa: BLE001
        fig.problem("crashes", f"{kind} {type(exc).__name__}: {exc} on {_short(body)}\n"
                               f"{traceback.format_exc(limit=-3)}")
        return
    fig.counted += refused_total(metrics)
    for failure in sink.failures:
        fig.problem("crashes", f"{failure} on {_short(body)}")


# --------------------------------------------------------------------------- transforms


def load_corpus() -> list[Trace]:
    """The captured traces (every capture), decoded."""
    traces: list[Trace] = []
    for path in CAPTURES:
        out = Decoded()
        for line in path.read_bytes().splitlines():
            if line.strip():
                out.extend(decode_json_bytes(line))
        traces.extend(group_traces(out.spans, out.logs).values())
    return traces


_CORPUS: list[Trace] = []


def corpus() -> list[Trace]:
    if not _CORPUS:
        _CORPUS.extend(load_corpus())
    return _CORPUS


def _deep(n: int) -> Any:
    value: Any = "deep"
    for i in range(n):
        value = [value] if i % 2 else {"k": value}
    return value


_VALUE_JUNK: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
    st.binary(max_size=6), st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
    st.sampled_from(["[", "{", "[{\"role\": ", "null", "[]", "{}", "[1, 2]", "\"x\"",
                     '[{"role": "user", "parts": 5}]', '[{"role": 1, "content": [{}]}]',
                     '{"messages": {"role": "user"}}', "[" * 500,
                     # lone surrogates arrive as JSON escapes inside text (decoders replace
                     # them in OTLP/JSON bodies themselves)
                     '[{"role": "user", "content": "a\\ud800"}]', '"\\udfff x"']),
    # Values nest at most 64 deep out of the decoders (collector.otlp._decoded.MAX_VALUE_DEPTH); JSON text
    # inside a string nests as deep as it likes.
    st.integers(40, 66).map(_deep), st.integers(40, 400).map(lambda n: "[" * n + "]" * n))


@st.composite
def mutated_trace(draw: st.DrawFn) -> Trace:
    """A captured trace with a few span/log mutations (structure kept, contents broken)."""
    base = draw(st.sampled_from(corpus()))
    spans = [replace(s, attributes=dict(s.attributes)) for s in base.spans]
    logs = [replace(lg, attributes=dict(lg.attributes)) for lg in base.logs]
    all_keys = sorted({k for t in corpus()[:40] for s in t.spans for k in s.attributes})
    for _ in range(draw(st.integers(1, 6))):
        if not spans:
            break
        i = draw(st.integers(0, len(spans) - 1))
        s = spans[i]
        op = draw(st.integers(0, 11))
        keys = sorted(s.attributes)
        if op <= 2 and keys:
            key = draw(st.sampled_from(keys))
            value = s.attributes[key]
            if op == 0 and isinstance(value, str) and value:
                s.attributes[key] = value[: draw(st.integers(0, len(value) - 1))]  # cut
            else:
                s.attributes[key] = draw(_VALUE_JUNK)                           # wrong type
        elif op == 3:
            s.attributes[draw(st.sampled_from(all_keys))] = draw(st.one_of(
                _VALUE_JUNK, st.sampled_from([_GENAI_TEXT, "invoke_agent", "chat", "tool"])))
        elif op == 4:
            spans[i] = replace(s, parent_span_id=draw(st.sampled_from(spans)).span_id)  # cycle?
        elif op == 5:
            spans.append(replace(s, attributes=dict(s.attributes)))                 # duplicate
        elif op == 6:
            del spans[i]                                                            # missing
        elif op == 7:
            spans[i] = replace(s, start_time_unix_nano=s.end_time_unix_nano + 1,
                               end_time_unix_nano=draw(st.sampled_from(
                                   [0, s.start_time_unix_nano, (1 << 64) - 1])))
        elif op == 8:
            spans[i] = replace(s, parent_span_id=draw(st.sampled_from(
                [None, "ffffffffffffffff", s.span_id])))
        elif op == 9:
            spans[i] = replace(s, name=draw(st.text(max_size=10)),
                               kind=draw(st.sampled_from(["CLIENT", "SERVER", "BOGUS"])),
                               status_code=draw(st.sampled_from(["ERROR", "OK", "UNSET"])),
                               status_message=draw(_SPAN_TEXT))
        elif op == 10 and logs:
            j = draw(st.integers(0, len(logs) - 1))
            logs[j] = replace(logs[j], body=draw(_VALUE_JUNK),
                              span_id=draw(st.sampled_from([logs[j].span_id, "",
                                                            spans[i].span_id])))
        elif op == 11:
            spans[i] = replace(s, resource={**s.resource, draw(st.sampled_from(
                ["service.name", "telemetry.sdk.name", "openinference.project.name"])):
                draw(_VALUE_JUNK)})
    return Trace(base.trace_id, spans, logs)


def transforms_case(fig: Figure, trace: Trace) -> None:
    fig.cases += 1
    try:
        with time_limit(CASE_TIMEOUT):
            check_runs(trace.spans, trace.logs)
    except CaseTimeout:
        fig.problem("hangs", f"build_runs on a mutated trace of {len(trace.spans)} spans")
    except Exception as exc:  # noqa: BLE001
        fig.problem("crashes", f"build_runs {type(exc).__name__}: {exc}\n"
                               f"{traceback.format_exc(limit=-3)}")


# --------------------------------------------------------------------------- receivers


class Receivers:
    """Both receivers on free loopback ports in a background event loop, with `CheckingSink`s."""

    def __init__(self) -> None:
        self.metrics = Metrics()
        self.sink = CheckingSink()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.grpc = GrpcReceiver(self.sink, self.metrics, endpoint="127.0.0.1:0",
                                 max_recv_msg_size_mib=LIMIT_MIB)
        self.http = HttpReceiver(self.sink, self.metrics, endpoint="127.0.0.1:0",
                                 max_recv_msg_size_mib=LIMIT_MIB)
        self.grpc_port = self.http_port = 0
        self.channel: grpc.Channel | None = None
        self.conn: http.client.HTTPConnection | None = None
        self.last_json = False

    def __enter__(self) -> Receivers:
        self._thread.start()
        self.grpc_port = self._run(self.grpc.start())
        self.http_port = self._run(self.http.start())
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}", options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024)])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.channel is not None:
            self.channel.close()
        if self.conn is not None:
            self.conn.close()
        self._run(self.grpc.stop(grace=0))
        self._run(self.http.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def refused(self) -> float:
        return refused_total(self.metrics)

    def grpc_call(self, kind: BodyKind, body: bytes,
                  compression: grpc.Compression | None = None) -> tuple[str, int]:
        """Status name and rejected count of one raw Export call (`compression`: the channel
        compresses `body` on the wire)."""
        assert self.channel is not None
        method = LOGS if kind.startswith("logs") else TRACES
        rpc = self.channel.unary_unary(method, request_serializer=None,
                                       response_deserializer=None)
        try:
            reply = rpc(body, timeout=CASE_TIMEOUT, compression=compression)
        except grpc.RpcError as exc:
            return exc.code().name, 0
        if kind.startswith("logs"):
            lresp = ExportLogsServiceResponse.FromString(reply)
            return "OK", lresp.partial_success.rejected_log_records
        tresp = ExportTraceServiceResponse.FromString(reply)
        return "OK", tresp.partial_success.rejected_spans

    def http_post(self, kind: BodyKind, body: bytes, content_type: str,
                  encoding: str = "") -> tuple[int, int, bytes]:
        """HTTP status, rejected count and body of one POST."""
        path = "/v1/logs" if kind.startswith("logs") else "/v1/traces"
        headers = {"Content-Type": content_type}
        if encoding:
            headers["Content-Encoding"] = encoding
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.http_port,
                                                       timeout=CASE_TIMEOUT)
            try:
                self.conn.request("POST", path, body=body, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                self.last_json = resp.getheader("Content-Type", "").startswith(
                    "application/json")
                break
            except (ConnectionError, http.client.HTTPException):
                # The server may close a connection after refusing a body it did not read.
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        if resp.status != 200:
            return resp.status, 0, data
        as_json = resp.getheader("Content-Type", "").startswith("application/json")
        if kind.startswith("logs"):
            lresp = ExportLogsServiceResponse()
            _parse(lresp, data, as_json)
            return 200, lresp.partial_success.rejected_log_records, data
        tresp = ExportTraceServiceResponse()
        _parse(tresp, data, as_json)
        return 200, tresp.partial_success.rejected_spans, data


def _parse(message: Any, data: bytes, as_json: bool) -> None:
    from google.protobuf import json_format
    if as_json:
        json_format.Parse(data, message)
    else:
        message.ParseFromString(data)


GRPC_OK = {"OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNAVAILABLE"}
HTTP_OK = {200, 400, 413, 415, 503}
_CTYPES = {"protobuf": ["application/x-protobuf", "application/protobuf"],
           "json": ["application/json"]}


@st.composite
def receiver_case(draw: st.DrawFn) -> tuple[str, BodyKind, bytes, str, str]:
    """(transport, kind, body, content type, encoding): raw bodies, bombs, odd headers."""
    kind = draw(st.sampled_from(KINDS))
    transport = draw(st.sampled_from(["grpc", "http"]))
    what = draw(st.integers(0, 19))
    encoding = ""
    if what == 0 and transport == "http":
        encoding = draw(st.sampled_from(["gzip", "deflate"]))
        body = bomb(encoding, draw(st.sampled_from(BOMB_SIZES)))
    elif what == 0:  # the channel compresses (grpc-encoding: gzip): zeros are a bomb on the wire
        encoding = "gzip"
        body = bytes(draw(st.sampled_from(BOMB_SIZES)))
    else:
        body = draw(body_for(kind))
        if what == 1 and transport == "http":
            encoding = draw(st.sampled_from(["gzip", "deflate", "br", "identity", "GZIP"]))
            if encoding.lower() == "gzip":
                body = gzip.compress(body)
                body = body[: draw(st.integers(len(body) // 2, len(body)))]  # maybe truncated
            elif encoding == "deflate":
                body = zlib.compress(body)
        elif what == 1:
            encoding = "gzip"
    family = "json" if kind.endswith("json") else "protobuf"
    ctype = draw(st.one_of(st.sampled_from(_CTYPES[family]),
                           st.sampled_from(["text/plain", "application/xml", "",
                                            "application/json; charset=utf-8"])))
    if draw(st.integers(0, 4)):
        ctype = _CTYPES[family][0]
    return transport, kind, body, ctype, encoding


def receiver_case_run(fig: Figure, rx: Receivers, case: tuple[str, BodyKind, bytes, str, str]
                      ) -> None:
    try:
        _receiver_case(fig, rx, case)
    except Exception as exc:  # noqa: BLE001 - an answer this harness cannot read is a finding
        fig.problem("unexpected", f"unreadable answer to {case[0]} {case[1]} {case[3]!r}: "
                                  f"{type(exc).__name__}: {exc}"[:400])


def _receiver_case(fig: Figure, rx: Receivers, case: tuple[str, BodyKind, bytes, str, str]
                   ) -> None:
    transport, kind, body, ctype, encoding = case
    fig.cases += 1
    before = rx.refused()
    failures = len(rx.sink.failures)
    started = time.monotonic()
    counted = True
    try:
        if transport == "grpc":
            compression = grpc.Compression.Gzip if encoding == "gzip" else None
            status, rejected = rx.grpc_call(kind, body, compression)
            fig.statuses[f"grpc {status}"] += 1
            if status == "DEADLINE_EXCEEDED":
                fig.problem("hangs", f"grpc {kind} {_short(body)}")
                return
            if status not in GRPC_OK:
                fig.problem("crashes" if status in ("UNKNOWN", "INTERNAL") else "unexpected",
                            f"grpc {status} for {kind} {_short(body)}")
                return
            refused = rejected if status == "OK" else 1
            # Past twice the limit gRPC itself refuses (documented as uncounted).
            counted = not (status == "RESOURCE_EXHAUSTED" and len(body) > GRPC_TRANSPORT_LIMIT)
        else:
            code, rejected, data = rx.http_post(kind, body, ctype, encoding)
            fig.statuses[f"http {code}"] += 1
            if code not in HTTP_OK:
                fig.problem("crashes" if code >= 500 else "unexpected",
                            f"http {code} for {kind} {ctype!r} {encoding!r} {_short(body)}: "
                            f"{data[:200]!r}")
                return
            if code != 200:
                status_pb = status_pb2.Status()
                _parse(status_pb, data, rx.last_json)  # a google.rpc.Status
            refused = rejected if code == 200 else 1
    except (TimeoutError, OSError) as exc:
        if time.monotonic() - started >= CASE_TIMEOUT * 0.9:
            fig.problem("hangs", f"{transport} {kind} {_short(body)}")
        else:
            fig.problem("crashes", f"{transport} {kind}: {type(exc).__name__}: {exc}")
        return
    if counted:
        fig.refusals += refused
        fig.counted += rx.refused() - before
    for failure in rx.sink.failures[failures:]:
        fig.problem("crashes", f"{failure} on {_short(body)}")


# --------------------------------------------------------------------------- drivers


def _settings(n: int, seed: int | None) -> Any:
    return settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                    derandomize=seed is None, suppress_health_check=list(HealthCheck))


def fuzz_decoders(n: int, seed: int | None = None) -> Figure:
    """`n` bodies through the in-process request path and the decoders."""
    fig = Figure()
    loop = asyncio.new_event_loop()

    @_settings(max(1, n // (1 + MUTANTS)), seed)
    @given(any_case, st.integers(0, 1 << 32))
    def one(case: tuple[BodyKind, bytes], mutation_seed: int) -> None:
        kind, body = case
        for mutant in mutants(body, mutation_seed, MUTANTS if len(body) < 200_000 else 0):
            decoder_case(fig, loop, kind, mutant)

    try:
        _seeded(one, seed)()
    finally:
        loop.close()
    return fig


def fuzz_transforms(n: int, seed: int | None = None) -> Figure:
    """`n` mutated captured traces through `build_runs`."""
    fig = Figure()
    corpus()

    @_settings(n, seed)
    @given(mutated_trace())
    def one(trace: Trace) -> None:
        transforms_case(fig, trace)

    _seeded(one, seed)()
    return fig


def fuzz_receivers(n: int, seed: int | None = None) -> Figure:
    """`n` requests against the real gRPC and HTTP receivers on loopback."""
    fig = Figure()
    with Receivers() as rx:
        @_settings(n, seed)
        @given(receiver_case())
        def one(case: tuple[str, BodyKind, bytes, str, str]) -> None:
            receiver_case_run(fig, rx, case)

        _seeded(one, seed)()
    return fig


def _seeded(test: Callable[[], None], seed: int | None) -> Callable[[], None]:
    if seed is None:
        return test
    from hypothesis import seed as hseed
    return hseed(seed)(test)  # type: ignore[no-any-return]


def _print(name: str, fig: Figure, seconds: float) -> None:
    print(f"{name:<12} cases {fig.cases:>7,}  crashes {fig.crashes}  hangs {fig.hangs}  "
          f"unexpected {fig.unexpected}  refusals {fig.refusals:,} (counted {fig.counted:,.0f}, "
          f"uncounted {fig.uncounted})  [{seconds:.0f} s]", flush=True)
    top = ", ".join(f"{k} {v:,}" for k, v in fig.statuses.most_common(8))
    if top:
        print(f"{'':<12} answers: {top}")
    for ex in fig.examples[:4]:
        print(f"{'':<12} ! {ex[:600]}")


def _level(args: tuple[str, int, int]) -> tuple[str, Figure, float]:
    name, n, seed = args
    started = time.monotonic()
    fig = LEVELS[name](n, seed)
    return name, fig, time.monotonic() - started


LEVELS: dict[str, Callable[[int, int | None], Figure]] = {
    "decoder": fuzz_decoders, "transforms": fuzz_transforms, "receiver": fuzz_receivers}


def main(quick: bool = False) -> int:
    """Print the fuzzing figure; 0 when crashes, hangs, unexpected and uncounted are all 0."""
    import multiprocessing as mp
    import os
    sizes = {"decoder": 4_000, "transforms": 1_000, "receiver": 500} if quick else {
        "decoder": 80_000, "transforms": 20_000, "receiver": 6_000}
    seed = 12 if quick else int(time.time())
    workers = max(1, min(4, os.cpu_count() or 1))
    print(f"hypothesis seed {seed}; {workers} processes; per-case limit {CASE_TIMEOUT:g} s; "
          f"receivers' limit {LIMIT_MIB:g} MiB", flush=True)
    jobs = [(name, n // workers, seed + 1000 * w) for name, n in sizes.items()
            for w in range(workers)]
    by_level: dict[str, tuple[Figure, float]] = {name: (Figure(), 0.0) for name in sizes}
    with mp.get_context("fork").Pool(workers) as pool:
        for name, fig, seconds in pool.imap_unordered(_level, jobs):
            total_fig, spent = by_level[name]
            total_fig.merge(fig)
            by_level[name] = (total_fig, max(spent, seconds))
    total = Figure()
    for name, (fig, seconds) in by_level.items():
        _print(name, fig, seconds)
        total.merge(fig)
    print(f"TOTAL cases {total.cases:,}: crashes {total.crashes}, hangs {total.hangs}, "
          f"unexpected statuses {total.unexpected}, refusals not counted {total.uncounted}")
    bad = total.crashes + total.hangs + total.unexpected + abs(total.uncounted)
    return 0 if bad == 0 else 1
