"""Capture driver: a LangGraph prebuilt agent with a checkpointer under
openinference-instrumentation-langchain.

The app is the one LangChain 1.x recommends: ``langchain.agents.create_agent`` (the successor
of ``langgraph.prebuilt.create_react_agent``, which still exists, deprecated, and is captured
too) with ``system_prompt`` = the scripted system prompt, a ``@tool`` ``get_weather`` that returns
the JSON text of the weather, ``ChatOpenAI(model="gpt-4o-mini", api_key="x", base_url=<fake>)``
against the fake OpenAI chat-completions server (tests/fakes/fake_openai.py) on 127.0.0.1, and an
``InMemorySaver`` checkpointer; every turn runs with ``configurable.thread_id`` = the
conversation id and sends ONLY its new user message (the checkpointer supplies the history).
``LangChainInstrumentor().instrument(tracer_provider=...)`` turns LangChain's callback runs
into OpenInference spans, exported with the real OTel SDK (OTLP/HTTP protobuf, batch
processor) to the loopback capture server (tests/fakes/otlp_capture.py). Writes
``<scenario>.otlp.jsonl``, ``<scenario>.expected.json`` and ``<scenario>.requests.json`` (the
chat-completion request bodies the fake received) beside this file. Does not import scorecar.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3.11 -m venv /tmp/capvenvs/langgraph-oi
    /tmp/capvenvs/langgraph-oi/bin/pip install --no-deps \
        -r tests/testdata/captures/langgraph-openinference/requirements.txt
    /tmp/capvenvs/langgraph-oi/bin/python tests/testdata/captures/langgraph-openinference/generate.py

(the list was frozen after ``pip install langgraph langchain langchain-openai
openinference-instrumentation-langchain opentelemetry-sdk opentelemetry-exporter-otlp-proto-http``).
``generate.py <scenario>`` runs one scenario.

Scenarios (all but ``two_turns_tool_unnamed`` with ``name="weather-agent"`` on the agent, which
is what makes the graph's root span an OpenInference AGENT span: the instrumentor marks any run
whose name contains "agent" as AGENT and every other graph/node run as CHAIN):

* ``two_turns_tool``: ``create_agent``, ``agent.invoke`` per turn.
* ``two_turns_tool_stream``: ``create_agent``, ``agent.stream(stream_mode="messages")`` per turn
  (LangGraph's message handler makes ChatOpenAI stream: the fake receives ``stream: true``).
* ``two_turns_tool_hidden``: as ``two_turns_tool`` with ``TraceConfig(hide_inputs=True,
  hide_outputs=True)`` (OpenInference's redaction; ``OPENINFERENCE_HIDE_INPUTS/OUTPUTS``).
* ``react_two_turns_tool``: the deprecated ``langgraph.prebuilt.create_react_agent`` with
  ``prompt`` = the system prompt, ``agent.invoke`` per turn (its model node is called "agent", so
  the instrumentor makes that inner node an AGENT span too).
* ``two_turns_tool_unnamed``: as ``two_turns_tool`` without ``name=`` (LangGraph calls the graph
  "LangGraph"; no span is an AGENT span then).
* ``two_tools_and_a_failure``: ``create_agent``, ``agent.invoke``; turn 1's one reply asks for
  Paris and Berlin (parallel calls), Berlin's tool raises ``WeatherServiceError``; a
  ``wrap_tool_call`` middleware (LangChain's documented way to handle tool errors) returns a
  ``ToolMessage(status="error", content=<the error text>)``; turn 2 calls Rome twice in sequence.
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
    LOOKUP_TEXT,
    MULTI_TURN1_USER,
    MULTI_TURN2_USER,
    SYSTEM_PROMPT,
    TOOL_NAME,
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
from _openai_conversation import scripted_replies, scripted_replies_two_tools_and_a_failure

LIBRARY = "langgraph-openinference"
MODEL = "gpt-4o-mini"

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"factory": "create_agent", "stream": False},
    "two_turns_tool_stream": {"factory": "create_agent", "stream": True},
    "two_turns_tool_hidden": {"factory": "create_agent", "stream": False, "hide": True},
    "react_two_turns_tool": {"factory": "create_react_agent", "stream": False},
    "two_tools_and_a_failure": {"factory": "create_agent", "stream": False, "multi": True},
    "two_turns_tool_unnamed": {"factory": "create_agent", "stream": False, "name": None},
}
GRAPH_DEFAULT_NAME = "LangGraph"
"""The name LangGraph gives a compiled graph the app did not name (``StateGraph.compile``)."""


def make_tool(multi: bool) -> Any:
    """The ``get_weather`` tool: LangChain's ``@tool``, returning the weather as JSON text."""
    from langchain_core.tools import tool

    fn = get_weather_or_fail if multi else get_weather

    @tool(TOOL_NAME)
    def weather_tool(city: str) -> str:
        """Current weather for a city."""
        return json.dumps(fn(city))

    return weather_tool


