"""Score sinks: OTLP, Prometheus, JSON lines (DESIGN §7)."""

from exporters.jsonl import JsonlSink
from exporters.otlp import OtlpSink
from exporters.prometheus import LabelCap, Metrics, PrometheusSink
from exporters.sink import ScoreSink

__all__ = ["JsonlSink", "LabelCap", "Metrics", "OtlpSink", "PrometheusSink", "ScoreSink"]
