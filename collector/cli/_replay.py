"""Send decoded spans through the official OpenTelemetry SDK exporter, as an instrumented agent
would: what `scorecar demo` drives into the sidecar, and what tests use to replay captures.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from transforms import LogEvent, Span

__all__ = [
    "demo_trace_files",
    "otlp_log_exporter",
    "otlp_span_exporter",
    "send_logs",
    "send_spans",
    "to_readable_logs",
    "to_readable_spans",
]

_KINDS = {"INTERNAL": SpanKind.INTERNAL, "SERVER": SpanKind.SERVER, "CLIENT": SpanKind.CLIENT,
          "PRODUCER": SpanKind.PRODUCER, "CONSUMER": SpanKind.CONSUMER}
_STATUS = {"OK": StatusCode.OK, "ERROR": StatusCode.ERROR}


def demo_trace_files() -> list[Path]:
    """The real captures `scorecar demo` sends (one per instrumentation library)."""
    folder = resources.files("collector.cli") / "demo_traces"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".otlp.jsonl"))


def _ctx(trace_id: str, span_id: str, *, remote: bool = False) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=remote,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    # The SDK encoder takes maps and lists as they are; drop what it cannot encode (None).
    return {k: v for k, v in values.items() if v is not None}


def to_readable_spans(spans: Iterable[Span], *, shift_ns: int = 0) -> list[ReadableSpan]:
    """Decoded spans as SDK `ReadableSpan`s, ready for any SDK span exporter.

    Args:
        spans: decoded spans (ids, parents, attributes, events, resource, scope kept).
        shift_ns: added to every timestamp (e.g. to make a capture look recent).
    """
    out: list[ReadableSpan] = []
    resources_by_key: dict[int, Resource] = {}
    for s in spans:
        resource = resources_by_key.get(id(s.resource))
        if resource is None:
            resource = resources_by_key[id(s.resource)] = Resource(_attrs(s.resource))
        out.append(ReadableSpan(
            name=s.name,
            context=_ctx(s.trace_id, s.span_id),
            parent=_ctx(s.trace_id, s.parent_span_id, remote=s.parent_is_remote is True)
            if s.parent_span_id else None,
            resource=resource,
            attributes=_attrs(s.attributes),
            events=[Event(e.name, _attrs(e.attributes),
                          e.time_unix_nano + shift_ns if e.time_unix_nano else None)
                    for e in s.events],
            links=[Link(_ctx(lk.trace_id, lk.span_id), _attrs(lk.attributes)) for lk in s.links
                   if len(lk.trace_id) == 32 and len(lk.span_id) == 16],
            kind=_KINDS.get(s.kind, SpanKind.INTERNAL),
            status=Status(_STATUS.get(s.status_code, StatusCode.UNSET),
                          s.status_message or None),
            start_time=s.start_time_unix_nano + shift_ns if s.start_time_unix_nano else None,
            end_time=s.end_time_unix_nano + shift_ns if s.end_time_unix_nano else None,
            instrumentation_scope=InstrumentationScope(s.scope_name, s.scope_version or None),
        ))
    return out


_EXPORTERS = {
    ("traces", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "OTLPSpanExporter"),
    ("traces", "http"): ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "OTLPSpanExporter"),
    ("logs", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc._log_exporter", "OTLPLogExporter"),
    ("logs", "http"): ("opentelemetry.exporter.otlp.proto.http._log_exporter", "OTLPLogExporter"),
}


def _official_exporter(signal: Literal["traces", "logs"], endpoint: str,
                       protocol: Literal["grpc", "http"], timeout: float) -> Any:
    module, name = _EXPORTERS[signal, protocol]
    cls = getattr(importlib.import_module(module), name)
    if protocol == "grpc":
        return cls(endpoint=f"http://{endpoint}", insecure=True, timeout=timeout)
    return cls(endpoint=f"http://{endpoint}/v1/{signal}", timeout=timeout)


def otlp_span_exporter(endpoint: str, protocol: Literal["grpc", "http"] = "grpc",
                       timeout: float = 10.0) -> SpanExporter:
    """The official OTLP span exporter for `endpoint` (`host:port`), as an agent would set it up."""
    exporter: SpanExporter = _official_exporter("traces", endpoint, protocol, timeout)
    return exporter


def send_spans(spans: Sequence[Span], exporter: SpanExporter, *, recent: bool = True,
               batch: int = 512) -> None:
    """Export `spans` in batches; `recent` shifts them so the newest ends now.

    Raises:
        RuntimeError: the exporter reported a failure.
    """
    shift = 0
    if recent and spans:
        newest = max(s.end_time_unix_nano or s.start_time_unix_nano for s in spans)
        shift = max(0, time.time_ns() - newest)
    readable = to_readable_spans(spans, shift_ns=shift)
    for i in range(0, len(readable), batch):
        if exporter.export(readable[i:i + batch]) is not SpanExportResult.SUCCESS:
            raise RuntimeError("the OTLP exporter could not deliver the spans")


def to_readable_logs(logs: Iterable[LogEvent], *, shift_ns: int = 0) -> list[Any]:
    """Decoded log records as SDK `ReadableLogRecord`s (ids, event name, body, attributes)."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.sdk._logs import ReadableLogRecord
    from opentelemetry.trace import NonRecordingSpan, set_span_in_context
    from opentelemetry.trace.span import INVALID_SPAN

    out = []
    for lg in logs:
        span = (NonRecordingSpan(_ctx(lg.trace_id, lg.span_id))
                if len(lg.trace_id) == 32 and len(lg.span_id) == 16 else INVALID_SPAN)
        moment = lg.time_unix_nano + shift_ns if lg.time_unix_nano else None
        record = LogRecord(timestamp=moment, observed_timestamp=moment,
                           context=set_span_in_context(span),
                           severity_text=lg.severity_text or None, body=lg.body,
                           attributes=_attrs(lg.attributes), event_name=lg.event_name or None)
        out.append(ReadableLogRecord(
            record, resource=Resource(_attrs(lg.resource)),
            instrumentation_scope=InstrumentationScope(lg.scope_name,
                                                       lg.scope_version or None)))
    return out


def otlp_log_exporter(endpoint: str, protocol: Literal["grpc", "http"] = "grpc",
                      timeout: float = 10.0) -> Any:
    """The official OTLP log exporter for `endpoint` (`host:port`)."""
    return _official_exporter("logs", endpoint, protocol, timeout)


def send_logs(logs: Sequence[LogEvent], exporter: Any, *, batch: int = 512) -> None:
    """Export `logs` unchanged in batches.

    Raises:
        RuntimeError: the exporter reported a failure.
    """
    from opentelemetry.sdk._logs.export import LogRecordExportResult

    readable = to_readable_logs(logs)
    for i in range(0, len(readable), batch):
        if exporter.export(readable[i:i + batch]) is not LogRecordExportResult.SUCCESS:
            raise RuntimeError("the OTLP exporter could not deliver the log records")
