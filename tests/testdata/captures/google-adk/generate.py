"""Capture driver: Google ADK (Agent Development Kit) with its own OpenTelemetry tracing.

A real ``google.adk`` ``LlmAgent`` (name ``weather_agent``: ADK requires identifier names) with the
instructions, one ``get_weather`` function tool and a ``LiteLlm("openai/gpt-4o-mini")`` model
pointed at the fake OpenAI chat-completions server (tests/fakes/fake_openai.py) on 127.0.0.1. A
``Runner`` with an ``InMemorySessionService`` keeps the conversation: one session (id
``conv-42``), so turn 2 passes only the new message and ADK rebuilds the history from the
session's events. ADK's tracer (scope ``gcp.vertex.agent``) and its OTel logger use the global
providers, which the driver sets (OTLP/HTTP protobuf, batch processors) to the loopback capture
server (tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl``, ``.expected.json`` and
``.requests.json`` (the request bodies the fake received) beside this file. Does not import
scorecar code.

ADK's telemetry modes (read from ``google/adk/telemetry/{_schema_version,context,tracing}.py``):

* ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN``: ``2`` (default) = OTel GenAI semconv aligned
  (``invoke_workflow``/``invoke_agent``/``generate_content``/``execute_tool`` spans, experimental
  GenAI semconv on, no ``call_llm`` span, tool content as ``gen_ai.tool.call.*``); ``1`` = the
  legacy format (``invocation``/``invoke_agent``/``call_llm``/``generate_content``/``execute_tool``,
  ``gcp.vertex.agent.*`` content attributes, stable-semconv log events).
* ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``NO_CONTENT`` (default) /
  ``SPAN_ONLY`` / ``EVENT_ONLY`` / ``SPAN_AND_EVENT`` (``true`` = ``EVENT_ONLY``).
* ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`` (default on): content on the legacy
  ``gcp.vertex.agent.*`` attributes (schema 1), ``{}`` when off.
* ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: the experimental GenAI semconv
  under schema 1 (schema 2 has it by default).

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3.11 -m venv /tmp/capvenvs/google-adk
    /tmp/capvenvs/google-adk/bin/pip install --no-deps -r tests/testdata/captures/google-adk/requirements.txt
    /tmp/capvenvs/google-adk/bin/python tests/testdata/captures/google-adk/generate.py [scenario]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    CONVERSATION_ID,
    LOOKUP_TEXT,
    MULTI_CALL_IDS,
    MULTI_TURN1_ANSWER,
    MULTI_TURN1_USER,
    MULTI_TURN2_ANSWER,
    MULTI_TURN2_USER,
    RECHECK_TEXT,
    SYSTEM_PROMPT,
    TOOL_ERROR,
    TOOL_NAME,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "google-adk"
AGENT = "weather_agent"
APP_NAME = "weather_app"
USER_ID = "user-ana"
MODEL = "openai/gpt-4o-mini"
CALL_ID = "call_paris_1"
SUB_AGENT = "forecast_agent"
SUB_DESCRIPTION = "Looks up the weather for a city."
SUB_INSTRUCTION = "You look up the weather with get_weather."
SUB_CALL_ID = "call_forecast_1"
SUB_REQUEST = "Paris"
SUB_ANSWER = "Paris: 14°C, rain."
CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SCHEMA = "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"
LEGACY_CONTENT = "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"
SEMCONV = "OTEL_SEMCONV_STABILITY_OPT_IN"

# env: the telemetry switches of the scenario; content: whether the run's content is exported
# anywhere (spans, span attributes or log records).
SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"env": {CONTENT: "SPAN_ONLY"}, "stream": False, "content": True},
    "two_turns_tool_stream": {"env": {CONTENT: "SPAN_ONLY"}, "stream": True, "content": True},
    "two_turns_tool_event_only": {"env": {CONTENT: "EVENT_ONLY"}, "stream": False, "content": True},
    "two_turns_tool_stream_event_only": {"env": {CONTENT: "EVENT_ONLY"}, "stream": True, "content": True},
    "two_turns_tool_span_and_event": {"env": {CONTENT: "SPAN_AND_EVENT"}, "stream": False,
                                      "content": True},
    "two_turns_tool_no_content": {"env": {}, "stream": False, "content": False},
    "legacy_two_turns_tool": {"env": {SCHEMA: "1"}, "stream": False, "content": True},
    "legacy_two_turns_tool_stream": {"env": {SCHEMA: "1"}, "stream": True, "content": True},
    "legacy_two_turns_tool_events": {"env": {SCHEMA: "1", LEGACY_CONTENT: "false", CONTENT: "true"},
                                     "stream": False, "content": True},
    "legacy_two_turns_tool_experimental": {
        "env": {SCHEMA: "1", SEMCONV: "gen_ai_latest_experimental", CONTENT: "SPAN_ONLY"},
        "stream": False, "content": True},
    "legacy_two_turns_tool_no_content": {"env": {SCHEMA: "1", LEGACY_CONTENT: "false"},
                                         "stream": False, "content": False},
    "two_tools_and_a_failure": {"env": {CONTENT: "SPAN_ONLY"}, "stream": False,
                                "content": True, "multi": True},
    "legacy_two_tools_and_a_failure": {"env": {SCHEMA: "1"}, "stream": False, "content": True,
                                       "multi": True},
    "sub_agent_two_turns_tool": {"env": {CONTENT: "SPAN_ONLY"}, "stream": False, "content": True,
                                 "sub": True},
}

MODE_NOTES: dict[str, str] = {
    "two_turns_tool": "Schema 2 (default), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY: "
                      "content as gen_ai.* attributes on the generate_content and execute_tool spans.",
    "two_turns_tool_stream": "As two_turns_tool, with RunConfig(streaming_mode=SSE): every model call "
                             "streamed (stream=True requests).",
    "two_turns_tool_event_only": "Schema 2, EVENT_ONLY: no content on spans; it is in the "
                                 "gen_ai.client.inference.operation.details log records.",
    "two_turns_tool_stream_event_only": "As two_turns_tool_event_only, streamed (SSE): the log record's "
                                        "gen_ai.output.messages lists every chunk, then the whole answer.",
    "two_turns_tool_span_and_event": "Schema 2, SPAN_AND_EVENT: the same content on the spans and "
                                     "in the log records (must count once).",
    "two_turns_tool_no_content": "Schema 2 with ADK's defaults (capture NO_CONTENT): no message content "
                                 "anywhere.",
    "legacy_two_turns_tool": "Schema 1 (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) with its defaults: "
                             "content in the gcp.vertex.agent.* attributes (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS "
                             "defaults on); the stable-semconv log events' bodies are '<elided>'.",
    "legacy_two_turns_tool_stream": "As legacy_two_turns_tool, streamed (SSE).",
    "legacy_two_turns_tool_events": "Schema 1, ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false (the "
                                    "gcp.vertex.agent.* content attributes are '{}') and "
                                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: content only in the "
                                    "gen_ai.system.message / gen_ai.user.message / gen_ai.choice log records.",
    "legacy_two_turns_tool_experimental": "Schema 1 with OTEL_SEMCONV_STABILITY_OPT_IN="
                                          "gen_ai_latest_experimental and SPAN_ONLY: legacy spans and "
                                          "content attributes plus gen_ai.input/output.messages.",
    "legacy_two_turns_tool_no_content": "Schema 1, ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false and no "
                                        "OTel content capture: '{}' and '<elided>' placeholders only.",
    "two_tools_and_a_failure": (
        "Scenario two_tools_and_a_failure, schema 2, SPAN_ONLY. Turn 1: ONE model reply with the "
        "lead-in and two calls (Paris, Berlin); ADK runs them in parallel (one execute_tool span "
        "each, plus an `execute_tool (merged)` span whose gen_ai.tool.name is '(merged tools)' and "
        "whose call id is the merged response event's id: no tool call). Berlin's tool raises; the "
        "agent's on_tool_error_callback (ADK's way to hand a tool error to the model) returns "
        "{\"error\": <the error text>}, which ADK sends as that call's function response. Its "
        "execute_tool span has no exception (it was handled) but status ERROR with error.type "
        "TOOL_ERROR (FunctionTool reads a truthy `error` key in a dict response as a failure) and "
        "gen_ai.tool.call.result = that dict. The failed call is expected as output-error with the "
        "error text; as history in turn 2 it is the plain result {\"error\": <text>} the wire "
        "carried (chat completions has no error flag). Turn 2: get_weather(Rome), then again with a "
        "new call id and the text 'Let me check again.', then the answer."),
    "sub_agent_two_turns_tool": (
        "A sub-agent with its own name: the root agent has sub_agents=[LlmAgent(name=forecast_agent, "
        "description, instruction, tools=[get_weather], mode='single_turn')] (ADK 2's recommended "
        "agent-as-tool: exposed to the root model as a tool named after it, run inline in the "
        "parent's session). Turn 1: the root model answers the lead-in and calls forecast_agent "
        "{request: Paris}; ADK runs forecast_agent (its own invoke_agent span, a sibling of the "
        "execute_tool forecast_agent span under the root's invoke_agent): its model gets only its "
        "instruction and 'Paris', calls get_weather(Paris) and answers 'Paris: 14°C, rain.', which "
        "ADK returns to the root as that call's response {result: <text>}; the root answers. Turn 2 "
        "(root only) remembers turn 1 without the sub-agent's own steps. Runs: the root's turn 1, "
        "forecast_agent's run (a separate agent: its own name, its own invoke_agent span), the "
        "root's turn 2. The sub-agent's system message has no identity line in single_turn mode; "
        "its requests also offer ADK's transfer_to_agent tool."),
    "legacy_two_tools_and_a_failure": (
        "Scenario two_tools_and_a_failure (as above) in schema 1 with its defaults: the calls' "
        "arguments and responses in gcp.vertex.agent.tool_call_args / .tool_response (Berlin's "
        "span ERROR, error.type TOOL_ERROR, response {\"error\": <text>}); the `execute_tool "
        "(merged)` span has tool_call_args 'N/A' and tool_response = the list of both function "
        "responses."),
}


def record_turn(turn: Turn, events: list[Any], failures: dict[str, str], author: str = AGENT) -> None:
    """Fill a Turn from the final (non-partial) ADK events one agent (`author`) wrote in one
    invocation.

    `failures`: the error text per call id of the tool calls that raised (the app's
    on_tool_error_callback recorded them; ADK sent its returned dict as their response).
    """
    by_id: dict[str, ToolCallRecord] = {}
    for event in events:
        if event.partial or event.content is None or event.author != author:
            continue
        parts = event.content.parts or []
        texts = "".join(p.text for p in parts if p.text is not None and not p.thought)
        calls = [p.function_call for p in parts if p.function_call is not None]
        responses = [p.function_response for p in parts if p.function_response is not None]
        if calls:
            step = []
            for call in calls:
                record = ToolCallRecord(call.id or "", call.name or "", dict(call.args or {}))
                by_id[record.tool_call_id] = record
                step.append(record)
            turn.add_tool_step(texts or None, step)
        elif responses:
            for response in responses:
                record = by_id[response.id or ""]
                if record.tool_call_id in failures:
                    record.error, record.error_in_history = failures[record.tool_call_id], "result"
                else:
                    record.result, record.has_result = response.response, True
        elif texts:
            turn.final_text = texts


async def run_two_turns(runner: Any, stream: bool, user_texts: tuple[str, str],
                        failures: dict[str, str]) -> tuple[list[Turn], list[list[Any]]]:
    """Two run_async invocations on one session: turn 2 sends only the new message. Returns
    the root agent's turns and every turn's events."""
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.genai import types

    config = RunConfig(streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE)
    await runner.session_service.create_session(app_name=APP_NAME, user_id=USER_ID,
                                                session_id=CONVERSATION_ID)
    turns: list[Turn] = []
    all_events: list[list[Any]] = []
    for user_text in user_texts:
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        message = types.Content(role="user", parts=[types.Part(text=user_text)])
        events = [e async for e in runner.run_async(user_id=USER_ID, session_id=CONVERSATION_ID,
                                                    new_message=message, run_config=config)]
        record_turn(turn, events, failures)
        turns.append(turn)
        all_events.append(events)
    return turns, all_events


def error_results_as_sent(turns: list[Turn]) -> None:
    """A failed call as later history is what the wire carried: the error callback's dict
    (`{"error": <text>}`) as the tool message's content, a plain result (chat completions has
    no error flag; `ToolCallRecord` would give the bare text)."""
    failed = {c.tool_call_id: c.error for t in turns for c in t.tool_calls if c.error is not None}
    for turn in turns:
        for message in turn.history:
            for call in message.get("toolCalls", []):
                if call.get("toolCallId") in failed:
                    call["result"], call["state"] = {"error": failed[call["toolCallId"]]}, "result"


def check_wire_multi(sent: list[dict[str, Any]], turns: list[Turn]) -> str:
    """The two_tools_and_a_failure requests against the Turn records; returns the system text."""
    paris, berlin, rome1, rome2 = MULTI_CALL_IDS
    assert len(sent) == 5, len(sent)
    roles = [[m["role"] for m in r["messages"]] for r in sent]
    assert roles[1] == ["system", "user", "assistant", "tool", "tool"], roles
    tools = {m["tool_call_id"]: json.loads(m["content"]) for m in sent[1]["messages"] if m["role"] == "tool"}
    assert tools == {paris: get_weather("Paris"), berlin: {"error": TOOL_ERROR}}, tools
    assert sent[2]["messages"][-1]["content"] in (MULTI_TURN2_USER, [{"type": "text", "text": MULTI_TURN2_USER}])
    assert [m["role"] for m in sent[4]["messages"]][-5:] == ["user", "assistant", "tool", "assistant", "tool"]
    assert [c.tool_call_id for t in turns for c in t.tool_calls] == [paris, berlin, rome1, rome2]
    assert [t.final_text for t in turns] == [MULTI_TURN1_ANSWER, MULTI_TURN2_ANSWER]
    assert turns[1].steps[1][0] == RECHECK_TEXT
    system = sent[0]["messages"][0]
    assert all(r["messages"][0] == system for r in sent)
    return str(system["content"])


def multi_replies(fake_openai: Any) -> list[Any]:
    """The provider's side of two_tools_and_a_failure (as _openai_conversation.py scripts it)."""
    paris, berlin, rome1, rome2 = MULTI_CALL_IDS

    def call(cid: str, city: str) -> Any:
        return fake_openai.ToolCall(cid, TOOL_NAME, json.dumps({"city": city}))

    return [
        fake_openai.ToolCallReply((call(paris, "Paris"), call(berlin, "Berlin")), text=LOOKUP_TEXT),
        fake_openai.TextReply(MULTI_TURN1_ANSWER),
        fake_openai.ToolCallReply((call(rome1, "Rome"),)),
        fake_openai.ToolCallReply((call(rome2, "Rome"),), text=RECHECK_TEXT),
        fake_openai.TextReply(MULTI_TURN2_ANSWER),
    ]


