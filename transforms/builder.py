"""The run builder: the spans and log events of one trace -> agent `ScorerRun`s (DESIGN §3).

Four jobs, one module each: input cleanup (`_input`: duplicates, loop guard, events joined
to spans), the span tree (`_tree`: orphans, cycles, walk order, run roots), model calls
(`_calls`: each span's facts from its convention's extractor, then calls recorded twice
merged and server-held threads stitched), and assembling each run (`_assemble`). Nothing
here raises on bad input: what cannot be used is counted under a `Reason` code in
`BuildResult.reasons`, and the other runs of the same trace still come out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from scorers.types import ScorerRun
from transforms._assemble import assemble_run
from transforms._calls import merge_nested_calls, read_spans, stitch_threads
from transforms._input import clean_spans, join_events
from transforms._tree import build_tree, select_roots
from transforms.reasons import Reason
from transforms.types import LogEvent, Span, Trace

__all__ = ["BuildResult", "build_runs", "group_traces"]


@dataclass(slots=True)
class BuildResult:
    """The runs of one trace and why anything was not used.

    Attributes:
        runs: one `ScorerRun` per agent invocation (or bare model call), sorted by
            (startedAt, traceId, spanId).
        reasons: counts per reason code (`Reason` members; a `Counter` keyed by str).
    """

    runs: list[ScorerRun] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)


def group_traces(spans: Iterable[Span], logs: Iterable[LogEvent] = ()) -> dict[str, Trace]:
    """Group spans and log events by trace id, keeping arrival order."""
    traces: dict[str, Trace] = {}
    for s in spans:
        t = traces.get(s.trace_id)
        if t is None:
            t = traces[s.trace_id] = Trace(s.trace_id)
        t.spans.append(s)
    for lg in logs:
        t = traces.get(lg.trace_id)
        if t is None:
            t = traces[lg.trace_id] = Trace(lg.trace_id)
        t.logs.append(lg)
    return traces


def build_runs(trace: Trace) -> BuildResult:
    """Rebuild every agent invocation of one trace into a `ScorerRun`.

    Args:
        trace: the spans and log events of one trace id, in any order, duplicates allowed.

    Returns:
        The runs (sorted by start time, trace id, span id) and the reason counts.
    """
    result = BuildResult()
    reasons = result.reasons
    spans = clean_spans(trace.spans, reasons)
    events = join_events(spans, trace.logs, reasons)
    facts, calls = read_spans(spans, events, reasons)
    tree = build_tree(spans, reasons)
    if len(calls) > 1:
        merge_nested_calls(tree, facts, calls, reasons)
    stitch_threads(spans, calls, reasons)
    runs = select_roots(tree, facts, calls, lambda sid: facts[sid].root_input is None and
                        facts[sid].root_output is None, reasons, spans)
    if not runs:
        reasons[Reason.NOT_GENAI if not facts else Reason.NO_RUN] += 1
        return result
    for root, owned in runs.items():
        try:
            run = assemble_run(trace.trace_id, spans, facts, calls, root, owned, reasons)
        except Exception:  # noqa: BLE001 - one bad run never costs the others
            reasons[Reason.BUILD_ERROR] += 1
            continue
        result.runs.append(run)
    if len(result.runs) > 1:
        result.runs.sort(key=_run_sort_key)
    return result


def _run_sort_key(run: ScorerRun) -> tuple[float, str, str]:
    t = run.target
    assert t is not None
    return (t.started_at.timestamp() if t.started_at else 0.0, t.trace_id or "", t.span_id or "")
