"""A LangGraph agent under openinference-instrumentation-langchain, on hand-built span sets
shaped like the real ones (tests/testdata/captures/langgraph-openinference/): the instrumentor
marks every LangChain run whose name contains "agent" as an AGENT span (the compiled graph, and
also a graph node called "agent"), every other graph or node run as CHAIN, model calls as LLM
spans (`input.value` = LangChain's serialised messages as a batch, `[[{lc: 1, ...}]]`, beside
the flattened `llm.input_messages`) and tools as TOOL spans whose `input.value` is the tool's
input string and whose `output.value` is the `ToolMessage` (with its `tool_call_id`); a
failed tool has no output, its status message is LangChain's `repr(exc)` + traceback and its
`exception` event carries the exception's message."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import RunTarget, ScorerRun
from tests.transforms._runs import all_runs
from tests.transforms._spans import new_span_id, span
from transforms.types import Span, SpanEvent

SCOPE = "openinference.instrumentation.langchain"
SYSTEM = "You are a weather bot. Answer in one short sentence."
QUESTION = "What is the weather in Paris and in Berlin?"
FOLLOW_UP = "And in Rome?"
LEAD_IN = "Let me look that up."
ANSWER = "It is 14°C and raining in Paris; the weather for Berlin is unavailable."
ANSWER2 = "It is 21°C and sunny in Rome."
PARIS = {"temp_c": 14, "conditions": "rain"}
ERROR = "weather service unavailable for Berlin"
CALLS = [("call_paris_1", {"city": "Paris"}), ("call_berlin_1", {"city": "Berlin"})]
TRACEBACK = (f"WeatherServiceError('{ERROR}')Traceback (most recent call last):\n\n\n"
             '  File "app.py", line 3, in get_weather\n    raise WeatherServiceError(TOOL_ERROR)'
             f"\n\n\nWeatherServiceError: {ERROR}")
THREAD_METADATA = {"ls_integration": "langchain_create_agent", "lc_agent_name": "weather-agent",
                   "thread_id": "conv-42"}


def _lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A LangChain message as `dumpd` serialises it (`{lc: 1, type: constructor, ...}`)."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind],
            "kwargs": kwargs}


def _history(error_status: bool = True) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Turn 1 as LangChain messages, each with its flattened `llm.input_messages` form."""
    calls = [{"name": "get_weather", "args": args, "id": cid, "type": "tool_call"}
             for cid, args in CALLS]
    flat_calls = {f"tool_calls.{k}.tool_call.{key}": value
                  for k, (cid, args) in enumerate(CALLS)
                  for key, value in (("id", cid), ("function.name", "get_weather"),
                                     ("function.arguments", json.dumps(args)))}
    return [
        (_lc("HumanMessage", content=QUESTION, type="human"),
         {"role": "user", "content": QUESTION}),
        (_lc("AIMessage", content=LEAD_IN, type="ai", tool_calls=calls),
         {"role": "assistant", "content": LEAD_IN, **flat_calls}),
        (_lc("ToolMessage", content=json.dumps(PARIS), type="tool", name="get_weather",
             tool_call_id="call_paris_1", status="success"),
         {"role": "tool", "content": json.dumps(PARIS), "tool_call_id": "call_paris_1"}),
        (_lc("ToolMessage", content=ERROR, type="tool", name="get_weather",
             tool_call_id="call_berlin_1", status="error" if error_status else "success"),
         {"role": "tool", "content": ERROR, "tool_call_id": "call_berlin_1"}),
    ]


def _llm(parent: str, start: int, messages: list[tuple[dict[str, Any], dict[str, Any]]],
         text: str, calls: list[tuple[str, dict[str, Any]]], trace_id: str) -> Span:
    """An LLM `ChatOpenAI` span: the system prompt first, then `messages`."""
    msgs = [(_lc("SystemMessage", content=SYSTEM, type="system"),
             {"role": "system", "content": SYSTEM}), *messages]
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "input.value": json.dumps({"messages": [[lc for lc, _ in msgs]]}),
        "input.mime_type": "application/json",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": text,
        "llm.finish_reason": "tool_calls" if calls else "stop",
        "session.id": "conv-42",
    }
    for i, (_, flat) in enumerate(msgs):
        attrs.update({f"llm.input_messages.{i}.message.{k}": v for k, v in flat.items()})
    for k, (cid, args) in enumerate(calls):
        key = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
        attrs.update({f"{key}.id": cid, f"{key}.function.name": "get_weather",
                      f"{key}.function.arguments": json.dumps(args)})
    return span("ChatOpenAI", attrs, parent=parent, start=start, end=start + 50,
                trace_id=trace_id, scope=SCOPE, status="OK")


