"""A recording `SpanSink` for receiver tests, and helpers to make SDK spans and log records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.intake import BodyKind, Overloaded, decode_body
from collector.otlp import Decoded
from transforms.types import LogEvent, Span


@dataclass
class Call:
    """One `accept` call as the sink saw it."""

    decoded: Decoded
    transport: str
    body: bytes
    kind: BodyKind


@dataclass
class RecordingSink:
    """Records what it accepts.

    Attributes:
        calls: every accepted request.
        overloaded: raised by `check_capacity` while set.
        accept_error: raised by `accept` the next `accept_error_times` calls.
    """

    calls: list[Call] = field(default_factory=list)
    overloaded: Overloaded | None = None
    overloaded_times: int = 1_000_000
    accept_error: BaseException | None = None
    accept_error_times: int = 1_000_000
    capacity_checks: int = 0

    def check_capacity(self) -> None:
        self.capacity_checks += 1
        if self.overloaded is not None and self.overloaded_times > 0:
            self.overloaded_times -= 1
            raise self.overloaded

    async def accept(self, decoded: Decoded, transport: str, body: bytes,
                     kind: BodyKind) -> None:
        if self.accept_error is not None and self.accept_error_times > 0:
            self.accept_error_times -= 1
            raise self.accept_error
        if decoded.undecoded:  # only scanned by the receiver: decode it, as the app's sink does
            full = decode_body(kind, body)
            assert len(full.spans) == decoded.undecoded
            assert {s.trace_id for s in full.spans} == decoded.trace_ids
            decoded = Decoded(full.spans, full.logs, decoded.refused, decoded.errors)
        self.calls.append(Call(decoded, transport, body, kind))

    @property
    def spans(self) -> list[Span]:
        return [s for c in self.calls for s in c.decoded.spans]

    @property
    def logs(self) -> list[LogEvent]:
        return [r for c in self.calls for r in c.decoded.logs]


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
