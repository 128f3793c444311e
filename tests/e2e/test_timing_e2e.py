"""Export timing as a live app on the official OTel SDK produces it: the batch processor sends
the agent's finished model calls while the agent span is still open (a tool sleeps 6 s), the
agent span comes last, long after `assembly.max_wait` with nothing new. The run is scored once,
whole — what `scorecar inspect` rebuilds from the same spans."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.otlp import decode_traces_protobuf
from tests.e2e._serve import ServeProcess, base_config, metrics, total, wait_for_records
from transforms import Trace, build_runs

QUESTION = "What is the weather in Paris?"
ANSWER = "It is 14 degrees and raining in Paris."


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _agent_app(endpoint: str, tool_seconds: float) -> InMemorySpanExporter:
    """One agent invocation: a model call, a slow tool, a second model call; every span
    exported by the SDK's batch processor (every 0.5 s), and kept in memory too."""
    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-app"}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint, insecure=True), schedule_delay_millis=500))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("weather-app")
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}):
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": _messages("user", QUESTION),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "call_1", "name": "get_weather",
                     "arguments": {"city": "Paris"}}], "finish_reason": "tool_call"}])}):
            pass
        with tracer.start_as_current_span("execute_tool get_weather", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1"}):
            time.sleep(tool_seconds)  # the model call above is exported meanwhile
        with tracer.start_as_current_span("chat gpt-4o", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": _messages("user", QUESTION),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": ANSWER}], "finish_reason": "stop"}])}):
            pass
    provider.shutdown()  # flushes the agent span, as an app that exits does
    return kept


@pytest.mark.slow
def test_a_run_whose_agent_span_comes_6_s_after_its_model_calls_is_scored_once_whole(
        tmp_path: Path) -> None:
    config = base_config(tmp_path)
    config["assembly"] = {"quiet_period": 0.2, "max_wait": 2.0, "max_trace_age": 60.0}
    with ServeProcess(config, tmp_path) as serve:
        kept = _agent_app(serve.grpc_endpoint, tool_seconds=6.0)
        records = wait_for_records(tmp_path / "scores.jsonl", 2, 30, serve)
        time.sleep(1.0)  # a second, partial scoring would have come by now
        samples = metrics(serve.metrics_url)
        records = wait_for_records(tmp_path / "scores.jsonl", 2, 1, serve)
    spans = decode_traces_protobuf(encode_spans(kept.get_finished_spans()).SerializeToString())
    [run] = build_runs(Trace(spans.spans[0].trace_id, spans.spans, [])).runs
    assert len(records) == 2, [r["spanId"] for r in records]
    for record in records:
        assert record["spanId"] == run.target.span_id  # the agent span, not a bare model call
        assert record["input"] == run.input.model_dump(mode="json", by_alias=True)
        assert record["output"] == [m.model_dump(mode="json", by_alias=True) for m in run.output]
    assert records[0]["input"]["inputMessages"][0]["content"]["content"] == QUESTION
    assert total(samples, "scorecar_transform_reasons_total", reason="partial") == 0
    assert total(samples, "scorecar_transform_reasons_total", reason="late") == 0