def sub_replies(fake_openai: Any) -> list[Any]:
    """The provider's side of sub_agent_two_turns_tool: the root calls forecast_agent, the
    sub-agent calls get_weather and answers, the root answers; turn 2 the root answers."""
    def call(cid: str, name: str, args: dict[str, Any]) -> Any:
        return fake_openai.ToolCall(cid, name, json.dumps(args))

    return [
        fake_openai.ToolCallReply((call(SUB_CALL_ID, SUB_AGENT, {"request": SUB_REQUEST}),), text=LOOKUP_TEXT),
        fake_openai.ToolCallReply((call(CALL_ID, TOOL_NAME, {"city": "Paris"}),)),
        fake_openai.TextReply(SUB_ANSWER),
        fake_openai.TextReply(TURN1_ANSWER),
        fake_openai.TextReply(TURN2_ANSWER),
    ]


def check_wire_sub(sent: list[dict[str, Any]], turns: list[Turn], sub_turn: Turn) -> str:
    """The sub_agent_two_turns_tool requests against the Turn records; returns the root's
    system text."""
    assert len(sent) == 5, len(sent)
    roles = [[m["role"] for m in r["messages"]] for r in sent]
    assert roles == [["system", "user"], ["system", "user"], ["system", "user", "assistant", "tool"],
                     ["system", "user", "assistant", "tool"],
                     ["system", "user", "assistant", "tool", "assistant", "user"]], roles
    assert sent[1]["messages"][0] == {"role": "system", "content": SUB_INSTRUCTION}, sent[1]["messages"][0]
    assert sent[1]["messages"][1]["content"] in (SUB_REQUEST, [{"type": "text", "text": SUB_REQUEST}])
    assert json.loads(sent[3]["messages"][3]["content"]) == {"result": SUB_ANSWER}
    assert [t.final_text for t in turns] == [TURN1_ANSWER, TURN2_ANSWER]
    assert [(c.tool_call_id, c.result) for c in turns[0].tool_calls] == [(SUB_CALL_ID, {"result": SUB_ANSWER})]
    assert sub_turn.final_text == SUB_ANSWER and [c.tool_call_id for c in sub_turn.tool_calls] == [CALL_ID]
    system = sent[0]["messages"][0]
    assert sent[4]["messages"][0] == system
    return str(system["content"])


