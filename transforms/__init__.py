"""Pure functions: the spans of one trace -> agent scorer runs (DESIGN §3).

`build_runs(trace)` is the entry point, `run_roots(trace)` the cheap ready-check (which spans
will be runs, and have they ended); `transforms.types` holds the plain `Span`, `LogEvent` and
`Trace` values the collector decodes OTLP into; `Reason` the closed set of reason codes.

Inside (private modules): `builder` runs four parts in order — `_input` (duplicates, loop
guard, events joined to spans), `_tree` (orphans, cycles, walk order, run roots), `_calls`
(each span's facts, calls recorded twice merged, threads stitched), `_assemble` (one run).
`_detection` is the registry of conventions (detection, extractor, content-free mark,
context keys); one `_<convention>.py` extractor per convention, sharing `_facts` (what they
produce), `_json` (JSON attributes), `_normalize` (messages) and `_attrs` (attribute readers).
"""

from transforms._detection import detect_conventions
from transforms.builder import BuildResult, build_runs, group_traces
from transforms.reasons import Reason
from transforms.roots import RunRoot, run_roots
from transforms.types import LogEvent, Span, SpanEvent, SpanLink, Trace

__all__ = [
    "BuildResult",
    "LogEvent",
    "Reason",
    "RunRoot",
    "Span",
    "SpanEvent",
    "SpanLink",
    "Trace",
    "build_runs",
    "detect_conventions",
    "group_traces",
    "run_roots",
]
