"""OTLP score sink (DESIGN §7): every `ScoreRecord` as OpenTelemetry data.

Per record, through the opentelemetry-sdk OTLP exporters (gRPC or HTTP/protobuf):

- an **evaluation span** `evaluation {scorer_id}` in the scored trace, whose parent is the scored
  agent span, carrying a `gen_ai.evaluation.result` span event;
- one **judge span** `chat {model}` per judge call (`JudgeExecution`), a child of the evaluation
  span, with the GenAI semconv model and token attributes (the prompt and the reply only with
  `judge_content=True`);
- one **log record** with `event.name=gen_ai.evaluation.result`, the same attributes, and the
  scored span's trace and span ids.

Records without trace ids (offline scoring) become a log record only. Span ids are derived from
the score id, so exporting a record twice yields the same spans again (a duplicate, never a second
evaluation). The exporters are called directly, not through a batch processor: `export` returns
only once the backend confirmed, and raises `ExportError(retryable=True)` otherwise, so the
caller's durable queue does the retrying. The SDK exporter's own retries stay inside its
`timeout`.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    INVALID_SPAN,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)
from opentelemetry.util.types import AttributeValue

from scorers.errors import ExportError
from scorers.semconv import (
    ATTR_EVALUATION_EXPLANATION,
    ATTR_EVALUATION_NAME,
    ATTR_EVALUATION_SCORE_VALUE,
    ATTR_SCORE_ID,
    ATTR_SCORER_ID,
    EVALUATION_EVENT,
    INSTRUMENTATION_SCOPE,
)
from scorers.types import JudgeExecution, ScoreRecord

__all__ = ["OtlpSink", "OtlpProtocol", "build_log_records", "build_spans"]

logger = logging.getLogger(__name__)

OtlpProtocol = Literal["grpc", "http"]
"""The OTLP transport: `grpc` (port 4317) or `http` (HTTP/protobuf, port 4318)."""

_STEP_ORDER = ("prepare_run", "preprocess", "analyze", "generate_score", "generate_reason")
_PROMPT_FIELD = {
    "preprocess": "preprocess_prompt",
    "analyze": "analyze_prompt",
    "generate_score": "generate_score_prompt",
    "generate_reason": "generate_reason_prompt",
}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_STATUS_MESSAGE = 512


class _Exporter(Protocol):
    """What the SDK span and log exporters have in common, for this module."""

    def shutdown(self) -> Any: ...


# --------------------------------------------------------------------------- building


def _hex_id(value: str | None, length: int) -> int:
    """A lowercase-hex OTLP id as an int; 0 when absent or malformed."""
    if not value or len(value) != length:
        return 0
    try:
        return int(value, 16)
    except ValueError:
        return 0


def _derived_span_id(*parts: str) -> int:
    """A non-zero 64-bit span id, deterministic in `parts`."""
    digest = hashlib.sha256(":".join(("scorecar", *parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def _ns(moment: datetime) -> int:
    """Nanoseconds since the epoch (a naive datetime is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return ((moment - _EPOCH) // timedelta(microseconds=1)) * 1000


def _steps(record: ScoreRecord) -> list[tuple[str, list[JudgeExecution]]]:
    """The record's judge executions by step, in pipeline order."""
    known = [s for s in _STEP_ORDER if s in record.judge]
    others = [s for s in record.judge if s not in _STEP_ORDER]
    return [(s, list(record.judge[s].executions)) for s in known + others]


def _explanation(record: ScoreRecord) -> str | None:
    if record.reason:
        return record.reason
    if record.error is not None and record.status != "scored":
        return record.error.message or record.error.name
    return None


def _common_attributes(record: ScoreRecord) -> dict[str, AttributeValue]:
    """Attributes of the evaluation span, its event and the log record."""
    attrs: dict[str, AttributeValue] = {
        ATTR_EVALUATION_NAME: record.scorer_id,
        ATTR_SCORE_ID: record.id,
        ATTR_SCORER_ID: record.scorer_id,
        "scorecar.status": record.status,
        "scorecar.run.id": record.run_id,
        "scorecar.source": record.source,
    }
    if record.status == "scored" and record.score is not None and math.isfinite(record.score):
        attrs[ATTR_EVALUATION_SCORE_VALUE] = float(record.score)
    explanation = _explanation(record)
    if explanation is not None:
        attrs[ATTR_EVALUATION_EXPLANATION] = explanation
    if record.status == "failed" and record.error is not None:
        attrs["error.type"] = record.error.name
        if record.error.step:
            attrs["scorecar.error.step"] = record.error.step
    elif record.status == "failed":
        attrs["error.type"] = "_OTHER"
    agent = record.entity.get("name")
    if isinstance(agent, str) and agent:
        attrs["gen_ai.agent.name"] = agent
    agent_id = record.entity_id or record.entity.get("id")
    if isinstance(agent_id, str) and agent_id:
        attrs["gen_ai.agent.id"] = agent_id
    if record.conversation_id:
        attrs["gen_ai.conversation.id"] = record.conversation_id
    return attrs


def _as_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _judge_reply(record: ScoreRecord, step: str, execution: JudgeExecution) -> str | None:
    """What the judge answered in this call, as far as the record keeps it."""
    if execution.raw_output is not None:
        return execution.raw_output
    if execution.status != "success":
        return None
    if step == "preprocess" and record.preprocess_step_result is not None:
        return _as_json(record.preprocess_step_result)
    if step == "analyze" and record.analyze_step_result is not None:
        return _as_json(record.analyze_step_result)
    if step == "generate_reason":
        return record.reason
    return None


def _judge_attributes(record: ScoreRecord, step: str, execution: JudgeExecution,
                      judge_content: bool) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": execution.judge_model_id,
        "gen_ai.usage.input_tokens": execution.usage.input_tokens,
        "gen_ai.usage.output_tokens": execution.usage.output_tokens,
        "scorecar.judge.step": step,
        "scorecar.judge.outcome": execution.status,
        "scorecar.judge.attempts": execution.attempt_count,
        "scorecar.judge.model_calls": execution.model_call_count,
        "scorecar.judge.duration_ms": float(execution.duration_ms),
        ATTR_SCORE_ID: record.id,
        ATTR_SCORER_ID: record.scorer_id,
    }
    if execution.status == "failed":
        err = execution.error
        attrs["error.type"] = (err.code or err.name) if err is not None else "_OTHER"
    if judge_content:
        field = _PROMPT_FIELD.get(step)
        prompt = getattr(record, field) if field else None
        if prompt:
            attrs["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": prompt}]}],
                ensure_ascii=False)
        reply = _judge_reply(record, step, execution)
        if reply is not None:
            attrs["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}],
                ensure_ascii=False)
    return attrs


