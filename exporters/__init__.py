"""Score sinks: OTLP, Prometheus, JSON lines (DESIGN §7).

`OtlpSink` is imported on first use (it brings the OpenTelemetry SDK, ~6 MiB): a sidecar with no
OTLP endpoint never loads it (`otlp_enabled` says whether one is configured).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from exporters._otlp_env import OtlpSignal, otlp_enabled
from exporters.jsonl import JsonlSink
from exporters.prometheus import LabelCap, PrometheusSink, ScoreMetrics
from exporters.sink import ScoreSink

if TYPE_CHECKING:
    from exporters.otlp import OtlpSink

__all__ = ["JsonlSink", "LabelCap", "OtlpSignal", "OtlpSink", "PrometheusSink", "ScoreMetrics",
           "ScoreSink", "otlp_enabled"]


def __getattr__(name: str) -> Any:
    if name == "OtlpSink":
        from exporters.otlp import OtlpSink

        return OtlpSink
    raise AttributeError(f"module 'exporters' has no attribute {name!r}")