def tool_error_middleware() -> Any:
    """A ``wrap_tool_call`` middleware that reports a failing tool to the model as an error
    ``ToolMessage`` whose content is the exception text (LangChain's documented pattern)."""
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.messages import ToolMessage

    @wrap_tool_call
    def report_tool_errors(request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except WeatherServiceError as exc:
            return ToolMessage(content=str(exc), tool_call_id=request.tool_call["id"],
                               name=request.tool_call["name"], status="error")

    return report_tool_errors


def make_agent(spec: dict[str, Any], base_url: str) -> Any:
    """The agent graph the scenario names (always with an InMemorySaver checkpointer)."""
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    model = ChatOpenAI(model=MODEL, api_key="x", base_url=base_url, max_retries=0)
    tools = [make_tool(bool(spec.get("multi")))]
    if spec["factory"] == "create_react_agent":
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, tools, prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                                  name=AGENT_NAME)
    from langchain.agents import create_agent

    middleware = [tool_error_middleware()] if spec.get("multi") else []
    return create_agent(model, tools, system_prompt=SYSTEM_PROMPT, checkpointer=InMemorySaver(),
                        name=spec.get("name", AGENT_NAME), middleware=middleware)


def request_context(agent: Any) -> dict[str, Any]:
    """The run metadata of every invocation: what the agent factory attached to the compiled
    graph (``create_agent``: ``ls_integration``, ``lc_agent_name`` = its name), the
    ``ls_integration: langgraph`` that LangGraph's Pregel adds when the graph has none
    (``langgraph/pregel/main.py``), and the ``thread_id`` of the app's ``configurable`` (LangGraph
    copies configurable values into the metadata)."""
    graph_metadata = dict((agent.config or {}).get("metadata") or {})
    return {"ls_integration": "langgraph", **graph_metadata, "thread_id": CONVERSATION_ID}


