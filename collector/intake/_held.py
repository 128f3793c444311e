"""What trace assembly holds per trace (DESIGN §3.3, §5): the buffer of a trace not yet handed
over, and what is remembered of one that was — its span ids, and for re-scoring the request
bodies its pieces arrived in.

A handed-over trace is remembered as the protobuf (or JSON) request bodies it came in, not as
decoded spans: a body is about a quarter of the decoded spans' memory, and is shared by every
trace it carried. Late pieces are rare; when one comes, the trace's bodies are decoded again
(`Body.pieces`) to rebuild it. `BodyBudget` bounds the bytes all remembered traces hold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from collector.intake._ports import BodyKind, decode_body
from transforms import LogEvent, Span

__all__ = ["Body", "BodyBudget", "LogKey", "Recent", "TraceBuffer", "classify", "log_key"]

LogKey = tuple[str, int, str, str]


def log_key(lg: LogEvent) -> LogKey:
    """The de-duplication key of a log record (the run builder's): a re-delivered record
    repeats its span, time and name (and body, when it has no time)."""
    return (lg.span_id, lg.time_unix_nano, lg.event_name,
            repr(lg.body) if not lg.time_unix_nano else "")


@dataclass(frozen=True, slots=True, eq=False)
class Body:
    """One request body as it arrived (shared by every trace it carried)."""

    kind: BodyKind
    data: bytes

    def pieces(self, trace_id: str) -> tuple[list[Span], list[LogEvent]]:
        """The spans and log records of `trace_id` in this body, decoded again."""
        decoded = decode_body(self.kind, self.data)
        return ([s for s in decoded.spans if s.trace_id == trace_id],
                [lg for lg in decoded.logs if lg.trace_id == trace_id])


class BodyBudget:
    """The bytes of the bodies remembered traces hold, each body counted once however many
    traces hold it."""

    def __init__(self) -> None:
        self.bytes = 0
        self._refs: dict[int, int] = {}

    def hold(self, bodies: list[Body]) -> None:
        """Count `bodies` as held once more (by one more trace)."""
        for b in bodies:
            n = self._refs.get(id(b), 0)
            if n == 0:
                self.bytes += len(b.data)
            self._refs[id(b)] = n + 1

    def drop(self, bodies: list[Body]) -> None:
        """One trace no longer holds `bodies`."""
        for b in bodies:
            n = self._refs.get(id(b), 0) - 1
            if n <= 0:
                self._refs.pop(id(b), None)
                self.bytes -= len(b.data)
            else:
                self._refs[id(b)] = n


@dataclass(slots=True)
class Recent:
    """What is remembered of a trace that was handed over.

    Attributes:
        ended: span id → whether the span handed over had an end time.
        missing: parent ids named but not present.
        at: when it was (last) handed over.
        bodies: the request bodies it arrived in (re-scoring; None: not kept, or trimmed).
        spans, logs: its pieces as decoded objects, kept instead of bodies when some piece
            came without its body (None: not kept).
        log_keys: its log records' keys (None once trimmed).
    """

    ended: dict[str, bool]
    missing: set[str]
    at: float
    bodies: list[Body] | None
    spans: dict[str, Span] | None
    logs: list[LogEvent] | None
    log_keys: set[LogKey] | None

    @property
    def size(self) -> int:
        """Ids remembered (span ids and log keys)."""
        return len(self.ended) + (len(self.log_keys) if self.log_keys is not None else 0)

    @property
    def keeps_pieces(self) -> bool:
        """Whether the trace can still be rebuilt from what is remembered."""
        return self.bodies is not None or self.spans is not None


@dataclass(slots=True)
class TraceBuffer:
    """A trace not yet handed over.

    Attributes:
        bodies: every request body that brought a piece of it (None once a piece came
            without one: then only the decoded objects can be remembered).
        touched: for a rebuild, the span ids the new pieces name.
    """

    trace_id: str
    first: float
    last: float
    gen: int
    spans: dict[str, Span] = field(default_factory=dict)
    logs: list[LogEvent] = field(default_factory=list)
    log_keys: set[LogKey] = field(default_factory=set)
    segments: Counter[int] = field(default_factory=Counter)
    version: int = 0               # bumped on every change (stale deadlines are skipped)
    rebuild: bool = False
    touched: set[str] = field(default_factory=set)
    late: int = 0
    bodies: list[Body] | None = field(default_factory=list)

    @property
    def size(self) -> int:
        """Spans and log records held."""
        return len(self.spans) + len(self.logs)


def classify(recent: Recent, spans: list[Span]) -> tuple[list[Span], list[Span], int]:
    """(late, new, duplicates) among `spans` of a handed-over trace `recent` (see the
    assembly's "late pieces")."""
    late: dict[str, Span] = {}
    rest: dict[str, Span] = {}
    dup = 0
    for s in spans:
        was_ended = recent.ended.get(s.span_id)
        if was_ended is None:
            rest[s.span_id] = s
        elif was_ended or not s.end_time_unix_nano:
            dup += 1
        else:
            late[s.span_id] = s  # a finished copy of a span handed over unfinished
    # Attached below what was handed over: descendants, through other new spans too.
    children: dict[str, list[Span]] = {}
    for s in rest.values():
        if s.parent_span_id is not None:
            children.setdefault(s.parent_span_id, []).append(s)
    todo = [s for s in rest.values()
            if s.parent_span_id is not None and s.parent_span_id in recent.ended]
    todo.extend(late.values())
    while todo:
        s = todo.pop()
        late[s.span_id] = s
        rest.pop(s.span_id, None)
        todo.extend(c for c in children.get(s.span_id, ()) if c.span_id not in late)
    # Attached above: an ancestor a handed-over span was waiting for, and its ancestors.
    up = [s for s in rest.values() if s.span_id in recent.missing]
    while up:
        s = up.pop()
        late[s.span_id] = s
        rest.pop(s.span_id, None)
        parent = rest.get(s.parent_span_id or "")
        if parent is not None:
            up.append(parent)
    return list(late.values()), list(rest.values()), dup
