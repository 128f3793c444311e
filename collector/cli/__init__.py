"""The `scorecar` command: one module per subcommand (`serve`, `demo`, `inspect`, `score`,
`check-config`), plus what `demo` and the tests share: rebuilding runs from OTLP files as `inspect`
does, and sending spans and log records through the official OTel exporters (`_replay`).

Only `main` is imported eagerly; the rest on first use, so that `scorecar serve` never loads the
OpenTelemetry SDK it does not use (`_replay` needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collector.cli._main import main

if TYPE_CHECKING:
    from collector.cli._inspect import InspectResult, inspect_files
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

_HOMES = {"InspectResult": "collector.cli._inspect", "inspect_files": "collector.cli._inspect",
          **{name: "collector.cli._replay" for name in (
              "demo_trace_files", "otlp_log_exporter", "otlp_span_exporter", "send_logs",
              "send_spans", "to_readable_logs", "to_readable_spans")}}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'collector.cli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
