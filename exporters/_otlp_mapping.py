"""The score record -> OpenTelemetry mapping of the OTLP sink (DESIGN §7): what each
`ScoreRecord` becomes, the transport apart (`exporters.otlp`).

Per record:

- an **evaluation span** `evaluation {scorer_id}` in the scored trace, whose parent is the scored
  agent span, carrying a `gen_ai.evaluation.result` span event;
- one **judge span** `chat {model}` per judge call (`JudgeExecution`), a child of the evaluation
  span, with the GenAI semconv model and token attributes (the prompt and the reply only with
  `judge_content=True`);
- one **log record** with `event.name=gen_ai.evaluation.result`, the same attributes, and the
  scored span's trace and span ids.

Records without trace ids (offline scoring) become a log record only. Span ids are derived from
the score id, so exporting a record twice yields the same spans again (a duplicate, never a second
evaluation).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
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

__all__ = ["build_log_records", "build_spans"]

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
