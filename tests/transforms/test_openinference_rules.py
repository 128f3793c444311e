"""OpenInference rules for agent frameworks traced by openinference-instrumentation-langchain, on
hand-built span sets shaped like tests/testdata/captures/langgraph-openinference/: a graph node
the instrumentation marks AGENT is a step, an unnamed graph (a root CHAIN) is the invocation,
a tool span's call id comes from the ToolMessage it returned, a failed tool's error text is its
exception's message."""

from __future__ import annotations

import json
from typing import Any

from tests.transforms._runs import one_trace_runs
from tests.transforms._spans import new_span_id, span
from transforms.types import Span, SpanEvent

SCOPE = "openinference.instrumentation.langchain"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is 14°C and raining in Paris."


def _node_meta(node: str) -> str:
    return json.dumps({"thread_id": "conv-42", "langgraph_step": 1, "langgraph_node": node})


def _llm(parent: str, start: int, out: dict[str, Any], *more_in: dict[str, Any]) -> Span:
    inp = [{"role": "system", "content": "You are a weather bot."},
           {"role": "user", "content": QUESTION}, *more_in]
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                             "metadata": _node_meta("model")}
    for i, m in enumerate(inp):
        for k, v in m.items():
            attrs[f"llm.input_messages.{i}.message.{k}"] = v
    for k, v in out.items():
        attrs[f"llm.output_messages.0.message.{k}"] = v
    return span("ChatOpenAI", attrs, parent=parent, start=start, end=start + 50, scope=SCOPE)


def _call(cid: str, city: str) -> dict[str, Any]:
    return {"role": "assistant", "tool_calls.0.tool_call.id": cid,
            "tool_calls.0.tool_call.function.name": "get_weather",
            "tool_calls.0.tool_call.function.arguments": json.dumps({"city": city})}


def _graph(kind: str, name: str, root: str, children: list[Span]) -> list[Span]:
    return [span(name, {"openinference.span.kind": kind, "session.id": "conv-42",
                        "input.value": json.dumps({"messages": [{"role": "user",
                                                                 "content": QUESTION}]}),
                        "input.mime_type": "application/json"},
                 span_id=root, start=0, end=10_000, scope=SCOPE), *children]


def test_a_graph_node_marked_agent_is_a_step_of_the_graphs_run() -> None:
    root, node1, node2 = new_span_id(), new_span_id(), new_span_id()
    # create_react_agent's model node is called `agent`: the instrumentation marks it AGENT.
    runs = one_trace_runs(_graph("AGENT", "weather-agent", root, [
        span("agent", {"openinference.span.kind": "AGENT", "metadata": _node_meta("agent")},
             span_id=node1, parent=root, start=100, end=200, scope=SCOPE),
        _llm(node1, 110, _call("call_1", "Paris")),
        span("agent", {"openinference.span.kind": "AGENT", "metadata": _node_meta("agent")},
             span_id=node2, parent=root, start=300, end=400, scope=SCOPE),
        _llm(node2, 310, {"role": "assistant", "content": ANSWER}, _call("call_1", "Paris"),
             {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 14}'}),
    ]))
    assert [r.target.entity_name for r in runs] == ["weather-agent"]
    assert runs[0].output[0].text == ANSWER
    [call] = runs[0].output[0].tool_invocations
    assert (call.tool_call_id, call.result) == ("call_1", {"temp_c": 14})


def test_an_unnamed_graph_a_root_chain_is_one_run() -> None:
    root, node = new_span_id(), new_span_id()
    runs = one_trace_runs(_graph("CHAIN", "LangGraph", root, [
        span("model", {"openinference.span.kind": "CHAIN", "metadata": _node_meta("model")},
             span_id=node, parent=root, start=100, end=200, scope=SCOPE),
        _llm(node, 110, {"role": "assistant", "content": ANSWER}),
    ]))
    [run] = runs
    assert (run.target.entity_name, run.target.convention) == ("LangGraph", "openinference")
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert run.output[0].text == ANSWER
    assert run.target.conversation_id == "conv-42"


def test_a_chain_whose_parent_is_missing_is_no_run_root() -> None:
    node = new_span_id()
    # Only a node of a graph arrived (its graph span is missing): its model call is a bare run.
    runs = one_trace_runs([
        span("model", {"openinference.span.kind": "CHAIN", "metadata": _node_meta("model")},
             span_id=node, parent="00000000000000aa", start=100, end=200, scope=SCOPE),
        _llm(node, 110, {"role": "assistant", "content": ANSWER}),
    ])
    assert [r.target.entity_name for r in runs] == ["gpt-4o-mini"]


def _tool(parent: str, start: int, city: str, **attrs: Any) -> Span:
    return span("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                                "input.value": city, **attrs},
                parent=parent, start=start, end=start + 10, scope=SCOPE,
                status="ERROR" if "output.value" not in attrs else "OK")


def _tool_message(cid: str, content: str) -> dict[str, Any]:
    return {"output.mime_type": "application/json", "output.value": json.dumps(
        {"type": "tool", "data": {"content": content, "type": "tool", "tool_call_id": cid,
                                  "status": "success"}})}


def test_a_tool_spans_call_id_is_the_one_its_tool_message_carries() -> None:
    root = new_span_id()
    both = {"role": "assistant", "tool_calls.0.tool_call.id": "call_p",
            "tool_calls.0.tool_call.function.name": "get_weather",
            "tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
            "tool_calls.1.tool_call.id": "call_b",
            "tool_calls.1.tool_call.function.name": "get_weather",
            "tool_calls.1.tool_call.function.arguments": '{"city": "Berlin"}'}
    runs = one_trace_runs(_graph("AGENT", "weather-agent", root, [
        _llm(root, 100, both),
        # Parallel tools: Berlin's span starts first; only the ToolMessage names its call.
        _tool(root, 200, "Berlin", **_tool_message("call_b", '{"temp_c": 9}')),
        _tool(root, 210, "Paris", **_tool_message("call_p", '{"temp_c": 14}')),
        _llm(root, 300, {"role": "assistant", "content": ANSWER}),
    ]))
    calls = runs[0].output[0].tool_invocations
    assert [(c.tool_call_id, c.args, c.result) for c in calls] == [
        ("call_p", {"city": "Paris"}, {"temp_c": 14}), ("call_b", {"city": "Berlin"}, {"temp_c": 9})]


def test_a_failed_tools_error_text_is_its_exceptions_message_not_the_traceback() -> None:
    root = new_span_id()
    failed = _tool(root, 200, "Berlin")
    failed.status_message = ("WeatherServiceError('service unavailable')Traceback (most recent "
                             "call last):\n  File \"tool.py\", line 3\n")
    failed.events.append(SpanEvent("exception", 210, {
        "exception.type": "WeatherServiceError", "exception.message": "service unavailable"}))
    runs = one_trace_runs(_graph("AGENT", "weather-agent", root, [
        _llm(root, 100, _call("call_b", "Berlin")), failed,
        _llm(root, 300, {"role": "assistant", "content": "Berlin is unavailable."}),
    ]))
    [call] = runs[0].output[0].tool_invocations
    assert (call.tool_call_id, call.state, call.error_text) == (
        "call_b", "output-error", "service unavailable")
