"""Which run roots a trace holds, and whether each has ended — what the sidecar's assembly
needs to decide when a trace is ready, without turning it into runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.types import Trace

__all__ = ["RunRoot", "run_roots"]


@dataclass(frozen=True, slots=True)
class RunRoot:
    """One span that would become a run.

    Attributes:
        span_id: the root span's id.
        ended: the span carries an end time.
        complete: every ancestor of the span named by a parent id is in the trace (False
            while an enclosing span, possibly the real agent span, has not arrived yet).
    """

    span_id: str
    ended: bool
    complete: bool


def run_roots(trace: Trace) -> list[RunRoot]:
    """The run roots of `trace`, in the order `build_runs` would emit their runs."""
    # First version: the runs themselves (correct, not cheap); to be replaced by a pass that
    # reads only the span tree and the conventions' root markers.
    from transforms.builder import build_runs

    by_id = {s.span_id: s for s in trace.spans}
    out: list[RunRoot] = []
    for run in build_runs(trace).runs:
        sid = run.target.span_id if run.target else None
        if sid is None:
            continue
        span = by_id.get(sid)
        ended = bool(span and span.end_time_unix_nano)
        complete = True
        seen: set[str] = set()
        cur = span
        while cur is not None and cur.parent_span_id is not None and cur.span_id not in seen:
            seen.add(cur.span_id)
            nxt = by_id.get(cur.parent_span_id)
            if nxt is None:
                complete = False
                break
            cur = nxt
        out.append(RunRoot(sid, ended, complete))
    return out
