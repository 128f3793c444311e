"""Input cleanup, the builder's first job: one copy of each span (OTLP allows re-delivery),
none of scorecar's own (loop guard), and the GenAI message events of each span — span events
and log records joined by span id, each once."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from scorers.semconv import EVALUATION_EVENT, INSTRUMENTATION_SCOPE
from transforms._genai import MESSAGE_EVENTS, calls_from_events, event_body
from transforms.reasons import Reason
from transforms.types import LogEvent, Span

__all__ = ["Event", "clean_spans", "join_events", "spans_with_events"]

Event = tuple[int, str, dict[str, Any], Any]
"""One GenAI message event of a span: (time ns, name, attributes, content)."""


def clean_spans(spans: Iterable[Span], reasons: Counter[str]) -> dict[str, Span]:
    """The spans by id: duplicates counted and dropped (the ended copy kept: it knows more),
    scorecar's own spans counted and dropped."""
    out: dict[str, Span] = {}
    for s in spans:
        if s.scope_name == INSTRUMENTATION_SCOPE:
            reasons[Reason.OWN_SPAN] += 1
            continue
        old = out.get(s.span_id)
        if old is not None:
            reasons[Reason.DUPLICATE] += 1
            if old.end_time_unix_nano == 0 and s.end_time_unix_nano:
                out[s.span_id] = s
            continue
        out[s.span_id] = s
    return out


def _unusable(lg: LogEvent, spans: dict[str, Span]) -> Reason | None:
    """Why a log record is no GenAI message event of a span in the trace (None: it is)."""
    if lg.scope_name == INSTRUMENTATION_SCOPE:
        return Reason.OWN_SPAN
    if lg.event_name == EVALUATION_EVENT:
        return Reason.EVALUATION_EVENT
    if lg.event_name not in MESSAGE_EVENTS:
        return Reason.NOT_GENAI
    if lg.span_id not in spans:
        return Reason.ORPHAN_LOG
    return None


def join_events(spans: dict[str, Span], logs: Iterable[LogEvent],
                reasons: Counter[str]) -> dict[str, list[Event]]:
    """The GenAI message events of each span: its own span events, then the log records
    that point at it (re-delivered records counted once, unusable ones counted). A log record
    that repeats one of the span's own events (an SDK that writes each event both ways) is
    the same content seen twice: counted `duplicate`, read once."""
    events: dict[str, list[Event]] = defaultdict(list)
    for s in spans.values():
        for e in s.events:
            if e.name in MESSAGE_EVENTS:
                events[s.span_id].append((e.time_unix_nano, e.name, e.attributes,
                                          event_body(e.attributes)))
    n_own = {sid: len(evs) for sid, evs in events.items()}  # the spans' own events
    own: dict[str, list[str]] = {}  # their content keys, built on demand
    seen: set[tuple[Any, ...]] = set()
    for lg in logs:
        why = _unusable(lg, spans)
        if why is not None:
            reasons[why] += 1
            continue
        # A re-delivered record repeats its span, time and name; distinct records differ in
        # time (SDK timestamps are ns) — a record without a time falls back to its content.
        key = (lg.span_id, lg.time_unix_nano, lg.event_name,
               repr(lg.body) if not lg.time_unix_nano else "")
        if key in seen or (lg.span_id in n_own and _repeats_span_event(lg, events, n_own, own)):
            reasons[Reason.DUPLICATE] += 1
            continue
        seen.add(key)
        events[lg.span_id].append((lg.time_unix_nano, lg.event_name, lg.attributes, lg.body))
    return events


def _content_key(name: str, attrs: dict[str, Any], body: Any) -> str:
    """What one event says, whichever way it was written (span event attributes or a log
    record's body): the messages and instructions it reads as."""
    c = calls_from_events([(0, name, attrs, body)])
    f = c[0].facts if c else None
    return repr((name, f.model_input, f.model_output, f.instructions)) if f else repr(
        (name, body))


def _repeats_span_event(lg: LogEvent, events: dict[str, list[Event]], n_own: dict[str, int],
                        own: dict[str, list[str]]) -> bool:
    """True when `lg` says what one of its span's own events (not yet matched) says; that
    event is then matched, so a conversation that repeats a message keeps both."""
    sid = lg.span_id
    keys = own.get(sid)
    if keys is None:
        keys = own[sid] = [_content_key(n, a, b) for _, n, a, b in events[sid][:n_own[sid]]]
    if not keys:
        return False
    key = _content_key(lg.event_name, lg.attributes, lg.body)
    if key in keys:
        keys.remove(key)
        return True
    return False


def spans_with_events(spans: dict[str, Span], logs: Iterable[LogEvent]) -> set[str]:
    """The ids of the spans `join_events` would give events, without reading any content."""
    out = {s.span_id for s in spans.values() if any(e.name in MESSAGE_EVENTS for e in s.events)}
    out.update(lg.span_id for lg in logs if _unusable(lg, spans) is None)
    return out
