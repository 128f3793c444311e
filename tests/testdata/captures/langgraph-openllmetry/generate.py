"""Capture driver: a LangGraph agent (LangChain 1.x ``create_agent``) under OpenLLMetry's
``opentelemetry-instrumentation-langchain`` (Traceloop's LangChain/LangGraph instrumentation).

The app is LangChain's prebuilt agent as the current release recommends it:
``langchain.agents.create_agent`` (the successor of ``langgraph.prebuilt.create_react_agent``,
built on LangGraph) with ``system_prompt=SYSTEM_PROMPT``, the ``get_weather`` tool,
``ChatOpenAI(base_url=<fake OpenAI>, api_key="x", model="gpt-4o-mini")`` and an
``InMemorySaver`` checkpointer; every turn runs with ``configurable.thread_id = conv-42`` and
sends ONLY the new user message (the checkpointer keeps the history). The bare instrumentor
(``LangchainInstrumentor``, no traceloop-sdk) exports with the real OTel SDK (OTLP/HTTP
protobuf, batch processors) to the loopback capture server (tests/fakes/otlp_capture.py).
Expectations come from what the app received (the agent's state messages per turn) and are
checked against the requests the fake OpenAI server received. No scorecar code is imported.

Regenerate (from the repository root)::

    python3.11 -m venv /tmp/capvenvs/langgraph-openllmetry
    /tmp/capvenvs/langgraph-openllmetry/bin/pip install --no-deps -r tests/testdata/captures/langgraph-openllmetry/requirements.txt
    /tmp/capvenvs/langgraph-openllmetry/bin/python tests/testdata/captures/langgraph-openllmetry/generate.py

Each scenario runs in a fresh subprocess (an instrumentor is once per process); one scenario:
``generate.py <scenario>``.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (  # noqa: E402
    AGENT_NAME,
    CONVERSATION_ID,
    MULTI_TURN1_USER,
    MULTI_TURN2_USER,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TURN1_USER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    WeatherServiceError,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "langgraph-openllmetry"
MODEL = "gpt-4o-mini"

SCENARIOS: dict[str, dict[str, Any]] = {
    # stream: agent.stream(stream_mode="messages") (the model call streams on the wire);
    # attributes: use_attributes=True (span attributes) or False (log events);
    # content: TRACELOOP_TRACE_CONTENT.
    "two_turns_tool": {"stream": False, "attributes": True},
    "two_turns_tool_stream": {"stream": True, "attributes": True},
    "two_turns_tool_events": {"stream": False, "attributes": False},
    "two_turns_tool_no_content": {"stream": False, "attributes": True, "content": False},
    "two_tools_and_a_failure": {"stream": False, "attributes": True, "multi": True},
}


def _turn_from_messages(user_text: str, new: list[Any], prior: list[Turn]) -> Turn:
    """One Turn from the messages the agent's state gained in this invocation (what the app got)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    assert isinstance(new[0], HumanMessage) and new[0].content == user_text, new[0]
    turn = Turn(user_text=user_text, history=[m for t in prior for m in t.remembered_after()])
    results = {m.tool_call_id: m for m in new if isinstance(m, ToolMessage)}
    ais = [m for m in new if isinstance(m, AIMessage)]
    for ai in ais[:-1]:
        records = []
        for call in ai.tool_calls:
            record = ToolCallRecord(call["id"], call["name"], call["args"])
            tool_msg = results[call["id"]]
            if tool_msg.status == "error":
                # The app's tool raised: the checkpointed ToolMessage keeps status="error" (the
                # model gets the error text as the tool message's content: chat completions has
                # no error flag). OpenLLMetry's gen_ai.input.messages drop the status, so as
                # history only name, id and arguments are asserted (golden.json fills the rest).
                record.error, record.error_in_history = str(tool_msg.content), "unasserted"
            else:
                record.result, record.has_result = json.loads(str(tool_msg.content)), True
            records.append(record)
        turn.add_tool_step(str(ai.content) or None, records)
    assert not ais[-1].tool_calls
    turn.final_text = str(ais[-1].content)
    return turn


