"""A live agent app as users write it, for the export-timing e2e test: the official OTel SDK with
its DEFAULT batch processors for spans (every 5 s) and for logs (every 1 s), the OTel GenAI
instrumentation of the OpenAI client (`opentelemetry-instrumentation-openai-v2`), which puts the
conversation into log events, not into the spans, and a tool that takes 8 s.

Two turns of the weather conversation against the fake OpenAI server; each turn is one
`invoke_agent` span. Every span and log record goes both to scorecar (OTLP/gRPC) and to a
capture file (OTLP/HTTP, tests/fakes/otlp_capture.py), the test's expectation.

    python events_agent.py SCORECAR_GRPC_ENDPOINT CAPTURE_HTTP_ENDPOINT OPENAI_BASE_URL TOOL_SECONDS
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)

import openai  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http._log_exporter import (  # noqa: E402
    OTLPLogExporter as HttpLogExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: E402
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
SYSTEM = "You are a weather bot. Answer in one short sentence."
TURNS = ("What is the weather in Paris?", "Should I take an umbrella?")


def main(scorecar: str, capture: str, base_url: str, tool_seconds: float) -> None:
    resource = Resource.create({"service.name": "weather-app"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(  # the defaults: every 5 s
        OTLPSpanExporter(endpoint=scorecar, insecure=True)))
    tracer_provider.add_span_processor(BatchSpanProcessor(
        HttpSpanExporter(endpoint=f"{capture}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(  # the defaults: every 1 s
        OTLPLogExporter(endpoint=scorecar, insecure=True)))
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(
        HttpLogExporter(endpoint=f"{capture}/v1/logs")))
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider,
                                    logger_provider=logger_provider)
    tracer = tracer_provider.get_tracer("weather-app")
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    messages: list[dict[str, object]] = [{"role": "system", "content": SYSTEM}]
    for user in TURNS:
        messages.append({"role": "user", "content": user})
        with tracer.start_as_current_span("invoke_agent weather-agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent",
                "gen_ai.conversation.id": "conv-live-1"}):
            while True:
                reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                       tools=TOOLS)
                message = reply.choices[0].message
                if not message.tool_calls:
                    messages.append({"role": "assistant", "content": message.content})
                    break
                messages.append({"role": "assistant", "content": message.content,
                                 "tool_calls": [c.model_dump() for c in message.tool_calls]})
                for call in message.tool_calls:
                    with tracer.start_as_current_span("execute_tool get_weather", attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": call.function.name,
                            "gen_ai.tool.call.id": call.id}):
                        time.sleep(tool_seconds)  # the first model call is exported meanwhile
                        result = {"temp_c": 14, "conditions": "rain"}
                    messages.append({"role": "tool", "tool_call_id": call.id,
                                     "content": json.dumps(result)})
    OpenAIInstrumentor().uninstrument()
    tracer_provider.shutdown()  # an app that exits flushes its last batch
    logger_provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
