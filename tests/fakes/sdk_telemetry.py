"""Finished spans and log records made with the real OpenTelemetry SDK, for receiver tests."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def make_spans(n: int = 2) -> Sequence[ReadableSpan]:
    """`n` finished SDK spans of one trace: a root `invoke_agent` and children `chat`."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-under-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("receiver-test", "1.0")
    with tracer.start_as_current_span("invoke_agent", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}):
        for i in range(n - 1):
            with tracer.start_as_current_span("chat", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10 + i}):
                pass
    provider.shutdown()
    return memory.get_finished_spans()


def make_logs() -> Sequence[ReadableLogRecord]:
    """One SDK log record (an event) emitted inside a span, so it carries trace/span ids."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent-under-test"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    with tracer_provider.get_tracer("t").start_as_current_span("chat"):
        provider.get_logger("receiver-test").emit(
            event_name="gen_ai.client.inference.operation.details", body="hello",
            attributes={"gen_ai.operation.name": "chat"})
    provider.shutdown()
    tracer_provider.shutdown()
    return memory.get_finished_logs()