def _check_wire(sent: list[dict[str, Any]], turns: list[Turn]) -> None:
    """The first request of turn 2 carried the whole history the checkpointer kept."""
    first_of_turn2 = sent[1 + len(turns[0].steps)]
    roles = [m["role"] for m in first_of_turn2["messages"]]
    assert roles[0] == "system" and first_of_turn2["messages"][0]["content"] == SYSTEM_PROMPT, roles
    assert first_of_turn2["messages"][-1] == {"role": "user", "content": turns[1].user_text}, roles
    assert roles.count("user") == 2, roles


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its files."""
    spec = SCENARIOS[name]
    multi = bool(spec.get("multi"))
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if spec.get("content", True) else "false"

    import fake_openai
    from _openai_conversation import scripted_replies, scripted_replies_two_tools_and_a_failure
    from langchain_core.tools import ToolException, tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    script = (scripted_replies_two_tools_and_a_failure if multi else scripted_replies)(fake_openai)
    provider = fake_openai.FakeOpenAI(script).start()
    with OtlpCaptureServer(capture_path) as capture:
        tracer_provider, logger_provider = otel_providers(
            capture.endpoint, "weather-app", logs=not spec["attributes"])
        LangchainInstrumentor(use_attributes=spec["attributes"]).instrument(
            tracer_provider=tracer_provider, logger_provider=logger_provider)
        # Imported after instrumenting (as Traceloop's docs ask: instrument first), so the
        # instrumentor's wrapper of the factory is what the app calls (a `create_agent` span).
        from langchain.agents import create_agent

        tool_impl = get_weather_or_fail if multi else get_weather

        @tool("get_weather", description=TOOL_DESCRIPTION)
        def get_weather_tool(city: str) -> dict[str, Any]:
            """Current weather for a city."""
            try:
                return tool_impl(city)
            except WeatherServiceError as exc:
                # LangChain's way to report a tool failure to the model (handle_tool_error).
                raise ToolException(str(exc)) from exc

        get_weather_tool.handle_tool_error = True
        model = ChatOpenAI(base_url=provider.base_url, api_key="x", model=MODEL, max_retries=0)
        agent = create_agent(
            model=model,
            tools=[get_weather_tool],
            system_prompt=SYSTEM_PROMPT,
            checkpointer=InMemorySaver(),
            name=AGENT_NAME,
        )
        config = {"configurable": {"thread_id": CONVERSATION_ID}}
        turns: list[Turn] = []
        seen = 0
        for question in [MULTI_TURN1_USER, MULTI_TURN2_USER] if multi else [TURN1_USER, TURN2_USER]:
            payload = {"messages": [{"role": "user", "content": question}]}
            if spec["stream"]:
                for _chunk in agent.stream(payload, config, stream_mode="messages"):
                    pass
                messages = agent.get_state(config).values["messages"]
            else:
                messages = agent.invoke(payload, config)["messages"]
            turns.append(_turn_from_messages(question, messages[seen:], turns))
            seen = len(messages)

        tracer_provider.shutdown()  # flushes the batch
        if logger_provider is not None:
            logger_provider.shutdown()
    pending = provider.pending
    sent = [r.body for r in provider.requests]
    provider.stop()
    assert pending == 0, "not every scripted reply was used"
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent), [r.get("stream") for r in sent]
    _check_wire(sent, turns)

    content = spec.get("content", True)
    runs = [
        agent_run_expectation(t, convention="openllmetry", entity_name=AGENT_NAME,
                              extra={"conversationId": CONVERSATION_ID})
        for t in turns
    ]
    if not content:
        runs = [{"convention": "openllmetry", "entityName": AGENT_NAME, "contentCaptured": False,
                 "conversationId": CONVERSATION_ID} for _ in turns]
    lib_version = version("opentelemetry-instrumentation-langchain")
    notes = (
        f"opentelemetry-instrumentation-langchain {lib_version} (bare LangchainInstrumentor, own "
        f"TracerProvider), langchain {version('langchain')}, langgraph {version('langgraph')}, "
        f"langchain-openai {version('langchain-openai')}, model {MODEL}. The app: "
        "create_agent(model=ChatOpenAI(base_url=fake), tools=[get_weather], "
        "system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(), name='weather-agent'); each "
        "turn sends only the new user message with configurable.thread_id='conv-42' (the "
        "checkpointer resends the history: turn 2's first request has it). Expectations come from "
        "the messages the agent's state gained per turn. "
    )
    notes += ("Content mode: span attributes (use_attributes=True, the default). " if spec["attributes"]
              else "Content mode: log events (use_attributes=False, a LoggerProvider passed to the "
                   "instrumentor); the spans carry no content. ")
    if not content:
        notes += ("TRACELOOP_TRACE_CONTENT=false: no prompts, completions or entity input/output; "
                  "every run must say contentCaptured=false, nothing else about content is asserted. ")
    if spec["stream"]:
        notes += "agent.stream(stream_mode='messages'): every model call streamed on the wire. "
    if multi:
        notes += (
            "Scenario two_tools_and_a_failure: turn 1 gets ONE reply with two get_weather calls "
            "(Paris, Berlin); Berlin's tool raises (the app turns it into a ToolException with "
            "handle_tool_error=True, LangChain's way), so the ToolMessage has status='error' and the "
            "error text as content, and the checkpointer keeps it so; the model gets the error text "
            "as the tool message (chat completions has no error flag) and OpenLLMetry's "
            "gen_ai.input.messages drop the status (a tool_call_response part has none), so in turn "
            "2's remembered history Berlin's call has only name, id and arguments asserted. Turn 2 "
            "calls get_weather(Rome) twice in sequence. ")
        write_requests(HERE, name, sent)
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version,
                   convention="openllmetry", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
