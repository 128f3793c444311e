"""proto3 JSON field readers for `collector.otlp._json`: one per field type (string, uint64,
int64, double, bool, bytes, enum, id), each raising `_Malformed` (with the field's path) for a
value of the wrong JSON type, and the tables of fields checked for their type only.

The readers are called only when the inline `type(x) is T` check of the decoding loops fails
(null, a subclass, or an error): the common shapes cost no extra call.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

from collector.otlp._decoded import _KINDS, _STATUS

__all__: list[str] = []  # helpers of collector.otlp._json only

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
