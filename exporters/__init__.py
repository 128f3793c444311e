"""Score sinks: OTLP, Prometheus, JSON lines (DESIGN §7)."""

from exporters.jsonl import JsonlSink
from exporters.otlp import OtlpSignal, OtlpSink
from exporters.prometheus import LabelCap, Metrics, PrometheusSink
from exporters.sink import ScoreSink

__all__ = ["JsonlSink", "LabelCap", "Metrics", "OtlpSignal", "OtlpSink", "PrometheusSink",
           "ScoreSink"]
