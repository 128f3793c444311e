"""Capture driver: opentelemetry-instrumentation-openai-v2 2.3b0 (legacy per-message log events).

2.3b0 follows GenAI semconv <= v1.36: the chat spans carry no content; with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` every input message becomes a
``gen_ai.{system,user,assistant,tool}.message`` log record and every choice a ``gen_ai.choice``
log record, each carrying the chat span's trace/span id. Spans and logs are exported with the
real OTel SDK (OTLP/HTTP protobuf) into the same ``<scenario>.otlp.jsonl``. The real
``openai`` client talks to the fake OpenAI server on 127.0.0.1. No scorecar code is imported.

Regenerate (from the repository root)::

    python3 -m venv /tmp/capvenvs/genai-openai-v2-events
    /tmp/capvenvs/genai-openai-v2-events/bin/pip install "opentelemetry-instrumentation-openai-v2==2.3b0" \
        "wrapt<2" "openai==3.57.0" "opentelemetry-sdk==1.45.2" \
        "opentelemetry-exporter-otlp-proto-http==1.45.2" "httpx==0.28.1"
    /tmp/capvenvs/genai-openai-v2-events/bin/python tests/testdata/captures/genai-openai-v2-events/generate.py
"""

from __future__ import annotations

import contextlib
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
)

LIBRARY = "genai-openai-v2-events"
MODEL = "gpt-4o-mini"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False, "agent": True, "content": "true"},
    "two_turns_tool_stream": {"stream": True, "agent": True, "content": "true"},
    "bare_two_turns_tool": {"stream": False, "agent": False, "content": "true"},
    "two_turns_tool_no_content": {"stream": False, "agent": True, "content": "false"},
}


def _drop_lost_text(runs: list[dict[str, Any]]) -> None:
    """Un-assert text the library provably drops.

    2.3b0's ``message_to_event`` replaces the body of an input assistant message that has
    tool_calls with ``{"tool_calls": …}``, so its text ("Let me look that up.") is not in the
    trace; the remembered copy of that message keeps its tool calls but its text is not checked.
    """
    for run in runs:
        for message in run.get("rememberedMessages", []):
            if message.get("role") == "assistant" and message.get("toolCalls"):
                message.pop("text", None)


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)  # the legacy (<= v1.36) path
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = spec["content"]

    import fake_openai
    import openai
    from _openai_conversation import run_two_turns, scripted_replies
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.trace import SpanKind
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(
        scripted_replies(fake_openai)
    ) as provider:
        tracer_provider, logger_provider = otel_providers(capture.endpoint, "weather-app", logs=True)
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        app_tracer = tracer_provider.get_tracer("weather-app")

        @contextlib.contextmanager
        def agent_span(_index: int, _user_text: str) -> Iterator[Any]:
            with app_tracer.start_as_current_span(
                f"invoke_agent {AGENT_NAME}",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT_NAME,
                    "gen_ai.conversation.id": CONVERSATION_ID,
                    "gen_ai.system": "openai",
                },
            ) as span:
                yield span

        client = openai.OpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0)
        turns = run_two_turns(
            client, model=MODEL, stream=spec["stream"], wrap_turn=agent_span if spec["agent"] else None
        )
        OpenAIInstrumentor().uninstrument()
        tracer_provider.shutdown()
        logger_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"

    lib_version = version("opentelemetry-instrumentation-openai-v2")
    common_notes = (
        "Legacy GenAI events (semconv <= v1.36): chat spans `chat gpt-4o-mini` have no content "
        "attributes; content is in OTLP log records (same file) with event names "
        "gen_ai.system.message / gen_ai.user.message / gen_ai.assistant.message (tool_calls) / "
        "gen_ai.tool.message (id = tool call id) / gen_ai.choice, joined to the chat span by "
        "trace/span id. No execute_tool span: the tool result is only in the second chat's "
        "gen_ai.tool.message event. Library quirk: an input assistant message that carries "
        "tool_calls loses its text in gen_ai.assistant.message (the body is replaced by "
        "{tool_calls}), so that remembered message's text is not asserted; the gen_ai.choice "
        "event of the same answer does keep it. "
    )
    if spec["agent"] and spec["content"] == "true":
        runs = [agent_run_expectation(t, convention="genai", entity_name=AGENT_NAME) for t in turns]
        _drop_lost_text(runs)
        notes = common_notes + (
            "The app wraps each turn in its own INTERNAL `invoke_agent weather-agent` span "
            "(no content on it). History is in the first chat's events of each turn; remembered "
            "messages are inferred."
        )
        if spec["stream"]:
            notes += " Every model call streamed (SSE, include_usage)."
    elif spec["agent"]:
        runs = [
            {"convention": "genai", "entityName": AGENT_NAME, "contentCaptured": False} for _ in turns
        ]
        notes = common_notes + (
            "Content capture OFF (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false): the "
            "events are still emitted but without message content (tool calls keep id/name/type "
            "only), so every run must say contentCaptured=false; nothing else is asserted."
        )
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
                        {"toolName": call.tool_name, "toolCallId": call.tool_call_id, "args": call.args, "state": "call"}
                    ]
                },
                "contentCaptured": True,
            },
            {"convention": "genai", "entityName": MODEL, "systemMessages": [SYSTEM_PROMPT], "output": {"text": t1.final_text}, "contentCaptured": True},
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
        _drop_lost_text(runs)
        notes = common_notes + (
            "Bare chat calls, no agent span: three root chat spans, one bare run each (entityName = "
            "model). Run 2's new input/remembered messages are deliberately not asserted (its input "
            "ends with the tool loop of turn 1)."
        )
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="genai", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