def turn_from_messages(user_text: str, new: list[Any], prior: list[Turn]) -> Turn:
    """A ``Turn`` from the messages this turn added to the thread (what the app received)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    assert isinstance(new[0], HumanMessage) and new[0].content == user_text, new[0]
    turn = Turn(user_text=user_text, history=[m for t in prior for m in t.remembered_after()])
    by_id: dict[str, ToolCallRecord] = {}
    step: tuple[str | None, list[ToolCallRecord]] | None = None
    for message in new[1:]:
        if isinstance(message, AIMessage) and message.tool_calls:
            if step is not None:
                turn.add_tool_step(*step)
            calls = [ToolCallRecord(c["id"], c["name"], c["args"]) for c in message.tool_calls]
            by_id.update((c.tool_call_id, c) for c in calls)
            step = (message.content or None, calls)  # type: ignore[assignment]
        elif isinstance(message, ToolMessage):
            record = by_id[message.tool_call_id]
            if message.status == "error":
                # The checkpointer keeps the ToolMessage with status="error" and resends it as
                # such (the chat-completions wire drops the mark, LangChain's own record of the
                # model input, input.value, keeps it): a failed call in the history too.
                record.error, record.error_in_history = str(message.content), "output-error"
            else:
                record.result, record.has_result = json.loads(str(message.content)), True
        elif isinstance(message, AIMessage):
            if step is not None:
                turn.add_tool_step(*step)
                step = None
            turn.final_text = str(message.content)
    assert step is None, "the turn ended on a tool call"
    return turn


def run_turns(agent: Any, users: tuple[str, ...], stream: bool) -> list[Turn]:
    """One graph invocation per user turn on the same thread; only the new message is sent."""
    from langchain_core.messages import AIMessageChunk

    config = {"configurable": {"thread_id": CONVERSATION_ID}}
    turns: list[Turn] = []
    seen = 0
    for user_text in users:
        graph_input = {"messages": [{"role": "user", "content": user_text}]}
        if stream:
            chunks = 0
            for chunk, _meta in agent.stream(graph_input, config, stream_mode="messages"):
                chunks += isinstance(chunk, AIMessageChunk)
            assert chunks > 1, "the model did not stream"
        else:
            agent.invoke(graph_input, config)
        thread = agent.get_state(config).values["messages"]
        turns.append(turn_from_messages(user_text, thread[seen:], turns))
        seen = len(thread)
    return turns


def check_wire(sent: list[dict[str, Any]], turns: list[Turn], stream: bool) -> None:
    """What the fake received: the system prompt first in every call, each turn's first call
    carries the checkpointed history (the app sent only the new message)."""
    assert all(r["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT} for r in sent), sent
    assert all(bool(r.get("stream")) == stream for r in sent), [r.get("stream") for r in sent]
    calls_per_turn = [1 + len(t.steps) for t in turns]
    firsts = [sum(calls_per_turn[:i]) for i in range(len(turns))]
    for turn, index in zip(turns, firsts):
        wire = sent[index]["messages"]
        assert wire[-1] == {"role": "user", "content": turn.user_text}, wire[-1]
        assert len(wire) - 2 == len([m for m in turn.history if m["role"] == "user"]) + sum(
            1 + len(m.get("toolCalls", [])) for m in turn.history if m["role"] == "assistant"
        ), wire  # system + history (assistant turns + one tool message per call) + new input


def notes_for(name: str, spec: dict[str, Any]) -> str:
    """The expectation's notes: what the app did and what the capture shows."""
    factory = ("langchain.agents.create_agent(system_prompt=...)" if spec["factory"] == "create_agent"
               else "langgraph.prebuilt.create_react_agent(prompt=...) (deprecated since LangGraph 1.0)")
    named = ("not named (LangGraph calls it 'LangGraph')" if "name" in spec
             else "named weather-agent")
    root = ("CHAIN span `LangGraph`" if "name" in spec
            else "AGENT span `weather-agent` (the compiled graph; AGENT because its name contains "
                 "'agent')")
    notes = (
        f"{factory} {named}, ChatOpenAI gpt-4o-mini against the fake chat-completions "
        "server, @tool get_weather returning JSON text, InMemorySaver checkpointer, "
        "configurable.thread_id=conv-42; each turn is one graph invocation sending only its new "
        "user message, the checkpointer supplies the history (checked on the requests the fake "
        "received). One trace per invocation: root "
        f"{root} whose input.value is the graph input "
        "{messages:[new user message]} and output.value the whole thread state as LangChain "
        "serialised messages; CHAIN spans per graph node; LLM `ChatOpenAI` spans with the full "
        "per-call llm.input_messages (system + history + new) and llm.output_messages; TOOL "
        "`get_weather` spans. session.id = the thread_id (LangGraph copies configurable into "
        "the run metadata); the root's metadata = thread_id + what the agent factory and "
        "LangGraph attach to every run (ls_integration, lc_agent_name), the requestContext. "
        "One run per turn, entityName = the name the app gave the agent."
    )
    if spec["factory"] == "create_react_agent":
        notes += (" The model node of create_react_agent is called 'agent', so it is an AGENT "
                  "span too (nested under the root, same thread): it is a step, not a run.")
    if spec.get("stream"):
        notes += " Every turn is agent.stream(stream_mode='messages'); the fake streams (SSE)."
    if spec.get("hide"):
        notes += (" TraceConfig(hide_inputs=True, hide_outputs=True): the instrumentor replaces "
                  "input.value/output.value by __REDACTED__ and drops llm.input_messages/"
                  "llm.output_messages, so no content is captured.")
    if "name" in spec:
        notes += (" two_turns_tool_unnamed: the same agent WITHOUT name=, as LangChain's examples "
                  "write it: LangGraph names the graph 'LangGraph', so the root span is a CHAIN "
                  "`LangGraph` and NO span is an AGENT span (the model node is `model`). The app "
                  "still invoked one agent per turn: one run per root CHAIN, entityName = the "
                  "graph's name 'LangGraph' (what LangGraph and the spans call it).")
    if spec.get("multi"):
        notes += (" two_tools_and_a_failure: turn 1's first reply has two parallel calls; "
                  "Berlin's tool raises and a wrap_tool_call middleware returns "
                  "ToolMessage(status='error', content=<error text>): on the chat-completions "
                  "wire a plain tool message, in the thread (and in the LLM spans' lc-serialised "
                  "input.value, not in llm.input_messages) a ToolMessage with status='error', "
                  "so turn 2 remembers a failed call; turn 2 calls get_weather(Rome) twice in sequence.")
    return notes


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its files."""
    spec = SCENARIOS[name]
    import fake_openai
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from otlp_capture import OtlpCaptureServer

    multi = bool(spec.get("multi"))
    replies = scripted_replies_two_tools_and_a_failure(fake_openai) if multi else scripted_replies(fake_openai)
    users = (MULTI_TURN1_USER, MULTI_TURN2_USER) if multi else (TURN1_USER, TURN2_USER)
    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(replies) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        config = TraceConfig(hide_inputs=True, hide_outputs=True) if spec.get("hide") else TraceConfig()
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, config=config)
        agent = make_agent(spec, provider.base_url)
        context = request_context(agent)
        turns = run_turns(agent, users, bool(spec["stream"]))
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        assert all(r.path == "/v1/chat/completions" for r in provider.requests), provider.requests
        sent = [r.body for r in provider.requests]
    check_wire(sent, turns, bool(spec["stream"]))
    if not multi:
        assert turns[0].intermediate_text == LOOKUP_TEXT, turns[0]
    write_requests(HERE, name, sent)
    if spec.get("hide"):  # nothing of the content may be asserted (golden.json: notCompared)
        runs = [{"convention": "openinference", "entityName": AGENT_NAME, "contentCaptured": False,
                 "conversationId": CONVERSATION_ID, "requestContext": context} for _ in turns]
    else:
        entity = spec.get("name", AGENT_NAME) or GRAPH_DEFAULT_NAME
        runs = [agent_run_expectation(t, convention="openinference", entity_name=entity,
                                      extra={"conversationId": CONVERSATION_ID,
                                             "requestContext": context}) for t in turns]
    lib_version = ", ".join(f"{p} {version(p)}" for p in (
        "langgraph", "langchain", "langchain-core", "langchain-openai",
        "openinference-instrumentation-langchain"))
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version,
                   convention="openinference", notes=notes_for(name, spec), runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
