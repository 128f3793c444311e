"""Capture driver: openlit 1.45 (Anthropic instrumentation) with its GenAI log events.

``openlit.init()`` reuses the tracer and logger providers this script registers first (the real
OTel SDK, OTLP/HTTP protobuf, batch processors, to the loopback capture server
tests/fakes/otlp_capture.py), gets a local ``pricing.json`` (beside this file) so that it fetches
nothing, and has metrics off. The real ``anthropic`` client (the version openlit pins) talks to the
fake Anthropic server (tests/fakes/fake_anthropic.py) on 127.0.0.1. Writes
``<scenario>.otlp.jsonl`` and ``<scenario>.expected.json`` beside this file. No scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3 -m venv /tmp/capvenvs/openlit
    /tmp/capvenvs/openlit/bin/pip install --no-deps -r tests/testdata/captures/openlit/requirements.txt
    /tmp/capvenvs/openlit/bin/python tests/testdata/captures/openlit/generate.py

Each scenario runs in a fresh subprocess (openlit and the providers are process-global).
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    LOOKUP_TEXT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    get_weather,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
)

LIBRARY = "openlit"
MODEL = "claude-haiku-5-5"
MAX_TOKENS = 256
TOOL_USE_ID = "toolu_paris_1"
TOOL_PARAM = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_PARAMETERS}

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False, "content": True},
    "two_turns_tool_stream": {"stream": True, "content": True},
    "two_turns_tool_no_content": {"stream": False, "content": False},
    "two_turns_tool_stream_helper": {"stream": "helper", "content": True},
}


def _call(client: Any, messages: list[dict[str, Any]], stream: bool | str) -> tuple[str | None, list[tuple[str, str, Any]], list[dict[str, Any]]]:
    """One model call; returns (text, [(id, name, input)], assistant content blocks)."""
    kwargs = {"model": MODEL, "max_tokens": MAX_TOKENS, "system": SYSTEM_PROMPT, "tools": [TOOL_PARAM],
              "messages": messages}
    if not stream:
        reply = client.messages.create(**kwargs)
        blocks = [b.model_dump(exclude_none=True) for b in reply.content]
    elif stream == "helper":
        # messages.stream(): the SDK's stream manager, which accumulates the final message.
        with client.messages.stream(**kwargs) as events:
            for _ in events.text_stream:
                pass
            reply = events.get_final_message()
        blocks = [b.model_dump(exclude_none=True) for b in reply.content]
    else:
        # create(stream=True): the raw event stream, read to the end as an app would.
        blocks = []
        partial: dict[int, str] = {}
        for event in client.messages.create(**kwargs, stream=True):
            if event.type == "content_block_start":
                blocks.append(event.content_block.model_dump(exclude_none=True))
            elif event.type == "content_block_delta":
                if event.delta.type == "text_delta":
                    blocks[event.index]["text"] = blocks[event.index].get("text", "") + event.delta.text
                elif event.delta.type == "input_json_delta":
                    partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
        for index, raw in partial.items():
            blocks[index]["input"] = json.loads(raw)
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    calls = [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    return ("".join(texts) if texts else None), calls, blocks


def run_two_turns(client: Any, stream: bool | str) -> list[Turn]:
    """Two turns; the app keeps the history and sends tool results back in a user message."""
    wire: list[dict[str, Any]] = []
    turns: list[Turn] = []
    for user_text in (TURN1_USER, TURN2_USER):
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        wire.append({"role": "user", "content": user_text})
        text, calls, blocks = _call(client, wire, stream)
        while calls:
            turn.intermediate_text = text
            wire.append({"role": "assistant", "content": blocks})
            results = []
            for cid, name, args in calls:
                record = ToolCallRecord(cid, name, args, get_weather(**args), True)
                turn.tool_calls.append(record)
                results.append({"type": "tool_result", "tool_use_id": cid, "content": json.dumps(record.result)})
            wire.append({"role": "user", "content": results})
            text, calls, blocks = _call(client, wire, stream)
        turn.final_text = text or ""
        wire.append({"role": "assistant", "content": blocks})
        turns.append(turn)
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    import anthropic
    import fake_anthropic
    from opentelemetry import trace
    from opentelemetry._logs import set_logger_provider
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_anthropic.FakeAnthropic() as provider:
        provider.enqueue(
            fake_anthropic.tool_use(TOOL_NAME, {"city": "Paris"}, text=LOOKUP_TEXT, tool_use_id=TOOL_USE_ID),
            fake_anthropic.text(TURN1_ANSWER),
            fake_anthropic.text(TURN2_ANSWER),
        )
        tracer_provider, logger_provider = otel_providers(capture.endpoint, "weather-app", logs=True)
        trace.set_tracer_provider(tracer_provider)  # openlit.init reuses registered SDK providers
        set_logger_provider(logger_provider)
        import openlit

        openlit.init(
            application_name="weather-app",
            environment="capture",
            pricing_json=str(HERE / "pricing.json"),  # local: openlit would otherwise download it
            disable_metrics=True,
            capture_message_content=spec["content"],
        )
        client = anthropic.Anthropic(base_url=provider.base_url, api_key=provider.api_key, max_retries=0)
        turns = run_two_turns(client, spec["stream"])
        tracer_provider.shutdown()
        logger_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.message_requests]
    assert [len(b["messages"]) for b in sent] == [1, 3, 5]
    runs, notes = expectations(spec, turns)
    write_expected(HERE, name, library=LIBRARY, library_version=version("openlit"), convention="genai",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


def expectations(spec: dict[str, Any], turns: list[Turn]) -> tuple[list[dict[str, Any]], str]:
    """Bare runs (no agent span): one per model call."""
    t1, t2 = turns
    call = t1.tool_calls[0]
    runs: list[dict[str, Any]] = [
        {
            "convention": "genai",
            "entityName": MODEL,
            "systemMessages": [SYSTEM_PROMPT],
            "taggedSystemMessages": {},
            "inputMessages": [{"role": "user", "text": t1.user_text}],
            "rememberedMessages": [],
            "output": {"toolCalls": [{"toolName": call.tool_name, "toolCallId": call.tool_call_id,
                                       "args": call.args, "state": "call"}]},
            "contentCaptured": True,
        },
        {"convention": "genai", "entityName": MODEL, "systemMessages": [SYSTEM_PROMPT],
         "output": {"text": t1.final_text}, "contentCaptured": True},
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
        "openlit.init() around plain anthropic messages.create calls (the app keeps the history): "
        "three root CLIENT spans `chat claude-haiku-5-5`, no agent span, no tool span, so one bare run per "
        "call (entityName = the requested model). Each span has the GenAI attributes "
        "(gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions) and ALSO an OTLP "
        "log record `gen_ai.client.inference.operation.details` (same file, linked by trace/span id; "
        "its gen_ai.input/output.messages and system_instructions are structured AnyValue kvlists, not "
        "JSON strings) that repeats the messages; the instructions appear both as gen_ai.system_instructions and as "
        "a system message. Run 1 ends in the tool call (with the text 'Let me look that up.'); run 2's "
        "input ends with the tool_result user message (its input/remembered are deliberately not "
        "asserted); run 3 is turn 2 with the whole turn 1 as history. Each call must count once even "
        "though span and log event both carry it. openlit also instruments httpx: every chat span "
        "has a child CLIENT span `POST` (scope opentelemetry.instrumentation.httpx) that is no model "
        "call. The span also has openlit's flat gen_ai.tool.name / gen_ai.tool.call.id / "
        "gen_ai.tool.call.arguments for the tool call it returned (not an execute_tool span)."
    )
    if spec["stream"] == "helper":
        notes += (
            " Every call is client.messages.stream() (the SDK's stream manager, read to the end): "
            "openlit emits the `gen_ai.client.inference.operation.details` log record TWICE per call "
            "(identical, same trace/span id) and logs 'Setting attribute on ended span'; the span "
            "content is complete. Each call must still count once."
        )
    elif spec["stream"]:
        notes += (
            " Every call is messages.create(stream=True) (raw SSE events read to the end): the span "
            "is complete, but its `gen_ai.client.inference.operation.details` log record has NO trace "
            "or span id (emitted outside the span's context), so it joins nothing: such a log record "
            "is an orphan and must not become a run of its own."
        )
    if not spec["content"]:
        runs = [{"convention": "genai", "entityName": MODEL, "contentCaptured": False} for _ in runs]
        notes += (
            " capture_message_content=False: no message content on spans or log records; the runs "
            "exist but carry no content (contentCaptured=false)."
        )
    return runs, notes


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
