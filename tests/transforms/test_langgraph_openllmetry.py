"""OpenLLMetry's LangChain/LangGraph instrumentation on hand-built spans: its LangGraph
`invoke_agent` span (plain GenAI attributes plus the graph's shape) is OpenLLMetry's, and its
tool spans record LangChain's callback arguments (`{"input_str", "inputs", "kwargs":
{"tool_call_id"}}` in, `{"output", "kwargs"}` out), read as the call's id, arguments and result.
The shapes are those of tests/testdata/captures/langgraph-openllmetry."""

from __future__ import annotations

import json
from typing import Any

from tests.transforms._runs import one_run
from tests.transforms._spans import new_span_id, span
from transforms import detect_conventions
from transforms.types import Span

SYSTEM = [{"type": "text", "content": "You are a weather bot."}]
ASK = {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}
CALL = {"role": "assistant", "parts": [
    {"type": "text", "content": "Let me look that up."},
    {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call"}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                     "response": '{"temp_c": 14, "conditions": "rain"}'}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "It is 14°C in Paris."}],
          "finish_reason": "stop"}
GRAPH = {"gen_ai.provider.name": "langgraph", "gen_ai.operation.name": "invoke_agent",
         "gen_ai.agent.name": "weather-agent", "gen_ai.conversation.id": "conv-42",
         "gen_ai.workflow.nodes": ["model", "tools"],
         "gen_ai.workflow.edges": ["model -> tools", "tools -> model"]}


def _node(name: str, parent: str, start: int) -> tuple[str, Span]:
    sid = new_span_id()
    return sid, span(f"execute_task {name}", {
        "traceloop.span.kind": "task", "traceloop.entity.name": name,
        "traceloop.workflow.name": "weather-agent", "gen_ai.operation.name": "execute_task"},
        span_id=sid, parent=parent, start=start, end=start + 90)


def _chat(parent: str, start: int, inp: list[Any], out: list[Any]) -> Span:
    return span("ChatOpenAI.chat", {
        "traceloop.workflow.name": "weather-agent", "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.system_instructions": json.dumps(SYSTEM),
        "gen_ai.input.messages": json.dumps(inp), "gen_ai.output.messages": json.dumps(out),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10},
        parent=parent, start=start, end=start + 50, kind="CLIENT")


def _tool(parent: str, start: int, output: Any) -> Span:
    """LangChain's on_tool_start / on_tool_end arguments, as the instrumentation dumps them."""
    tool_in = {"input_str": "{'city': 'Paris'}", "tags": ["seq:step:1"],
               "metadata": {"thread_id": "conv-42", "langgraph_node": "tools"},
               "inputs": {"city": "Paris"},
               "kwargs": {"color": "green", "name": None, "tool_call_id": "call_1"}}
    return span("execute_tool get_weather", {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather",
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "traceloop.entity.input": json.dumps(tool_in),
        "traceloop.entity.output": json.dumps({"output": output,
                                               "kwargs": {"name": "get_weather"}})},
        parent=parent, start=start, end=start + 20)


def _invocation(graph_attrs: dict[str, Any], tool_output: Any) -> list[Span]:
    """invoke_agent (graph) > weather-agent.workflow > model node > chat, tools node > tool,
    model node > chat: one LangGraph agent invocation."""
    graph, workflow = new_span_id(), new_span_id()
    m1, model1 = _node("model", workflow, 100)
    t1, tools = _node("tools", workflow, 200)
    m2, model2 = _node("model", workflow, 300)
    return [
        span("invoke_agent weather-agent", graph_attrs, span_id=graph, start=0, end=1_000),
        span("weather-agent.workflow", {
            "traceloop.span.kind": "workflow", "traceloop.entity.name": "weather-agent",
            "traceloop.workflow.name": "weather-agent", "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather-agent",
            "traceloop.association.properties.thread_id": "conv-42"},
            span_id=workflow, parent=graph, start=10, end=990),
        model1, _chat(m1, 110, [ASK], [CALL]),
        tools, _tool(t1, 210, tool_output),
        model2, _chat(m2, 310, [ASK, CALL, RESULT], [ANSWER]),
    ]


def test_a_langgraph_invocation_is_one_openllmetry_run() -> None:
    run = one_run(_invocation(GRAPH, '{"temp_c": 14, "conditions": "rain"}'))
    assert run.target is not None
    assert (run.target.convention, run.target.entity_name, run.target.conversation_id) == (
        "openllmetry", "weather-agent", "conv-42")
    assert [m.text for m in run.input.input_messages] == ["What is the weather in Paris?"]
    assert [m.text for m in run.output] == ["It is 14°C in Paris."]


def test_the_tool_span_gives_the_call_id_arguments_and_unwrapped_result() -> None:
    run = one_run(_invocation(GRAPH, '{"temp_c": 14, "conditions": "rain"}'))
    [inv] = run.output[0].tool_invocations
    assert (inv.tool_call_id, inv.tool_name, inv.args, inv.result, inv.state) == (
        "call_1", "get_weather", {"city": "Paris"}, {"temp_c": 14, "conditions": "rain"},
        "result")


def test_only_the_graph_shape_marks_an_invoke_agent_span_openllmetry() -> None:
    assert detect_conventions(span("invoke_agent weather-agent", GRAPH))[0] == "openllmetry"
    plain = {k: v for k, v in GRAPH.items() if not k.startswith("gen_ai.workflow.")}
    assert detect_conventions(span("invoke_agent weather-agent", plain)) == ["genai"]
    # Another library's workflow name (Google ADK) is not OpenLLMetry's graph shape.
    adk = {**plain, "gen_ai.workflow.name": "weather-flow"}
    assert "openllmetry" not in detect_conventions(span("invoke_agent weather-agent", adk))
