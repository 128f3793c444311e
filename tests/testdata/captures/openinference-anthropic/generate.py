"""Capture driver: openinference-instrumentation-anthropic 3.x with the real ``anthropic`` client.

The client talks to the fake Anthropic server (tests/fakes/fake_anthropic.py) on 127.0.0.1.
OpenInference's instrumentor gets the tracer provider explicitly; no global provider is set,
so the anthropic SDK's own tracing stays off and every span here is OpenInference's. Spans are
exported with the real OTel SDK (OTLP/HTTP protobuf) to the loopback capture server. Writes
``<scenario>.otlp.jsonl`` and ``<scenario>.expected.json``. No scorecar code is imported.

Regenerate (from the repository root)::

    python3 -m venv /tmp/capvenvs/openinference-anthropic
    /tmp/capvenvs/openinference-anthropic/bin/pip install "openinference-instrumentation-anthropic==3.1.0" \
        "openinference-instrumentation==0.1.72" "anthropic==2.14.0" "opentelemetry-sdk==1.45.2" \
        "opentelemetry-exporter-otlp-proto-http==1.45.2"
    /tmp/capvenvs/openinference-anthropic/bin/python tests/testdata/captures/openinference-anthropic/generate.py

Scenarios: ``two_turns_tool_agent`` (the app's own AGENT span per turn, made with
OpenInference's ``OITracer``, with ``input.value``/``output.value``; the tool runs under an
OpenInference ``@tracer.tool`` TOOL span), ``two_turns_tool_agent_stream`` (same, with
``messages.stream``) and ``bare_two_turns_tool`` (plain ``messages.create`` calls only).
"""

from __future__ import annotations

import contextlib
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _anthropic_conversation import MODEL, run_turn, scripted_replies
from _common import (
    AGENT_NAME,
    CONVERSATION_ID,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TURN1_USER,
    TURN2_USER,
    Turn,
    agent_run_expectation,
    get_weather,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
)

LIBRARY = "openinference-anthropic"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool_agent": {"stream": False, "agent": True},
    "two_turns_tool_agent_stream": {"stream": True, "agent": True},
    "bare_two_turns_tool": {"stream": False, "agent": False},
    "two_turns_tool_agent_hidden": {"stream": False, "agent": True, "hide": True},
}


def run_two_turns(client: Any, *, stream: bool, oi_tracer: Any | None) -> list[Turn]:
    """The scripted conversation; each turn inside the app's AGENT span when ``oi_tracer``."""
    history: list[dict[str, Any]] = []
    turns: list[Turn] = []

    def plain_tool(city: str) -> dict[str, Any]:
        return get_weather(city)

    tool_fn = (
        oi_tracer.tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)(plain_tool) if oi_tracer else plain_tool
    )
    for user_text in (TURN1_USER, TURN2_USER):
        span_cm: Any = contextlib.nullcontext(None)
        if oi_tracer is not None:
            span_cm = oi_tracer.start_as_current_span(
                AGENT_NAME,
                openinference_span_kind="agent",
                attributes={"agent.name": AGENT_NAME, "session.id": CONVERSATION_ID},
            )
        with span_cm as span:
            if span is not None:
                span.set_input(user_text)  # text/plain: just this turn's new message
            turn, history = run_turn(
                client, stream=stream, history=history, prior_turns=turns, user_text=user_text, tool_fn=tool_fn
            )
            if span is not None:
                span.set_output(turn.final_text)
        turns.append(turn)
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    if spec.get("hide"):
        # OpenInference's own redaction switches (read by TraceConfig() from the environment).
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    import anthropic
    import fake_anthropic
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.anthropic import AnthropicInstrumentor
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_anthropic.FakeAnthropic() as provider:
        provider.enqueue(*scripted_replies(fake_anthropic))
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        AnthropicInstrumentor().instrument(tracer_provider=tracer_provider)
        oi_tracer = (
            OITracer(tracer_provider.get_tracer("weather-app"), config=TraceConfig()) if spec["agent"] else None
        )
        client = anthropic.Anthropic(base_url=provider.base_url, api_key=provider.api_key, max_retries=0)
        turns = run_two_turns(client, stream=spec["stream"], oi_tracer=oi_tracer)
        AnthropicInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"

    lib_version = version("openinference-instrumentation-anthropic")
    if spec.get("hide"):
        runs = [
            {"convention": "openinference", "entityName": AGENT_NAME, "contentCaptured": False} for _ in turns
        ]
        notes = (
            "Same app as two_turns_tool_agent with OPENINFERENCE_HIDE_INPUTS=true and "
            "OPENINFERENCE_HIDE_OUTPUTS=true: OpenInference replaces input/output values and the "
            "flattened messages with '__REDACTED__' (or drops them). Every run must say "
            "contentCaptured=false; nothing else is asserted."
        )
    elif spec["agent"]:
        runs = [
            agent_run_expectation(t, convention="openinference", entity_name=AGENT_NAME, extra={"conversationId": CONVERSATION_ID})
            for t in turns
        ]
        notes = (
            "The app opens an OpenInference AGENT span `weather-agent` per turn with OITracer "
            "(agent.name, session.id=conv-42, input.value = the new user text as text/plain, "
            "output.value = the final text). Under it: one LLM span per Messages API call "
            "(flattened llm.input_messages.* incl. the system prompt, llm.output_messages.*) and a "
            "TOOL span from OpenInference's @tracer.tool decorator (tool.name, input.value = JSON of "
            "the call arguments, output.value = JSON of the result; NO tool.id, so it joins the "
            "LLM tool call by name/order). The app keeps the history (Anthropic wire form: the tool "
            "result travels in a user message of tool_result blocks, which is never new input)."
        )
        if spec["stream"]:
            notes += " Every call uses messages.stream (SSE)."
    else:
        t1, t2 = turns
        call = t1.tool_calls[0]
        runs = [
            {
                "convention": "openinference",
                "entityName": MODEL,
                "systemMessages": [SYSTEM_PROMPT],
                "taggedSystemMessages": {},
                "inputMessages": [{"role": "user", "text": t1.user_text}],
                "rememberedMessages": [],
                "output": {
                    "toolCalls": [
                        {"toolName": call.tool_name, "toolCallId": call.tool_call_id, "args": call.args, "state": "call"}
                    ]
                },
                "contentCaptured": True,
            },
            {"convention": "openinference", "entityName": MODEL, "systemMessages": [SYSTEM_PROMPT], "output": {"text": t1.final_text}, "contentCaptured": True},
            {
                "convention": "openinference",
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
            "Bare messages.create calls, no AGENT span: three root LLM spans, one bare run each "
            "(entityName = model). Run 2's input ends with the tool loop of turn 1 (a user message of "
            "tool_result blocks), so its new input/remembered messages are deliberately not asserted."
        )
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="openinference", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
