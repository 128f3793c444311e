"""Which run roots a trace holds, and whether each has ended — what the sidecar's assembly
needs to decide when a trace is ready, without turning it into runs.

`run_roots` reads only the span tree and each span's `Mark` (its role and agent identity, as
its convention's extractor reports it without reading content), and picks roots with the
same code as `build_runs` (`transforms._tree.select_roots`), so both name the same roots.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable

from transforms._calls import has_content, has_usage, made_call
from transforms._detection import extract_span, mark_span
from transforms._facts import Mark
from transforms._input import clean_spans, spans_with_events
from transforms._tree import build_tree, select_roots
from transforms.types import Span, Trace, ns_to_datetime

__all__ = ["RunRoot", "run_roots"]


class RunRoot:
    """One span that would become a run.

    Attributes:
        span_id: the root span's id.
        ended: the span carries an end time.
        complete: every ancestor of the span named by a parent id is in the trace, or the
            chain ends at a parent its span flags call remote (another process's, never
            coming here); False while an enclosing span, possibly the real agent span, has
            not arrived yet.
        awaits_local_parent: not complete, and the span whose parent is missing says (span
            flags) that the parent is local: it will come, however long the run takes.
        awaits_content: the run has model calls and none of them carries content of its own
            (no messages in attributes, span events or log records yet): its content may come
            as log records still in flight (OTel GenAI's event mode), or was not captured.
            Read lazily (it reads the model calls' content), once, when first asked.
    """

    __slots__ = ("span_id", "ended", "complete", "awaits_local_parent", "_content")

    def __init__(self, span_id: str, ended: bool, complete: bool,
                 awaits_content: bool | Callable[[], bool] = False,
                 awaits_local_parent: bool = False) -> None:
        self.span_id = span_id
        self.ended = ended
        self.complete = complete
        self.awaits_local_parent = awaits_local_parent
        self._content = awaits_content

    @property
    def awaits_content(self) -> bool:
        if not isinstance(self._content, bool):
            self._content = bool(self._content())
        return self._content

    def _key(self) -> tuple[str, bool, bool, bool, bool]:
        return (self.span_id, self.ended, self.complete, self.awaits_content,
                self.awaits_local_parent)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunRoot) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"RunRoot(span_id={self.span_id!r}, ended={self.ended}, "
                f"complete={self.complete}, awaits_content={self.awaits_content}, "
                f"awaits_local_parent={self.awaits_local_parent})")


def run_roots(trace: Trace) -> list[RunRoot]:
    """The run roots of `trace`, in the order `build_runs` emits their runs.

    Cheap enough to call on every ready-check: no message is parsed and no run is built
    (only an agent span that wraps other agent spans and has no model call of its own is
    read whole, to tell a wrapper from an invocation). A root whose extractor or run
    assembly fails is still listed here, while `build_runs` counts it (`extract_error`,
    `build_error`) and leaves it out.
    """
    scratch: Counter[str] = Counter()  # reasons are build_runs' to count
    spans = clean_spans(trace.spans, scratch)
    with_events = spans_with_events(spans, trace.logs)
    marks: dict[str, Mark] = {}
    candidates: set[str] = set()
    for sid, s in spans.items():
        try:
            m = mark_span(s)
        except Exception:  # noqa: BLE001 - as build_runs: an unreadable span is left out
            continue
        if m is None:
            if sid not in with_events:
                continue
            m = Mark()  # read from its GenAI events only
        marks[sid] = m
        if m.role == "model" or (sid in with_events and m.role != "tool"):
            candidates.add(sid)

    def is_empty(sid: str) -> bool:
        f = extract_span(spans[sid])
        return f is None or (f.root_input is None and f.root_output is None)

    calls = _Calls(spans, candidates, with_events)
    tree = build_tree(spans, scratch)
    owned = select_roots(tree, marks, calls, is_empty, scratch, spans)
    roots = [spans[sid] for sid in owned]
    roots.sort(key=lambda s: (_started(s), s.span_id))
    out = []
    for s in roots:
        missing = _missing_parent(s, spans)
        out.append(RunRoot(
            s.span_id, bool(s.end_time_unix_nano),
            missing is None or missing.parent_is_remote is True,
            functools.partial(_awaits_content, s.span_id, tree.children, candidates,
                              with_events, spans),
            missing is not None and missing.parent_is_remote is False))
    return out


def _awaits_content(root: str, children: dict[str, list[str]], candidates: set[str],
                    with_events: set[str], spans: dict[str, Span]) -> bool:
    """Whether the run under `root` has model calls and lacks the input or the output content
    of all of them: no span events or log records joined to any, and no text or tool call in
    their attributes on that side (role skeletons and finish reasons are no content; some
    instrumentations put the output on the span and the input in log records). Stops as soon
    as both sides are seen."""
    calls = 0
    seen_input = seen_output = False
    stack = [root]
    while stack:
        sid = stack.pop()
        stack.extend(children.get(sid, ()))
        if sid not in candidates:
            continue
        if sid in with_events:
            return False
        try:
            f = extract_span(spans[sid])
        except Exception:  # noqa: BLE001 - as build_runs: an unreadable span says nothing
            continue
        if f is None:
            continue
        calls += 1
        seen_input = seen_input or bool(f.cut_input) or has_content(f.model_input)
        seen_output = seen_output or bool(f.cut_output) or has_content(f.model_output)
        if seen_input and seen_output:
            return False
    return calls > 0


class _Calls:
    """The spans that record a model call, as `build_runs` counts them (`made_call`), asked
    lazily: only a span marked as a model call with no events and no token usage is read
    whole, and only when root selection asks about it."""

    __slots__ = ("_spans", "_candidates", "_with_events", "_known")

    def __init__(self, spans: dict[str, Span], candidates: set[str],
                 with_events: set[str]) -> None:
        self._spans, self._candidates, self._with_events = spans, candidates, with_events
        self._known: dict[str, bool] = {}

    def __contains__(self, sid: object) -> bool:
        if not isinstance(sid, str) or sid not in self._candidates:
            return False
        known = self._known.get(sid)
        if known is None:
            span = self._spans[sid]
            known = sid in self._with_events or has_usage(span)
            if not known:
                try:
                    f = extract_span(span)
                except Exception:  # noqa: BLE001 - as build_runs: an unreadable span
                    f = None
                known = f is not None and made_call(span, f)
            self._known[sid] = known
        return known


def _started(span: Span) -> float:
    # The runs' own sort key (their startedAt as a timestamp), so the order is theirs.
    started = ns_to_datetime(span.start_time_unix_nano)
    return started.timestamp() if started else 0.0


def _missing_parent(span: Span, spans: dict[str, Span]) -> Span | None:
    """The ancestor of `span` (itself included) whose parent is named but not in the trace;
    None when the chain reaches a root (or loops)."""
    seen: set[str] = set()
    cur = span
    while cur.parent_span_id is not None and cur.span_id not in seen:
        seen.add(cur.span_id)
        nxt = spans.get(cur.parent_span_id)
        if nxt is None:
            return cur
        cur = nxt
    return None
