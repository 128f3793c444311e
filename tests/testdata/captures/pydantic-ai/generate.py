"""Capture driver: Pydantic AI's own OpenTelemetry instrumentation (no logfire).

A real ``pydantic_ai.Agent`` with ``agent.instrument = InstrumentationSettings(tracer_provider=…)`` and an
``OpenAIChatModel`` pointed at the fake OpenAI chat-completions server (tests/fakes/fake_openai.py)
on 127.0.0.1. Spans go through the real OTel SDK (OTLP/HTTP protobuf, batch processor) to the
loopback capture server (tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl`` and
``<scenario>.expected.json`` beside this file. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3 -m venv /tmp/capvenvs/pydantic-ai
    /tmp/capvenvs/pydantic-ai/bin/pip install --no-deps -r tests/testdata/captures/pydantic-ai/requirements.txt
    /tmp/capvenvs/pydantic-ai/bin/python tests/testdata/captures/pydantic-ai/generate.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    AGENT_NAME,
    CONVERSATION_ID,
    LOOKUP_TEXT,
    SYSTEM_PROMPT,
    TOOL_NAME,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    get_weather,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
)

LIBRARY = "pydantic-ai"
MODEL = "gpt-4o-mini"
CALL_ID = "call_paris_1"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False, "content": True},
    "two_turns_tool_stream": {"stream": True, "content": True},
    "two_turns_tool_no_content": {"stream": False, "content": False},
}


def turn_from_messages(user_text: str, history: list[dict[str, Any]], new_messages: list[Any]) -> Turn:
    """A Turn from the messages this run added (what the app received and sent back)."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart

    turn = Turn(user_text=user_text, history=history)
    by_id: dict[str, ToolCallRecord] = {}
    for message in new_messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            if calls:
                turn.intermediate_text = text or None
                for call in calls:
                    record = ToolCallRecord(call.tool_call_id, call.tool_name, call.args_as_dict())
                    by_id[call.tool_call_id] = record
                    turn.tool_calls.append(record)
            else:
                turn.final_text = text
        else:
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    record = by_id[part.tool_call_id]
                    record.result, record.has_result = part.content, True
    return turn


async def run_two_turns(agent: Any, stream: bool) -> list[Turn]:
    """Turn 1 with no history; turn 2 with ``message_history=`` turn 1's ``all_messages()``."""
    turns: list[Turn] = []
    history: list[Any] = []

    async def drain(_ctx: Any, events: Any) -> None:
        async for _ in events:  # stream every model response to the end, as a UI would
            pass

    for user_text in (TURN1_USER, TURN2_USER):
        result = await agent.run(
            user_text,
            message_history=history or None,
            conversation_id=CONVERSATION_ID,
            event_stream_handler=drain if stream else None,
        )
        remembered = [m for t in turns for m in t.remembered_after()]
        turns.append(turn_from_messages(user_text, remembered, result.new_messages()))
        assert result.output == turns[-1].final_text
        history = result.all_messages()
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    import fake_openai
    from otlp_capture import OtlpCaptureServer
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    capture_path = HERE / f"{name}.otlp.jsonl"
    replies = [
        fake_openai.ToolCallReply(
            (fake_openai.ToolCall(CALL_ID, TOOL_NAME, json.dumps({"city": "Paris"})),), text=LOOKUP_TEXT
        ),
        fake_openai.TextReply(TURN1_ANSWER),
        fake_openai.TextReply(TURN2_ANSWER),
    ]
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(replies) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=provider.base_url, api_key="sk-test"))
        agent = Agent(
            model,
            name=AGENT_NAME,
            instructions=SYSTEM_PROMPT,
        )
        # Pydantic AI 2.x: the `agent.instrument` property (the constructor has no `instrument=`).
        agent.instrument = InstrumentationSettings(tracer_provider=tracer_provider, include_content=spec["content"])

        @agent.tool_plain(name=TOOL_NAME)
        def weather(city: str) -> dict[str, Any]:
            """Current weather for a city.

            Args:
                city: The city.
            """
            return get_weather(city)

        turns = asyncio.run(run_two_turns(agent, spec["stream"]))
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent)
    assert [len(r["messages"]) for r in sent] == [2, 4, 6], [r["messages"] for r in sent]
    assert all(r["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT} for r in sent)

    runs = [agent_run_expectation(t, convention="pydantic_ai", entity_name=AGENT_NAME,
                                  extra={"conversationId": CONVERSATION_ID}) for t in turns]
    notes = (
        "Agent(name=weather-agent, instructions=the system prompt, OpenAIChatModel against the fake "
        "chat-completions server, tool_plain get_weather returning a dict), "
        "agent.instrument = InstrumentationSettings(tracer_provider=…) (default instrumentation version). Turn 1: "
        "agent.run(user, conversation_id=conv-42); turn 2: agent.run(user, message_history=turn 1's "
        "all_messages(), conversation_id=conv-42). Each run is one trace: root `invoke_agent "
        "weather-agent` (scope pydantic-ai; gen_ai.agent.name, gen_ai.conversation.id, "
        "gen_ai.system_instructions, final_result, pydantic_ai.all_messages = the whole conversation "
        "in OTel parts format with tool results as tool_call_response parts under `result` (an "
        "object) and tool-call arguments as a JSON string, and in turn 2 pydantic_ai.new_message_index = the exact history "
        "boundary), `chat gpt-4o-mini` spans per model call (gen_ai.input/output.messages) and an "
        "`execute_tool get_weather` span (gen_ai.tool.call.arguments / .result). The instructions "
        "are sent as the first system message of every request but are not part of the stored "
        "message history."
    )
    if spec["stream"]:
        notes += " Every model call streamed (event_stream_handler given: stream=True requests)."
    if not spec["content"]:
        for run in runs:
            for key in ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages", "output"):
                run.pop(key, None)
            run["contentCaptured"] = False
        notes += (
            " include_content=False: the message attributes keep their skeleton (roles, part types, "
            "tool call ids and names) but every text part has no `content` and there are no "
            "instructions, final_result, tool arguments or results. The runs exist (2 roots) but carry "
            "no content: contentCaptured=false."
        )
    write_expected(HERE, name, library=LIBRARY, library_version=f"pydantic-ai-slim {version('pydantic-ai-slim')}",
                   convention="pydantic_ai", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
