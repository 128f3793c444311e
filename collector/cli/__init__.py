"""The `scorecar` command: one module per subcommand (`serve`, `demo`, `inspect`, `score`,
`check-config`), plus what `demo` and the tests share: rebuilding runs from OTLP files as `inspect`
does, and sending spans and log records through the official OTel exporters (`_replay`)."""

from collector.cli._inspect import InspectResult, inspect_files
from collector.cli._main import main
from collector.cli._replay import (
    demo_trace_files,
    otlp_log_exporter,
    otlp_span_exporter,
    send_logs,
    send_spans,
    to_readable_logs,
    to_readable_spans,
)

__all__ = ["InspectResult", "demo_trace_files", "inspect_files", "main",
           "otlp_log_exporter", "otlp_span_exporter", "send_logs",
           "send_spans", "to_readable_logs", "to_readable_spans"]