def _status(failed: bool, message: str | None) -> Status:
    if not failed:
        return Status(StatusCode.UNSET)
    return Status(StatusCode.ERROR, (message or "")[:_MAX_STATUS_MESSAGE] or None)


def _record_spans(record: ScoreRecord, resource: Resource, scope: InstrumentationScope,
                  judge_content: bool) -> list[ReadableSpan]:
    trace_id = _hex_id(record.trace_id, 32)
    parent_id = _hex_id(record.span_id, 16)
    if not trace_id or not parent_id:
        return []
    end = _ns(record.created_at)
    steps = _steps(record)
    total_ns = sum(int(max(e.duration_ms, 0.0) * 1e6) for _, execs in steps for e in execs)
    start = end - total_ns
    eval_id = _derived_span_id("evaluation", record.id)
    eval_ctx = SpanContext(trace_id, eval_id, is_remote=False, trace_flags=_SAMPLED)
    parent = SpanContext(trace_id, parent_id, is_remote=True, trace_flags=_SAMPLED)
    common = _common_attributes(record)
    failed = record.status == "failed"
    spans = [ReadableSpan(
        name=f"evaluation {record.scorer_id}",
        context=eval_ctx,
        parent=parent,
        resource=resource,
        attributes=common,
        events=[Event(EVALUATION_EVENT, common, timestamp=end)],
        kind=SpanKind.INTERNAL,
        status=_status(failed, record.error.message if record.error else None),
        start_time=start,
        end_time=end,
        instrumentation_scope=scope,
    )]
    cursor = start
    for step, executions in steps:
        for index, execution in enumerate(executions):
            duration = int(max(execution.duration_ms, 0.0) * 1e6)
            span_id = _derived_span_id("judge", record.id, step, str(index))
            spans.append(ReadableSpan(
                name=f"chat {execution.judge_model_id}",
                context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=_SAMPLED),
                parent=eval_ctx,
                resource=resource,
                attributes=_judge_attributes(record, step, execution, judge_content),
                kind=SpanKind.CLIENT,
                status=_status(execution.status == "failed",
                               execution.error.message if execution.error else None),
                start_time=cursor,
                end_time=cursor + duration,
                instrumentation_scope=scope,
            ))
            cursor += duration
    return spans


def build_spans(records: Sequence[ScoreRecord], *, resource: Resource,
                judge_content: bool = False) -> list[ReadableSpan]:
    """The evaluation and judge spans of `records` (none for records without trace ids).

    Args:
        records: score records.
        resource: the resource the spans are reported under.
        judge_content: include judge prompts and replies on the judge spans.
    """
    scope = InstrumentationScope(INSTRUMENTATION_SCOPE)
    return [span for record in records
            for span in _record_spans(record, resource, scope, judge_content)]