def _node(name: str, parent: str, start: int, trace_id: str, *, kind: str = "CHAIN",
          first_message: str = QUESTION) -> Span:
    """A graph node span. The instrumentor also writes the node input's FIRST state message as
    `llm.input_messages.0` on it (turn 2's node says turn 1's question): never model input."""
    return span(name, {"openinference.span.kind": kind,
                       "llm.input_messages.0.message.role": "user",
                       "llm.input_messages.0.message.content": first_message,
                       "metadata": json.dumps({**THREAD_METADATA, "langgraph_node": name,
                                               "langgraph_step": 1})},
                span_id=new_span_id(), parent=parent, start=start, end=start + 90,
                trace_id=trace_id, scope=SCOPE, status="OK")


def _tool(parent: str, start: int, city: str, call_id: str | None, trace_id: str) -> Span:
    """A TOOL span: input.value is the tool's input string; a failed one has no output."""
    attrs: dict[str, Any] = {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                             "input.value": city}
    if call_id is not None:
        attrs["output.value"] = json.dumps({"type": "tool", "data": {
            "content": json.dumps(PARIS), "type": "tool", "name": "get_weather",
            "tool_call_id": call_id, "status": "success"}})
        attrs["output.mime_type"] = "application/json"
        return span("get_weather", attrs, parent=parent, start=start, end=start + 5,
                    trace_id=trace_id, scope=SCOPE, status="OK")
    failed = span("get_weather", attrs, parent=parent, start=start, end=start + 5,
                  trace_id=trace_id, scope=SCOPE, status="ERROR")
    failed.status_message = TRACEBACK  # LangChain's run.error: repr(exc) + the traceback
    failed.events.append(SpanEvent(name="exception", time_unix_nano=start + 4, attributes={
        "exception.type": "_common.WeatherServiceError", "exception.message": ERROR,
        "exception.stacktrace": TRACEBACK[TRACEBACK.index("Traceback"):],
        "exception.escaped": "False"}))
    return failed


def _root(name: str, kind: str, user_text: str, root: str, t0: int, trace_id: str) -> Span:
    metadata = {k: v for k, v in THREAD_METADATA.items() if kind == "AGENT" or k != "lc_agent_name"}
    return span(name, {"openinference.span.kind": kind, "session.id": "conv-42",
                       "input.value": json.dumps({"messages": [{"role": "user",
                                                                "content": user_text}]}),
                       "input.mime_type": "application/json",
                       "metadata": json.dumps(metadata)},
                span_id=root, start=t0, end=t0 + 10_000, trace_id=trace_id, scope=SCOPE,
                status="OK")


def _turn1(trace_id: str = "1" * 32, *, name: str = "weather-agent", root_kind: str = "AGENT",
           model_node: str = "model", berlin_first: bool = True) -> list[Span]:
    """Turn 1: the model asks for Paris and Berlin at once; the two `tools` node runs execute in
    parallel (Berlin's span may start first); Berlin fails; the model answers."""
    root = new_span_id()
    kind = "AGENT" if model_node == "agent" else "CHAIN"
    m1 = _node(model_node, root, 100, trace_id, kind=kind)
    t_paris, t_berlin = (_node("tools", root, 300, trace_id), _node("tools", root, 290, trace_id))
    m2 = _node(model_node, root, 500, trace_id, kind=kind)
    hist = _history()
    return [
        _root(name, root_kind, QUESTION, root, 0, trace_id),
        m1, _llm(m1.span_id, 110, hist[:1], LEAD_IN, CALLS, trace_id),
        t_paris, _tool(t_paris.span_id, 310, "Paris", "call_paris_1", trace_id),
        t_berlin, _tool(t_berlin.span_id, 300 if berlin_first else 320, "Berlin", None, trace_id),
        m2, _llm(m2.span_id, 510, hist, ANSWER, [], trace_id),
    ]


