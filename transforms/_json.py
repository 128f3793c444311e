"""JSON-valued attributes, read the one way every extractor reads them.

Text that parses is decoded (again while it still parses: some libraries encode twice); JSON cut
by a length limit, nested deeper than `MAX_JSON_DEPTH` or standing as a placeholder for hidden
content is kept as text and flagged on the span's facts. Escaped lone surrogates become U+FFFD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from transforms._facts import SpanFacts
from transforms._formats import is_placeholder, is_python_repr
from transforms.reasons import Reason

__all__ = [
    "MAX_JSON_DEPTH",
    "Parsed",
    "decode_nested",
    "flag_redacted",
    "is_redacted",
    "json_attr",
    "parse_json_attr",
]

# JSON deeper than this is kept as text: real conversations are shallow, and deep values
# would cost stack in every later step (pydantic, serialization).
MAX_JSON_DEPTH = 48


@dataclass(slots=True)
class Parsed:
    """A JSON attribute parsed: `value` is the decoded JSON, or the raw text when it did
    not parse (`truncated` when it looked like JSON, i.e. was cut mid-way)."""

    value: Any
    ok: bool
    truncated: bool = False
    too_deep: bool = False


def _depth_ok(value: Any) -> bool:
    """True when containers nest at most `MAX_JSON_DEPTH` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > MAX_JSON_DEPTH:
            return False
        children = v.values() if isinstance(v, dict) else v
        for x in children:
            if isinstance(x, (dict, list)):
                stack.append((x, d + 1))
    return True


def _text_depth_ok(text: str) -> bool:
    # Cheap pre-check in C: fewer opening brackets than the limit cannot nest deeper.
    return text.count("[") + text.count("{") <= MAX_JSON_DEPTH


# json.loads' own (C) scanner, called without json.loads' Python layers (BOM check, two
# whitespace regex matches, decode/raw_decode): this runs once per JSON attribute.
_scan_once: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]  # set in __init__, not in typeshed


# A JSON escape of a lone UTF-16 surrogate (`\ud800` without its pair) parses into a str that
# cannot be encoded as UTF-8: the run holding it could not be stored in the queue or exported,
# and the whole scheduling pass failed with it (found by bench/faults.py fuzz). Such escapes
# become U+FFFD before parsing; pairs (emoji) are kept. collector/otlp/_decoded.py does the same to
# OTLP/JSON bodies.
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(?:[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|[dD][c-fC-F][0-9a-fA-F]{2})")


def _lone_surrogate(match: re.Match[str]) -> str:
    return match.group(0) if match.group(2) else match.group(1) + "\\ufffd"


def _loads(text: str) -> Any:
    """`json.loads` for text without surrounding whitespace (callers strip it).

    Same values and the same failures (ValueError, RecursionError) as `json.loads`, except
    that an escaped lone surrogate becomes U+FFFD.
    """
    if "\\u" in text and _SURROGATE_HINT.search(text):
        text = _SURROGATE_ESCAPE.sub(_lone_surrogate, text)
    try:
        value, end = _scan_once(text, 0)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


# How `_parse_json` read a value: parsed (or already structured), plain text, JSON cut by a
# length limit, nested too deep.
_OK, _TEXT, _CUT, _DEEP = 0, 1, 2, 3


def _parse_json(value: Any) -> tuple[Any, int]:
    """`parse_json_attr` as (value, how): no `Parsed` built on the extractors' common path."""
    if not isinstance(value, str):
        if isinstance(value, (dict, list)) and not _depth_ok(value):
            return str(value)[:1000], _DEEP
        return value, _OK
    text = value.strip()
    if not text or text[0] not in "[{\"":
        return value, _TEXT
    try:
        decoded = _loads(text)
    except RecursionError:
        return value, _DEEP
    except ValueError:
        # A Python repr (`{'messages': [...]}`) or a placeholder (`[REDACTED]`) opens like
        # JSON but was never JSON: not cut.
        return value, _TEXT if is_python_repr(text) or is_placeholder(text) else _CUT
    if isinstance(decoded, (dict, list)) and not _text_depth_ok(text) and not _depth_ok(decoded):
        return value, _DEEP
    return decoded, _OK


def parse_json_attr(value: Any) -> Parsed:
    """Parse an attribute that may hold JSON text (or already structured values).

    Strings that start like JSON (`{`, `[`, `"`) but do not parse are kept as text and
    flagged `truncated` (attribute length limits cut them mid-string), unless they are a
    Python repr (`is_python_repr`) or a placeholder (`is_redacted`). Other strings are plain
    text. JSON nested deeper than `MAX_JSON_DEPTH` is kept as text (`too_deep`).
    """
    parsed, how = _parse_json(value)
    return Parsed(parsed, how == _OK, truncated=how == _CUT, too_deep=how == _DEEP)


def decode_nested(value: Any) -> Any:
    """Decode JSON strings again while they still parse (some libraries encode twice).

    A string that does not parse stays the raw string (DESIGN §2).
    """
    if not isinstance(value, str):  # the common call (decoded arguments): no loop set up
        return value
    for _ in range(4):
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text or text[0] not in "[{\"-0123456789tfn":
            return value
        try:
            decoded = _loads(text)
        except (ValueError, RecursionError):
            return value
        if isinstance(decoded, (dict, list)) and not _text_depth_ok(text) and \
                not _depth_ok(decoded):
            return value
        value = decoded
    return value


is_redacted = is_placeholder
"""True for the placeholders libraries put where content was withheld (`__REDACTED__`,
`[Scrubbed…]`, `[REDACTED]`, `<elided>`, `***`, …): `_formats.is_placeholder` itself (this
runs on every message part, so without a wrapper's call)."""


def flag_redacted(facts: SpanFacts, value: Any) -> bool:
    """True (and `facts.redacted` set) when `value` is a redaction placeholder."""
    if is_redacted(value):
        facts.redacted = True
        return True
    return False


def json_attr(facts: SpanFacts, value: Any, *, text_ok: bool = True) -> tuple[Any, bool]:
    """A JSON-valued attribute, read the one way every extractor reads it: (value, usable).

    Absent (None): `(None, False)`. A redaction placeholder: `(None, False)`, the facts marked
    redacted. JSON cut by a length limit: `(raw text, False)`, the facts marked truncated and
    `truncated_json` counted. JSON nested too deep: `(raw text, False)`, `too_deep` counted.
    Text that is not JSON: `(text, text_ok)`. Anything else: `(decoded value, True)`.
    """
    if value is None:
        return None, False
    parsed, how = _parse_json(value)
    if how == _OK:  # no placeholder parses as JSON: checked only when the value did not
        return parsed, True
    if flag_redacted(facts, value):
        return None, False
    if how == _CUT:
        facts.truncated = True
        facts.reasons.append(Reason.TRUNCATED_JSON)
        return value, False
    if how == _DEEP:
        facts.reasons.append(Reason.TOO_DEEP)
        return value, False
    return value, text_ok
