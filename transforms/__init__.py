"""Pure functions: the spans of one trace -> agent scorer runs (DESIGN §3).

`build_runs(trace)` is the entry point; `transforms.types` holds the plain `Span`,
`LogEvent` and `Trace` values the collector decodes OTLP into.
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
