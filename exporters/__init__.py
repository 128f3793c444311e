"""Score sinks: OTLP, Prometheus, JSON lines (DESIGN §7)."""

from exporters.jsonl import JsonlSink
from exporters.otlp import OtlpSignal, OtlpSink
from exporters.prometheus import LabelCap, PrometheusSink, ScoreMetrics
from exporters.sink import ScoreSink

__all__ = ["JsonlSink", "LabelCap", "OtlpSignal", "OtlpSink", "PrometheusSink", "ScoreMetrics",
           "ScoreSink"]