def build_log_records(records: Sequence[ScoreRecord], *,
                      resource: Resource) -> list[ReadableLogRecord]:
    """One `gen_ai.evaluation.result` log record per record, with the scored span's ids.

    Args:
        records: score records.
        resource: the resource the log records are reported under.
    """
    scope = InstrumentationScope(INSTRUMENTATION_SCOPE)
    out = []
    for record in records:
        trace_id = _hex_id(record.trace_id, 32)
        span_id = _hex_id(record.span_id, 16) if trace_id else 0
        # The ids travel in the context; without them an explicit invalid span, so no ids leak
        # in from whatever span is current.
        scored = (NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True,
                                               trace_flags=_SAMPLED))
                  if trace_id and span_id else INVALID_SPAN)
        failed = record.status == "failed"
        attrs: dict[str, AttributeValue] = {"event.name": EVALUATION_EVENT,
                                            **_common_attributes(record)}
        moment = _ns(record.created_at)
        log = LogRecord(
            timestamp=moment,
            observed_timestamp=moment,
            context=set_span_in_context(scored),
            severity_text="WARN" if failed else "INFO",
            severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
            attributes=attrs,
            event_name=EVALUATION_EVENT,
        )
        out.append(ReadableLogRecord(log, resource=resource, instrumentation_scope=scope))
    return out


# --------------------------------------------------------------------------- the sink


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _resolve_protocol(protocol: str | None, signal: str) -> OtlpProtocol:
    """The transport of one signal: the argument, else `OTEL_EXPORTER_OTLP_{SIGNAL_}PROTOCOL`."""
    value = protocol or _env(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL",
                             "OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc"
    value = value.strip().lower()
    if value == "grpc":
        return "grpc"
    if value in ("http", "http/protobuf"):
        return "http"
    if value == "http/json":
        logger.warning("OTLP protocol http/json is not supported by the Python SDK exporters; "
                       "scores are sent as http/protobuf")
        return "http"
    raise ValueError(f"unknown OTLP protocol {value!r}: use grpc or http")


def _redact_url(url: str) -> str:
    """`url` without user info, query or fragment (they may hold credentials)."""
    parts = urlsplit(url if "://" in url else f"//{url}")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    shown = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return shown.removeprefix("//")


def _http_signal_url(endpoint: str, insecure: bool, path: str) -> str:
    """The full OTLP/HTTP URL of one signal from a base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT)."""
    base = endpoint if "://" in endpoint else f"{'http' if insecure else 'https'}://{endpoint}"
    base = base.rstrip("/")
    for suffix in ("/v1/traces", "/v1/logs"):
        base = base.removesuffix(suffix)
    return f"{base}/{path}"


def _make_exporters(endpoint: str | None, protocols: tuple[OtlpProtocol, OtlpProtocol],
                    headers: dict[str, str] | None, insecure: bool,
                    timeout: float | None) -> tuple[Any, Any, str]:
    """The span and log exporters, and a loggable description of where they send."""
    exporters: list[Any] = []
    shown: list[str] = []
    for signal, proto in zip(("TRACES", "LOGS"), protocols):
        if proto == "grpc":
            # With no endpoint the SDK reads OTEL_EXPORTER_OTLP_{,SIGNAL_}ENDPOINT; a scheme-less
            # env endpoint uses OTEL_EXPORTER_OTLP_{,SIGNAL_}INSECURE when that is set.
            env_insecure = _env(f"OTEL_EXPORTER_OTLP_{signal}_INSECURE",
                                "OTEL_EXPORTER_OTLP_INSECURE")
            use_insecure = None if endpoint is None and env_insecure is not None else insecure
            if signal == "TRACES":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter as GrpcSpanExporter,
                )
                exporter: Any = GrpcSpanExporter(endpoint=endpoint, insecure=use_insecure,
                                                 headers=headers, timeout=timeout)
            else:
                from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                    OTLPLogExporter as GrpcLogExporter,
                )
                exporter = GrpcLogExporter(endpoint=endpoint, insecure=use_insecure,
                                           headers=headers, timeout=timeout)
        else:
            path = "v1/traces" if signal == "TRACES" else "v1/logs"
            url = _http_signal_url(endpoint, insecure, path) if endpoint is not None else None
            if signal == "TRACES":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter as HttpSpanExporter,
                )
                exporter = HttpSpanExporter(endpoint=url, headers=headers, timeout=timeout)
            else:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import (
                    OTLPLogExporter as HttpLogExporter,
                )
                exporter = HttpLogExporter(endpoint=url, headers=headers, timeout=timeout)
        exporters.append(exporter)
        target = getattr(exporter, "_endpoint", None)
        shown.append(f"{proto} {_redact_url(str(target)) if target else '?'}")
    where = shown[0] if shown[0] == shown[1] else f"{shown[0]} (logs: {shown[1]})"
    return exporters[0], exporters[1], where


