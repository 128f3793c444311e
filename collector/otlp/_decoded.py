"""What OTLP decoding produces, and what both decoders share: the `Decoded` result (spans, log
records and counted refusals), the AnyValue nesting limit, span kind and status names, and
request text with invalid UTF-8 and lone surrogates replaced.

Nothing here raises on bad input: a request that does not parse, or a span/log record with bad
ids, is refused and counted under a fixed reason code in `Decoded.refused`, and everything else
in the same request is kept.

Reason codes (`transforms.reasons.Reason`): `malformed_protobuf`, `malformed_json`,
`invalid_utf8`, `too_deep`, `bad_trace_id`, `bad_span_id`, `bad_parent_id`,
`log_without_trace`, `not_otlp`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from transforms.reasons import Reason
from transforms.types import LogEvent, Span

__all__ = ["MAX_VALUE_DEPTH", "Decoded", "utf8_text"]

_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS = ("UNSET", "OK", "ERROR")
# AnyValue nesting deeper than this is kept as a marker string and counted: real telemetry
# never nests this deep, and unbounded depth would let one request blow the stack.
MAX_VALUE_DEPTH = 64
_TOO_DEEP = "[scorecar: value nested too deep]"

_KIND_NAMES = dict(enumerate(_KINDS))
_STATUS_NAMES = dict(enumerate(_STATUS))


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


# A JSON escape of a lone UTF-16 surrogate (`"\ud800"` without its pair) parses into a str that
# cannot be encoded as UTF-8: a run holding it could not be stored in the queue or exported, and
# the whole scheduling pass failed with it (found by bench/faults.py fuzz). Such escapes become
# U+FFFD before parsing, counted as `invalid_utf8`; pairs (emoji) are kept. transforms/_json.py
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
