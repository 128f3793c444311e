"""Capture driver: an Agno Agent traced by openinference-instrumentation-agno.

A real ``agno.agent.Agent`` (name ``weather-agent``, ``instructions`` = the system prompt, the
plain function ``get_weather`` as its tool, ``InMemoryDb`` with ``add_history_to_context=True``
and ``session_id`` = the conversation id) with ``OpenAIChat(id="gpt-4o-mini")`` talks to the
fake OpenAI chat-completions server (tests/fakes/fake_openai.py) on 127.0.0.1. The history of
turn 2 comes from Agno's own session storage, not from the app. ``AgnoInstrumentor`` gets the
tracer provider explicitly; spans go through the real OTel SDK (OTLP/HTTP protobuf, batch
processor) to the loopback capture server (tests/fakes/otlp_capture.py). Writes
``<scenario>.otlp.jsonl``, ``<scenario>.expected.json`` and ``<scenario>.requests.json`` beside
this file. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3.11 -m venv /tmp/capvenvs/agno
    /tmp/capvenvs/agno/bin/pip install --no-deps -r tests/testdata/captures/agno/requirements.txt
    /tmp/capvenvs/agno/bin/python tests/testdata/captures/agno/generate.py
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
    AGENT_NAME,
    CONVERSATION_ID,
    MULTI_CALL_IDS,
    MULTI_TURN1_ANSWER,
    MULTI_TURN1_USER,
    MULTI_TURN2_ANSWER,
    MULTI_TURN2_USER,
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
    get_weather_or_fail,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "agno"
MODEL = "gpt-4o-mini"
CALL_ID = "call_paris_1"


def scripted_replies(fake: Any) -> list[Any]:
    """The provider's side, without the lead-in text: Agno's RunOutput.content concatenates the
    text of every model call of a run, so a lead-in would be glued to the answer."""
    return [
        fake.ToolCallReply((fake.ToolCall(CALL_ID, TOOL_NAME, json.dumps({"city": "Paris"})),)),
        fake.TextReply(TURN1_ANSWER),
        fake.TextReply(TURN2_ANSWER),
    ]

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False},
    "two_turns_tool_stream": {"stream": True},
    "two_turns_tool_hidden": {"stream": False, "hide": True},
    "two_tools_and_a_failure": {"stream": False, "multi": True},
}


def scripted_replies_multi(fake: Any) -> list[Any]:
    """`two_tools_and_a_failure` without lead-in texts (see `scripted_replies`): turn 1 calls
    get_weather for Paris and Berlin in one reply, turn 2 calls it for Rome twice in sequence."""
    paris, berlin, rome1, rome2 = MULTI_CALL_IDS

    def call(cid: str, city: str) -> Any:
        return fake.ToolCall(cid, TOOL_NAME, json.dumps({"city": city}))

    return [
        fake.ToolCallReply((call(paris, "Paris"), call(berlin, "Berlin"))),
        fake.TextReply(MULTI_TURN1_ANSWER),
        fake.ToolCallReply((call(rome1, "Rome"),)),
        fake.ToolCallReply((call(rome2, "Rome"),)),
        fake.TextReply(MULTI_TURN2_ANSWER),
    ]


def weather_tool(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city.
    """
    return json.dumps(get_weather(city))