def _turn2(trace_id: str = "2" * 32) -> list[Span]:
    """Turn 2: only the new message is sent; the checkpointer gives the model call turn 1."""
    root = new_span_id()
    m1 = _node("model", root, 100_100, trace_id)
    history = [*_history(), (_lc("AIMessage", content=ANSWER, type="ai"),
                             {"role": "assistant", "content": ANSWER}),
               (_lc("HumanMessage", content=FOLLOW_UP, type="human"),
                {"role": "user", "content": FOLLOW_UP})]
    return [_root("weather-agent", "AGENT", FOLLOW_UP, root, 100_000, trace_id),
            m1, _llm(m1.span_id, 100_110, history, ANSWER2, [], trace_id)]


def _target(run: ScorerRun) -> RunTarget:
    assert run.target is not None
    return run.target


def _tools(run: ScorerRun) -> list[tuple[str, Any, str, Any, str | None]]:
    return [(t.tool_call_id, t.args, t.state, t.result, t.error_text)
            for m in run.output for t in m.tool_invocations]


def test_one_run_per_graph_invocation_with_instructions_from_the_model_call() -> None:
    [run] = all_runs(_turn1())
    assert _target(run).entity_name == "weather-agent"
    assert _target(run).conversation_id == "conv-42"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert run.input.remembered_messages == []
    assert run.output[0].text == ANSWER


def test_a_graph_node_the_instrumentor_marks_as_agent_is_a_step_not_a_run() -> None:
    # create_react_agent's model node is called "agent": an AGENT span of its own name under
    # the graph's AGENT span, once per model round.
    [run] = all_runs(_turn1(model_node="agent"))
    assert _target(run).entity_name == "weather-agent"
    assert run.output[0].text == ANSWER
    assert [t[0] for t in _tools(run)] == ["call_paris_1", "call_berlin_1"]


def test_an_unnamed_graph_without_any_agent_span_is_one_run_per_invocation() -> None:
    # create_agent without name=: the root is a CHAIN called "LangGraph", no AGENT span at all.
    [run] = all_runs(_turn1(name="LangGraph", root_kind="CHAIN"))
    assert _target(run).entity_name == "LangGraph"
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert run.output[0].text == ANSWER
    assert len(_tools(run)) == 2


def test_parallel_tools_join_by_the_tool_message_id_and_a_failure_keeps_the_reported_error() -> None:
    for berlin_first in (True, False):
        [run] = all_runs(_turn1(berlin_first=berlin_first))
        assert _tools(run) == [
            ("call_paris_1", {"city": "Paris"}, "result", PARIS, None),
            # The exception's message (the span's `exception` event; the ToolMessage the app
            # sent says the same), not LangChain's repr + traceback in the span status.
            ("call_berlin_1", {"city": "Berlin"}, "output-error", None, ERROR),
        ], berlin_first


def test_the_checkpointed_history_keeps_a_failed_tool_message() -> None:
    [run] = all_runs(_turn2())
    assert [m.text for m in run.input.input_messages] == [FOLLOW_UP]
    remembered = run.input.remembered_messages
    assert [(m.role, m.text) for m in remembered] == [
        ("user", QUESTION), ("assistant", LEAD_IN), ("assistant", ANSWER)]
    assert [(t.tool_call_id, t.state, t.result, t.error_text)
            for t in remembered[1].tool_invocations] == [
        ("call_paris_1", "result", PARIS, None),
        # LangChain's serialised ToolMessage keeps status="error" (the flattened
        # llm.input_messages and the chat-completions wire drop it).
        ("call_berlin_1", "output-error", None, ERROR)]


def test_request_context_is_the_graph_runs_metadata_not_its_nodes() -> None:
    [run] = all_runs(_turn2())
    # The invocation's metadata (the app's thread_id, what create_agent attaches to the graph);
    # the nodes' langgraph_node / langgraph_step are per-step bookkeeping, not the run's.
    assert run.request_context == THREAD_METADATA