def _default_resource(attributes: Mapping[str, Any] | None) -> Resource:
    """`attributes` over the SDK defaults and `OTEL_RESOURCE_ATTRIBUTES` / `OTEL_SERVICE_NAME`;
    `service.name` is `scorecar` unless one of them names it."""
    resource = Resource.create(dict(attributes or {}))
    name = resource.attributes.get("service.name")
    if not isinstance(name, str) or name.startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "scorecar"}))
    return resource


class OtlpSink:
    """Exports score records as evaluation spans, span events and log records over OTLP.

    With no `endpoint` the SDK's standard environment applies (`OTEL_EXPORTER_OTLP_ENDPOINT`,
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._LOGS_ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`,
    `..._INSECURE`, `..._COMPRESSION`, certificates). Arguments given here win over the
    environment, except `headers`: over HTTP they are merged with `OTEL_EXPORTER_OTLP_HEADERS`,
    over gRPC non-empty headers replace them (the SDK's behaviour).

    Args:
        endpoint: the backend: `host:port` or a URL for gRPC (`https://` means TLS); the base URL
            for HTTP (`/v1/traces` and `/v1/logs` are appended). None: from the environment.
        protocol: `grpc` or `http` (HTTP/protobuf). None: `OTEL_EXPORTER_OTLP_PROTOCOL`
            (`grpc`, `http/protobuf`), else gRPC.
        headers: request headers/metadata (e.g. an auth token). Never logged.
        insecure: plaintext when the endpoint has no scheme (`http://` / `https://` decide
            otherwise).
        timeout: seconds one export may take, the SDK exporter's own retries included. None:
            `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10.
        judge_content: put judge prompts and replies on the judge spans
            (`gen_ai.input.messages`, `gen_ai.output.messages`).
        resource: resource attributes of everything exported (`service.name` defaults to
            `scorecar`; `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` apply).

    Raises:
        ValueError: an unknown protocol.
    """

    name = "otlp"

    def __init__(self, *, endpoint: str | None = None, protocol: OtlpProtocol | str | None = "grpc",
                 headers: Mapping[str, str] | None = None, insecure: bool = True,
                 timeout: float | None = None, judge_content: bool = False,
                 resource: Mapping[str, Any] | None = None) -> None:
        protocols = (_resolve_protocol(protocol, "TRACES"), _resolve_protocol(protocol, "LOGS"))
        self._judge_content = judge_content
        self._resource = _default_resource(resource)
        self._make = functools.partial(_make_exporters, endpoint, protocols,
                                       dict(headers) if headers else None, insecure, timeout)
        self._span_exporter, self._log_exporter, self.target = self._make()
        self._stale = False
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"OtlpSink({self.target})"

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        """Send `records` as spans (when they have trace ids) and log records.

        Raises:
            ExportError: retryable; the backend refused or could not be reached in time, or
                the sink is shut down.
        """
        if not records:
            return
        if self._closed:
            raise ExportError("the OTLP sink is shut down", retryable=True)
        spans = build_spans(records, resource=self._resource, judge_content=self._judge_content)
        logs = build_log_records(records, resource=self._resource)
        await asyncio.to_thread(self._send, spans, logs)

    def _send(self, spans: list[ReadableSpan], logs: list[ReadableLogRecord]) -> None:
        # One export at a time: the gRPC exporter replaces its channel on UNAVAILABLE.
        with self._lock:
            if self._closed:
                raise ExportError("the OTLP sink is shut down", retryable=True)
            if self._stale:
                # After a failure, fresh exporters: a gRPC channel that failed to connect waits
                # out its reconnect backoff, and the queue's own backoff already waited.
                self._shutdown_exporters()
                self._span_exporter, self._log_exporter, _ = self._make()
                self._stale = False
            if spans:
                result = self._span_exporter.export(spans)
                if result is not SpanExportResult.SUCCESS:
                    self._stale = True
                    raise ExportError(f"OTLP span export to {self.target} failed "
                                      f"({len(spans)} spans)", retryable=True)
            if logs:
                log_result = self._log_exporter.export(logs)
                if log_result is not LogRecordExportResult.SUCCESS:
                    self._stale = True
                    raise ExportError(f"OTLP log export to {self.target} failed "
                                      f"({len(logs)} log records)", retryable=True)

    def _shutdown_exporters(self) -> None:
        exporters: tuple[_Exporter, ...] = (self._span_exporter, self._log_exporter)
        for exporter in exporters:
            try:
                exporter.shutdown()
            except Exception:  # shutdown must not fail the caller
                logger.exception("OTLP exporter shutdown failed")

    async def shutdown(self) -> None:
        """Close the exporters' connections; idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._shutdown_exporters)