def check_wire(sent: list[dict[str, Any]], turns: list[Turn], stream: bool) -> str:
    """Assert the requests the fake received match the Turn records; returns the system text."""
    assert len(sent) == 3, len(sent)
    assert all(bool(r.get("stream")) == stream for r in sent)
    system = sent[0]["messages"][0]
    assert system["role"] == "system", system
    text = system["content"] if isinstance(system["content"], str) else "".join(
        p["text"] for p in system["content"])
    assert text.startswith(SYSTEM_PROMPT), text
    assert all(r["messages"][0] == system for r in sent)
    roles = [[m["role"] for m in r["messages"]] for r in sent]
    assert roles == [["system", "user"], ["system", "user", "assistant", "tool"],
                     ["system", "user", "assistant", "tool", "assistant", "user"]], roles
    assert sent[2]["messages"][1]["content"] in (TURN1_USER, [{"type": "text", "text": TURN1_USER}])
    assert sent[2]["messages"][-1]["content"] in (TURN2_USER, [{"type": "text", "text": TURN2_USER}])
    assert [t.final_text for t in turns] == [TURN1_ANSWER, TURN2_ANSWER]
    assert turns[0].tool_calls[0].tool_call_id == CALL_ID
    return str(text)


def run_scenario(name: str) -> None:
    """Run one scenario in this process (its env set before ADK is imported) and write its files."""
    spec = SCENARIOS[name]
    os.environ.update(spec["env"])
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no download of LiteLLM's price list
    import fake_openai
    from opentelemetry import _logs, trace
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    multi, sub = bool(spec.get("multi")), bool(spec.get("sub"))
    replies = multi_replies(fake_openai) if multi else sub_replies(fake_openai) if sub else [
        fake_openai.ToolCallReply(
            (fake_openai.ToolCall(CALL_ID, TOOL_NAME, json.dumps({"city": "Paris"})),), text=LOOKUP_TEXT
        ),
        fake_openai.TextReply(TURN1_ANSWER),
        fake_openai.TextReply(TURN2_ANSWER),
    ]
    failures: dict[str, str] = {}
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(replies) as provider:
        tracer_provider, logger_provider = otel_providers(capture.endpoint, "weather-app", logs=True)
        trace.set_tracer_provider(tracer_provider)
        _logs.set_logger_provider(logger_provider)
        from google.adk.agents import LlmAgent
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        def get_weather_tool(city: str) -> dict[str, Any]:
            """Current weather for a city.

            Args:
                city: The city.
            """
            return get_weather_or_fail(city) if multi else get_weather(city)

        def report_tool_error(tool: Any, args: dict[str, Any], tool_context: Any,
                              error: Exception) -> dict[str, Any]:
            """ADK's way to hand a tool's failure to the model: this dict is its response."""
            failures[tool_context.function_call_id] = str(error)
            return {"error": str(error)}

        get_weather_tool.__name__ = TOOL_NAME
        if sub:
            forecast = LlmAgent(
                name=SUB_AGENT, description=SUB_DESCRIPTION, instruction=SUB_INSTRUCTION,
                tools=[get_weather_tool], mode="single_turn",
                model=LiteLlm(model=MODEL, api_base=provider.base_url, api_key="sk-test"))
            agent = LlmAgent(
                name=AGENT, instruction=SYSTEM_PROMPT, sub_agents=[forecast],
                model=LiteLlm(model=MODEL, api_base=provider.base_url, api_key="sk-test"))
        else:
            agent = LlmAgent(
                name=AGENT,
                instruction=SYSTEM_PROMPT,
                tools=[get_weather_tool],
                model=LiteLlm(model=MODEL, api_base=provider.base_url, api_key="sk-test"),
                on_tool_error_callback=report_tool_error if multi else None,
            )
        runner = Runner(agent=agent, app_name=APP_NAME, session_service=InMemorySessionService())
        user_texts = (MULTI_TURN1_USER, MULTI_TURN2_USER) if multi else (TURN1_USER, TURN2_USER)
        turns, events = asyncio.run(run_two_turns(runner, spec["stream"], user_texts, failures))
        tracer_provider.shutdown()
        logger_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    sub_turn: Turn | None = None
    if multi:
        system_text = check_wire_multi(sent, turns)
        error_results_as_sent(turns)
    elif sub:
        sub_turn = Turn(user_text=SUB_REQUEST)
        record_turn(sub_turn, events[0], failures, author=SUB_AGENT)
        system_text = check_wire_sub(sent, turns, sub_turn)
    else:
        system_text = check_wire(sent, turns, spec["stream"])
    write_requests(HERE, name, sent)

    runs = [agent_run_expectation(t, convention="genai", entity_name=AGENT, system_messages=[system_text],
                                  extra={"conversationId": CONVERSATION_ID}) for t in turns]
    if sub_turn is not None:  # the sub-agent's run starts after the root's turn 1 started
        runs.insert(1, agent_run_expectation(sub_turn, convention="genai", entity_name=SUB_AGENT,
                                             system_messages=[SUB_INSTRUCTION],
                                             extra={"conversationId": CONVERSATION_ID}))
        # No later run remembers the sub-agent's steps: state its (absent) lead-in here.
        runs[1]["output"]["intermediateText"] = sub_turn.intermediate_text or ""
    notes = (
        f"LlmAgent(name={AGENT}, instruction=the system prompt, tools=[get_weather], "
        f"model=LiteLlm({MODEL}) against the fake chat-completions server); Runner + InMemorySessionService, "
        f"one session (id {CONVERSATION_ID}, user {USER_ID}); each turn is one runner.run_async with only "
        "the new user message, ADK rebuilds the history from the session. ADK sends its instruction "
        "plus its identity line ('You are an agent. Your internal name is ...') as one system "
        "message: the expected systemMessages is that text, read from the request the fake received. "
        + MODE_NOTES[name]
    )
    if not spec["content"]:
        for run in runs:
            for key in ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages",
                        "output"):
                run.pop(key, None)
            run["contentCaptured"] = False
        notes += " No content: the runs exist (one per turn) but carry none: contentCaptured=false."
    write_expected(HERE, name, library=LIBRARY, library_version=f"google-adk {version('google-adk')}, "
                   f"litellm {version('litellm')}", convention="genai", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":  # ADK reads env at import
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
