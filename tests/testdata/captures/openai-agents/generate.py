"""Capture driver: OpenAI Agents SDK traced by openinference-instrumentation-openai-agents.

The real ``openai-agents`` Runner (Responses API) talks to the fake OpenAI server that also speaks
the Responses API (tests/fakes/fake_openai_responses.py) on 127.0.0.1. The OpenInference
instrumentor replaces the SDK's own trace processors (exclusive: nothing goes to OpenAI's trace
backend) and turns the SDK's trace/agent/response/function spans into OpenInference spans, exported
with the real OTel SDK (OTLP/HTTP protobuf, batch processor) to the loopback capture server
(tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl`` and ``<scenario>.expected.json``
beside this file. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3 -m venv /tmp/capvenvs/openai-agents
    /tmp/capvenvs/openai-agents/bin/pip install --no-deps -r tests/testdata/captures/openai-agents/requirements.txt
    /tmp/capvenvs/openai-agents/bin/python tests/testdata/captures/openai-agents/generate.py
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

LIBRARY = "openai-agents"
MODEL = "gpt-4o-mini"
CALL_ID = "call_paris_1"
WORKFLOW = "weather-app"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False},
    "two_turns_tool_stream": {"stream": True},
}


async def run_two_turns(agents: Any, agent: Any, stream: bool) -> list[Turn]:
    """Two Runner runs; turn 2's input is turn 1's ``to_input_list()`` plus the new user message."""
    from agents.items import MessageOutputItem, ToolCallItem, ToolCallOutputItem

    config = agents.RunConfig(workflow_name=WORKFLOW, group_id=CONVERSATION_ID)
    turns: list[Turn] = []
    previous: list[Any] = []
    for user_text in (TURN1_USER, TURN2_USER):
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        run_input = previous + [{"role": "user", "content": user_text}]
        if stream:
            result = agents.Runner.run_streamed(agent, run_input, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            result = await agents.Runner.run(agent, run_input, run_config=config)
        texts: list[str] = []
        by_id: dict[str, ToolCallRecord] = {}
        for item in result.new_items:
            if isinstance(item, MessageOutputItem):
                texts.append(agents.ItemHelpers.text_message_output(item))
            elif isinstance(item, ToolCallItem):
                raw = item.raw_item
                record = ToolCallRecord(raw.call_id, raw.name, json.loads(raw.arguments))
                by_id[raw.call_id] = record
                turn.tool_calls.append(record)
                turn.intermediate_text = texts[-1] if texts else None
            elif isinstance(item, ToolCallOutputItem):
                record = by_id[item.raw_item["call_id"]]
                record.result, record.has_result = json.loads(item.raw_item["output"]), True
        turn.final_text = str(result.final_output)
        turns.append(turn)
        previous = result.to_input_list()
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    import agents
    import fake_openai_responses as fake
    import openai
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    replies = [
        fake.ToolCallReply((fake.ToolCall(CALL_ID, TOOL_NAME, json.dumps({"city": "Paris"})),), text=LOOKUP_TEXT),
        fake.TextReply(TURN1_ANSWER),
        fake.TextReply(TURN2_ANSWER),
    ]
    with OtlpCaptureServer(capture_path) as capture, fake.FakeOpenAIResponses(replies) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)  # exclusive processor
        agents.set_default_openai_client(
            openai.AsyncOpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0),
            use_for_tracing=False,
        )
        agents.set_default_openai_api("responses")

        @agents.function_tool(name_override=TOOL_NAME)
        def weather_tool(city: str) -> str:
            """Current weather for a city.

            Args:
                city: The city.
            """
            return json.dumps(get_weather(city))

        agent = agents.Agent(name=AGENT_NAME, instructions=SYSTEM_PROMPT, model=MODEL, tools=[weather_tool])
        turns = asyncio.run(run_two_turns(agents, agent, spec["stream"]))
        OpenAIAgentsInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    assert all(r["instructions"] == SYSTEM_PROMPT for r in sent), sent
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent), [r.get("stream") for r in sent]
    assert [len(r["input"]) for r in sent] == [1, 4, 6], [r["input"] for r in sent]

    runs = [agent_run_expectation(t, convention="openinference", entity_name=AGENT_NAME) for t in turns]
    notes = (
        "Two Runner runs (Agent weather-agent, instructions = the system prompt, @function_tool "
        "get_weather returning JSON text, Responses API), RunConfig(workflow_name=weather-app, "
        "group_id=conv-42); turn 2's input is turn 1's result.to_input_list() plus the new user "
        "message. Each run is one trace (13 spans in all): root AGENT span `weather-app` (the SDK's "
        "trace, named after the workflow) > CHAIN `weather-app` > AGENT `weather-agent` (agent.name, "
        "graph.node.id; NO input/output content) > one CHAIN `turn` per model round > the LLM span "
        "`response` (llm.input_messages with the instructions as a system message first, "
        "llm.output_messages, input.value = the Responses input items, output.value = the raw "
        "response) and, in turn 1's first round, the TOOL span `get_weather` (input.value = the JSON "
        "arguments, output.value = the JSON text the tool returned). One run per turn with "
        "entityName = the agent's name: the workflow AGENT root and the agent AGENT span are ONE "
        "invocation and must not make two runs. The Responses API splits turn 1's first answer into "
        "two output items, an assistant message 'Let me look that up.' and a function_call, so they "
        "are two assistant messages (llm.output_messages.0 and .1, and two items in the next call's "
        "input); the expectation folds them into one assistant turn with the tool call, as "
        "elsewhere. OpenInference exports neither the group_id nor any session id, so there is no "
        "conversation id to expect."
    )
    if spec["stream"]:
        notes += " Every run is Runner.run_streamed (Responses API SSE, stream events read to the end)."
    lib_version = (f"openai-agents {version('openai-agents')}, openinference-instrumentation-openai-agents "
                   f"{version('openinference-instrumentation-openai-agents')}")
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="openinference",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
