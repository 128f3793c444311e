"""Plain span, log-event and trace values: what the collector decodes OTLP into.

No protobuf here (DESIGN §1): the collector turns `ExportTraceServiceRequest` /
`ExportLogsServiceRequest` (protobuf or JSON) into these dataclasses first, so the
transforms stay pure functions over plain Python values. Attribute values are decoded
`AnyValue`s: `str`, `bool`, `int`, `float`, `bytes`, `list` (arrays) and `dict` (maps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["SPAN_FLAGS_HAS_IS_REMOTE", "SPAN_FLAGS_IS_REMOTE", "LogEvent", "Span", "SpanEvent",
           "SpanLink", "Trace", "ns_to_datetime"]

SPAN_FLAGS_HAS_IS_REMOTE = 0x100
"""OTLP `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`: the span says whether its parent is remote."""
SPAN_FLAGS_IS_REMOTE = 0x200
"""OTLP `SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`: the parent span lives in another process."""


def ns_to_datetime(ns: int) -> datetime | None:
    """A Unix-epoch nanosecond timestamp as an aware UTC datetime (None for 0, OTLP's "unset")."""
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC)  # positional: no keyword parsing per call


@dataclass(slots=True)
class SpanEvent:
    """An event recorded on a span (OTLP `Span.Event`)."""

    name: str
    time_unix_nano: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SpanLink:
    """A link from a span to another span (OTLP `Span.Link`)."""

    trace_id: str
    span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One decoded span.

    Ids are lowercase hex (32 characters for traces, 16 for spans); `parent_span_id` is
    None for a root. `kind` is the OTLP name without prefix (`INTERNAL`, `CLIENT`, …);
    `status_code` is `UNSET`, `OK` or `ERROR`.
    """

    trace_id: str
    span_id: str
    name: str
    parent_span_id: str | None = None
    kind: str = "INTERNAL"
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0
    status_code: str = "UNSET"
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    flags: int = 0
    """OTLP span flags: bits 0-7 the W3C trace flags; bit 8 says whether bit 9 is known, bit 9
    whether the parent is remote (in another process)."""

    @property
    def parent_is_remote(self) -> bool | None:
        """Whether the parent span lives in another process (None: the flags do not say; SDKs
        before the OTLP 1.4 span flags never do)."""
        if not self.flags & SPAN_FLAGS_HAS_IS_REMOTE:
            return None
        return bool(self.flags & SPAN_FLAGS_IS_REMOTE)

    @property
    def started_at(self) -> datetime | None:
        """Start time as an aware UTC datetime."""
        return ns_to_datetime(self.start_time_unix_nano)

    @property
    def ended_at(self) -> datetime | None:
        """End time as an aware UTC datetime (None while unknown)."""
        return ns_to_datetime(self.end_time_unix_nano)


@dataclass(slots=True)
class LogEvent:
    """One decoded OTLP log record, typically a GenAI event joined to a span by its ids.

    `event_name` is the record's `event_name` field, else its `event.name` attribute.
    `trace_id`/`span_id` are lowercase hex, or "" when the record carries none.
    """

    event_name: str
    trace_id: str = ""
    span_id: str = ""
    time_unix_nano: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    severity_text: str = ""


@dataclass(slots=True)
class Trace:
    """The spans and log events of one trace id, in arrival order (duplicates allowed)."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