def weather_tool_or_fail(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city.
    """
    return json.dumps(get_weather_or_fail(city))


weather_tool.__name__ = weather_tool_or_fail.__name__ = "get_weather"


def turn_from_output(output: Any, user_text: str, prior: list[Turn]) -> Turn:
    """The Turn of one run, from the RunOutput Agno returned (its messages and tools)."""
    turn = Turn(user_text=user_text, history=[m for t in prior for m in t.remembered_after()])
    results = {t.tool_call_id: t for t in output.tools or []}
    sent = {m.tool_call_id: m for m in output.messages or [] if m.role == "tool"}
    for m in output.messages or []:
        if m.from_history or m.role != "assistant" or not m.tool_calls:
            continue
        records = []
        for c in m.tool_calls:
            record = ToolCallRecord(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            execution = results[c["id"]]
            if execution.tool_call_error:
                # The error text Agno sent the model as the tool message's content; Agno's stored
                # history keeps the tool_call_error mark (the wire has none).
                record.error = str(sent[c["id"]].content)
                record.error_in_history = "output-error" if sent[c["id"]].tool_call_error else "result"
            else:
                record.result, record.has_result = json.loads(execution.result), True
            records.append(record)
        turn.add_tool_step(m.content if isinstance(m.content, str) and m.content else None, records)
    turn.final_text = str(output.content)
    return turn


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its files."""
    spec = SCENARIOS[name]
    import fake_openai as fake
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.models.openai import OpenAIChat
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.agno import AgnoInstrumentor
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    multi = bool(spec.get("multi"))
    replies = scripted_replies_multi(fake) if multi else scripted_replies(fake)
    with OtlpCaptureServer(capture_path) as capture, fake.FakeOpenAI(replies) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        # OpenInference's redaction (also OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true) in the hidden mode.
        hide = bool(spec.get("hide"))
        AgnoInstrumentor().instrument(tracer_provider=tracer_provider,
                           config=TraceConfig(hide_inputs=hide, hide_outputs=hide))
        agent = Agent(
            name=AGENT_NAME,
            model=OpenAIChat(id=MODEL, base_url=provider.base_url, api_key="x"),
            instructions=SYSTEM_PROMPT,
            tools=[weather_tool_or_fail if multi else weather_tool],
            db=InMemoryDb(),
            add_history_to_context=True,
            session_id=CONVERSATION_ID,
            telemetry=False,
        )
        turns: list[Turn] = []
        for user_text in (MULTI_TURN1_USER, MULTI_TURN2_USER) if multi else (TURN1_USER, TURN2_USER):
            if spec["stream"]:
                for _ in agent.run(user_text, stream=True):
                    pass
                output = agent.get_last_run_output()
            else:
                output = agent.run(user_text)
            turns.append(turn_from_output(output, user_text, turns))
        AgnoInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    answers = [MULTI_TURN1_ANSWER, MULTI_TURN2_ANSWER] if multi else [TURN1_ANSWER, TURN2_ANSWER]
    assert [t.final_text for t in turns] == answers, [t.final_text for t in turns]
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent), [r.get("stream") for r in sent]
    systems = [[m for m in r["messages"] if m["role"] in ("system", "developer")] for r in sent]
    assert all(len(s) == 1 and s[0] == systems[0][0] for s in systems), systems
    system_text = systems[0][0]["content"]
    assert SYSTEM_PROMPT in system_text, system_text
    lengths = [2, 5, 7, 9, 11] if multi else [2, 4, 6]
    assert [len(r["messages"]) for r in sent] == lengths, [r["messages"] for r in sent]
    if multi:  # the failed call's error text is what the model was sent
        berlin = [m for m in sent[1]["messages"] if m.get("tool_call_id") == MULTI_CALL_IDS[1]]
        assert [m["content"] for m in berlin] == [turns[0].tool_calls[1].error], berlin
    write_requests(HERE, name, sent)

    runs = [agent_run_expectation(t, convention="openinference", entity_name=AGENT_NAME,
                                  system_messages=[system_text],
                                  extra={"conversationId": CONVERSATION_ID}) for t in turns]
    if spec.get("hide"):  # no content may be asserted (golden.json: notCompared)
        runs = [{"convention": "openinference", "entityName": run["entityName"], "contentCaptured": False,
                 "conversationId": CONVERSATION_ID} for run in runs]
    notes = (
        "Two Agent.run calls on one Agno Agent `weather-agent` (instructions = the system prompt, "
        "the plain function get_weather returning JSON text, OpenAIChat gpt-4o-mini against the fake "
        "chat-completions server, InMemoryDb, add_history_to_context=True, session_id=conv-42); turn "
        "2's history comes from Agno's session storage (the second run's request carries turn 1's "
        "user message, the assistant tool call with its tool result and the answer). systemMessages "
        "is the system message the fake received (Agno builds it from the instructions), identical "
        "on every call. No lead-in text before the tool call: Agno's RunOutput.content "
        "concatenates the text of every model call of the run."
    )
    if spec["stream"]:
        notes += " Streaming: agent.run(..., stream=True), its events read to the end (streamed chat completions)."
    if multi:
        notes = (
            "two_tools_and_a_failure (_common.py) on the same Agent (InMemoryDb, session conv-42), "
            "without lead-in texts: turn 1's first reply calls get_weather for Paris and Berlin "
            "(parallel tool calls in one reply); Berlin's tool raises WeatherServiceError, Agno "
            "catches it and sends the model its text as the tool message (the wire has no error "
            "flag), marks the execution tool_call_error=True and keeps that mark in the session "
            "history, so turn 2's remembered failed call is output-error too; turn 2 calls "
            "get_weather(Rome) twice in sequence.")
    if spec.get("hide"):
        notes += (" TraceConfig(hide_inputs=True, hide_outputs=True) (OpenInference's redaction, also "
                  "OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true): no content may be asserted; every run has "
                  "contentCaptured=false.")
    lib_version = (f"agno {version('agno')}, openinference-instrumentation-agno "
                   f"{version('openinference-instrumentation-agno')}")
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="openinference",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
