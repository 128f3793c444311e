"""Capture driver: opentelemetry-instrumentation-openai-v2 2.4b0 (new GenAI attributes).

Drives the real ``openai`` client, instrumented by opentelemetry-instrumentation-openai-v2
with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, against the fake
OpenAI server (tests/fakes/fake_openai.py) on 127.0.0.1, and exports with the real
OTel SDK (OTLP/HTTP protobuf, batch processors) to the loopback capture server
(tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl`` and
``<scenario>.expected.json`` beside this file. Does not import scorecar code.

Regenerate (from the repository root)::

    python3 -m venv /tmp/capvenvs/genai-openai-v2
    /tmp/capvenvs/genai-openai-v2/bin/pip install "opentelemetry-instrumentation-openai-v2==2.4b0" \
        "opentelemetry-util-genai==1.1b0" "openai==3.57.0" "opentelemetry-sdk==1.45.2" \
        "opentelemetry-exporter-otlp-proto-http==1.45.2" "httpx==0.28.1"
    /tmp/capvenvs/genai-openai-v2/bin/python tests/testdata/captures/genai-openai-v2/generate.py

Each scenario runs in a fresh subprocess (the instrumentation and the content
mode are process-global).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    AGENT_NAME,
    CONVERSATION_ID,
    SYSTEM_PROMPT,
    agent_run_expectation,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "genai-openai-v2"
MODEL = "gpt-4o-mini"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False, "agent": True, "content": "span_only"},
    "two_turns_tool_stream": {"stream": True, "agent": True, "content": "span_only"},
    "bare_two_turns_tool": {"stream": False, "agent": False, "content": "span_only"},
    "two_turns_tool_event_only": {"stream": False, "agent": True, "content": "event_only"},
    # The OTel SDK's attribute length limit cuts the JSON message attributes mid-string.
    "two_turns_tool_truncated": {"stream": False, "agent": True, "content": "span_only", "limit": 160},
    # Two parallel tool calls in one reply, Berlin's tool raises; then the same tool twice in
    # sequence (see _common.py).
    "two_tools_and_a_failure": {"stream": False, "agent": True, "content": "span_only", "multi": True},
}


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = spec["content"]
    if "limit" in spec:  # read by the SDK's SpanLimits when the TracerProvider is built
        os.environ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"] = str(spec["limit"])

    import fake_openai
    import openai
    from _openai_conversation import (
        run_two_turns,
        scripted_replies,
        scripted_replies_two_tools_and_a_failure,
    )
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.trace import SpanKind
    from opentelemetry.util.genai.handler import get_telemetry_handler
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    script = (
        scripted_replies_two_tools_and_a_failure(fake_openai)
        if spec.get("multi")
        else scripted_replies(fake_openai)
    )
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(script) as provider:
        tracer_provider, logger_provider = otel_providers(capture.endpoint, "weather-app", logs=True)
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        app_tracer = tracer_provider.get_tracer("weather-app")
        handler = get_telemetry_handler(tracer_provider=tracer_provider, logger_provider=logger_provider)

        @contextlib.contextmanager
        def agent_span(_index: int, _user_text: str) -> Iterator[Any]:
            # The app's own invoke_agent span around each turn (what a hand-rolled agent does).
            with app_tracer.start_as_current_span(
                f"invoke_agent {AGENT_NAME}",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT_NAME,
                    "gen_ai.conversation.id": CONVERSATION_ID,
                    "gen_ai.provider.name": "openai",
                },
            ) as span:
                yield span

        def traced_tool(record: Any, run: Any) -> Any:
            # execute_tool span made by opentelemetry-util-genai's own helper.
            with handler.tool(record.tool_name, tool_call_id=record.tool_call_id, tool_type="function") as inv:
                if getattr(inv, "should_capture_content_on_span", True):
                    inv.arguments = record.args
                result = run()
                if getattr(inv, "should_capture_content_on_span", True):
                    inv.tool_result = json.dumps(result)
                return result

        client = openai.OpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0)
        turns = run_two_turns(
            client,
            model=MODEL,
            stream=spec["stream"],
            wrap_turn=agent_span if spec["agent"] else None,
            run_tool=traced_tool if spec["agent"] else None,
            two_tools_and_a_failure=bool(spec.get("multi")),
        )
        OpenAIInstrumentor().uninstrument()
        tracer_provider.shutdown()  # flushes the batch processors into the capture
        logger_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]

    lib_version = version("opentelemetry-instrumentation-openai-v2")
    if "limit" in spec:
        runs = [
            {"convention": "genai", "entityName": AGENT_NAME, "conversationId": CONVERSATION_ID, "truncated": True}
            for _ in turns
        ]
        notes = (
            f"Same app as two_turns_tool, with OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT={spec['limit']}: the SDK "
            "cuts gen_ai.input.messages / gen_ai.output.messages / gen_ai.tool.call.* strings blindly, so "
            "they are invalid JSON. Each run must be marked truncated (the cut JSON kept as text, "
            "never guessed); the messages themselves are not asserted."
        )
    elif spec.get("multi"):
        runs = [
            agent_run_expectation(t, convention="genai", entity_name=AGENT_NAME) for t in turns
        ]
        notes = multi_notes(turns, sent)
        write_requests(HERE, name, sent)
    elif spec["agent"]:
        runs = [
            agent_run_expectation(t, convention="genai", entity_name=AGENT_NAME) for t in turns
        ]
        notes = (
            "The app wraps each turn in its own INTERNAL span `invoke_agent weather-agent` "
            "(gen_ai.operation.name, gen_ai.agent.name, gen_ai.conversation.id=conv-42, no content "
            "attributes on it). Under it: one `chat gpt-4o-mini` span per model call and an "
            "`execute_tool get_weather` span made with opentelemetry-util-genai's handler.tool(). "
            "History is only in the first chat span's gen_ai.input.messages (the app resends it); "
            "remembered messages are inferred from it. The tool call of turn 1 comes from the first "
            "chat's output (tool_call part) joined on the call id with the execute_tool span and the "
            "second chat's tool_call_response input. The assistant message of turn 1 that asked for the "
            "tool also carried the text 'Let me look that up.'"
        )
        if spec["content"] == "event_only":
            for run in runs:
                run["contentCaptured"] = True
            notes += (
                " Content mode event_only: the spans carry NO gen_ai.input/output.messages; the "
                "content is in OTLP log records `gen_ai.client.inference.operation.details` (same "
                "file) joined to the chat spans by trace/span id. execute_tool spans carry no "
                "arguments/result in this mode."
            )
        if spec["stream"]:
            notes += " Every model call streamed (SSE, include_usage)."
    else:
        t1, t2 = turns
        call = t1.tool_calls[0]
        runs = [
            {
                "convention": "genai",
                "entityName": MODEL,
                "systemMessages": [SYSTEM_PROMPT],
                "taggedSystemMessages": {},
                "inputMessages": [{"role": "user", "text": t1.user_text}],
                "rememberedMessages": [],
                "output": {
                    "toolCalls": [
                        {
                            "toolName": call.tool_name,
                            "toolCallId": call.tool_call_id,
                            "args": call.args,
                            "state": "call",
                        }
                    ]
                },
                "contentCaptured": True,
            },
            {
                "convention": "genai",
                "entityName": MODEL,
                "systemMessages": [SYSTEM_PROMPT],
                "output": {"text": t1.final_text},
                "contentCaptured": True,
            },
            {
                "convention": "genai",
                "entityName": MODEL,
                "systemMessages": [SYSTEM_PROMPT],
                "taggedSystemMessages": {},
                "inputMessages": [{"role": "user", "text": t2.user_text}],
                "rememberedMessages": list(t2.history),
                "output": {"text": t2.final_text, "toolCalls": []},
                "contentCaptured": True,
            },
        ]
        notes = (
            "Bare chat calls, no agent span and no tool span: three root `chat gpt-4o-mini` spans, "
            "one bare run each (entityName = model). Run 1 ends in a tool call (finish_reason "
            "tool_call, text 'Let me look that up.'), no result is seen under it. Run 2's input ends "
            "with the assistant tool call and the tool result (its new input and remembered "
            "messages are deliberately not asserted: the app resent turn 1 with the tool loop). "
            "Run 3 is turn 2 with the whole turn 1 as history."
        )
    write_expected(
        HERE,
        name,
        library=LIBRARY,
        library_version=lib_version,
        convention="genai",
        notes=notes,
        runs=runs,
    )
    print(summarize_capture(capture_path))


def multi_notes(turns: list[Any], sent: list[dict[str, Any]]) -> str:
    """Notes of `two_tools_and_a_failure`, after checking the wire claims they make."""
    # The requests the fake received: turn 1 = 2 calls, turn 2 = 3 calls; the failing call's
    # tool message carries the error text as plain content (no error flag exists on this wire).
    assert [len(b["messages"]) for b in sent] == [2, 5, 7, 9, 11], [len(b["messages"]) for b in sent]
    berlin = turns[0].tool_calls[1]
    tool_msgs = [m for m in sent[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [c.tool_call_id for c in turns[0].tool_calls]
    assert tool_msgs[1]["content"] == berlin.error, tool_msgs
    return (
        "Parallel tool calls. Turn 1 'What is the weather in Paris and in Berlin?': ONE chat "
        "completion returns two tool_calls (call_paris_1 Paris, call_berlin_1 Berlin) with the text "
        "'Let me look that up.'; the app runs both in util-genai `execute_tool get_weather` spans; "
        "Berlin's tool raises WeatherServiceError('weather service unavailable for Berlin'): its "
        "execute_tool span has status ERROR with that message, error.type=WeatherServiceError and no "
        "gen_ai.tool.call.result. The app sends the error text as the `tool` message content (chat "
        "completions has no error flag: on the next chat span's gen_ai.input.messages it is a plain "
        "tool_call_response), so the call's state output-error can only come from the errored tool "
        "span. Turn 2 'And in Rome? Please check it twice.': sequential, three chat calls: "
        "get_weather(Rome) call_rome_1, then after its result get_weather(Rome) again as call_rome_2 "
        "(same tool name, text 'Let me check again.'), then the answer. Turn 2's remembered messages "
        "are turn 1 as resent on the wire: there the Berlin call shows the error text as its result "
        "(state result), because nothing in the resent history marks it as an error."
    )


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
