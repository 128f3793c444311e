"""Google ADK's own tracing (scope `gcp.vertex.agent`), on hand-built span sets shaped like the
real ones (tests/testdata/captures/google-adk/): the legacy schema's `call_llm` request and
response (Google GenAI `Content` objects), its `{}` and `<elided>` placeholders, the schema 2
streamed output that lists every chunk, and the workflow span around the agent."""

from __future__ import annotations

import json
from typing import Any

from tests.transforms._runs import all_runs, calls_of
from tests.transforms._spans import TRACE, new_span_id, span
from transforms.types import LogEvent, Span, SpanEvent

SCOPE = "gcp.vertex.agent"
SYSTEM = 'You are a weather bot.\n\nYou are an agent. Your internal name is "weather_agent".'
QUESTION = "What is the weather in Paris?"
LEAD_IN = "Let me look that up."
ANSWER = "It is 14°C and raining in Paris."
PARIS = {"temp_c": 14, "conditions": "rain"}
USAGE = {"gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10}

USER = {"role": "user", "parts": [{"text": QUESTION}]}
CALL = {"role": "model", "parts": [
    {"text": LEAD_IN},
    {"function_call": {"id": "call_paris_1", "name": "get_weather", "args": {"city": "Paris"}}}]}
RESULT = {"role": "user", "parts": [
    {"function_response": {"id": "call_paris_1", "name": "get_weather", "response": PARIS}}]}


def _request(contents: list[dict[str, Any]]) -> str:
    return json.dumps({"model": "openai/gpt-4o-mini", "contents": contents,
                       "config": {"system_instruction": SYSTEM,
                                  "labels": {"adk_agent_name": "weather_agent"}}})


def _response(content: dict[str, Any]) -> str:
    return json.dumps({"model_version": "gpt-4o-mini", "content": content, "partial": False,
                       "finish_reason": "STOP"})


def _agent(root: str, children: list[Span], end: int = 10_000) -> list[Span]:
    """Schema 1's `invocation` > `invoke_agent weather_agent` around `children`."""
    top = new_span_id()
    return [
        span("invocation", {}, span_id=top, start=0, end=end, scope=SCOPE),
        span("invoke_agent weather_agent", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent",
            "gen_ai.agent.description": "", "gen_ai.conversation.id": "conv-42"},
            span_id=root, parent=top, start=1, end=end - 1, scope=SCOPE),
        *children,
    ]


def _call_llm(root: str, start: int, request: str, response: str) -> tuple[Span, Span]:
    """Schema 1's `call_llm` and the stable-semconv `generate_content` under it."""
    call = new_span_id()
    return (
        span("call_llm", {"gen_ai.system": SCOPE, "gen_ai.request.model": "openai/gpt-4o-mini",
                          "gcp.vertex.agent.session_id": "conv-42",
                          "gcp.vertex.agent.llm_request": request,
                          "gcp.vertex.agent.llm_response": response, **USAGE},
             span_id=call, parent=root, start=start, end=start + 100, scope=SCOPE),
        span("generate_content openai/gpt-4o-mini", {
            "gen_ai.system": "openai", "gen_ai.operation.name": "generate_content",
            "gen_ai.request.model": "openai/gpt-4o-mini", "gen_ai.agent.name": "weather_agent",
            **USAGE}, parent=call, start=start + 1, end=start + 99, scope=SCOPE),
    )


def _tool(root: str, start: int, args: str, response: str) -> Span:
    return span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "FunctionTool", "gen_ai.tool.call.id": "call_paris_1",
        "gcp.vertex.agent.llm_request": "{}", "gcp.vertex.agent.llm_response": "{}",
        "gcp.vertex.agent.tool_call_args": args, "gcp.vertex.agent.tool_response": response},
        parent=root, start=start, end=start + 10, scope=SCOPE)


def _elided(gc: Span, inputs: int) -> list[LogEvent]:
    """The stable-semconv log records of one `generate_content` with OTel content capture off."""
    names = ["gen_ai.system.message"] + ["gen_ai.user.message"] * inputs + ["gen_ai.choice"]
    return [LogEvent(event_name=n, trace_id=TRACE, span_id=gc.span_id,
                     time_unix_nano=gc.start_time_unix_nano + i, attributes={"gen_ai.system": "openai"},
                     body={"content": "<elided>", **({"index": 0} if n == "gen_ai.choice" else {})})
            for i, n in enumerate(names)]


def _legacy_turn(*, content: bool) -> tuple[list[Span], list[LogEvent]]:
    root = new_span_id()
    on = content
    c1, g1 = _call_llm(root, 100, _request([USER]) if on else "{}",
                       _response(CALL) if on else "{}")
    tool = _tool(root, 300, '{"city": "Paris"}' if on else "{}",
                 json.dumps(PARIS) if on else "{}")
    c2, g2 = _call_llm(root, 400, _request([USER, CALL, RESULT]) if on else "{}",
                       _response({"role": "model", "parts": [{"text": ANSWER}]}) if on else "{}")
    return _agent(root, [c1, g1, tool, c2, g2]), _elided(g1, 1) + _elided(g2, 3)


def test_legacy_call_llm_request_and_response_are_the_model_calls() -> None:
    [run] = all_runs(*_legacy_turn(content=True))
    assert run.target.entity_name == "weather_agent"
    assert run.target.convention == "genai"
    assert run.target.conversation_id == "conv-42"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [(m.role, m.text) for m in run.input.input_messages] == [("user", QUESTION)]
    [out] = run.output
    assert out.text == ANSWER
    # role `model` is the assistant; the function_call / function_response parts are the call
    # and its result, joined with the tool span.
    assert calls_of(out) == [("call_paris_1", "get_weather", {"city": "Paris"}, "result", PARIS)]
    assert [p.type for p in out.content.parts] == ["text", "tool-invocation", "text"]


def test_elided_log_records_of_a_call_whose_content_is_on_call_llm_are_no_redaction() -> None:
    [run] = all_runs(*_legacy_turn(content=True))
    assert run.target.content_captured is True


def test_legacy_placeholders_are_no_content_never_empty_texts_or_results() -> None:
    [run] = all_runs(*_legacy_turn(content=False))
    assert run.target.content_captured is False
    blob = json.dumps(run.model_dump(mode="json", by_alias=True), ensure_ascii=False)
    assert "<elided>" not in blob
    for m in run.output:
        for t in m.tool_invocations:  # ADK's `{}` stands for arguments and results not captured
            assert t.args is None and t.result is None


def _generate_content(parent: str, start: int, inputs: list[dict[str, Any]],
                      outputs: list[dict[str, Any]]) -> Span:
    """Schema 2's `generate_content` with content on the span (SPAN_ONLY)."""
    return span("generate_content openai/gpt-4o-mini", {
        "gen_ai.operation.name": "generate_content", "gen_ai.request.model": "openai/gpt-4o-mini",
        "gen_ai.agent.name": "weather_agent", "gen_ai.conversation.id": "conv-42",
        "gen_ai.provider.name": "openai", "gen_ai.response.finish_reasons": ["stop"], **USAGE,
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs)}, parent=parent, start=start,
        end=start + 100, scope=SCOPE)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chunk(text: str) -> dict[str, Any]:
    return {**_text("assistant", text), "finish_reason": ""}


def _schema2_turn(trace_id: str, tool_status: str = "UNSET") -> list[Span]:
    """`invoke_workflow` > `invoke_agent` > streamed `generate_content` (every chunk listed),
    `execute_tool`, `generate_content`."""
    top, root = new_span_id(), new_span_id()
    call = {"type": "tool_call", "id": "call_paris_1", "name": "get_weather",
            "arguments": {"city": "Paris"}}
    response = {"role": "user", "parts": [{"type": "tool_call_response", "id": "call_paris_1",
                                           "response": PARIS}]}
    first_out = [_chunk("Let me l"), _chunk("ook that up."),
                 {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_paris_1",
                                                  "name": "get_weather", "arguments": None}],
                  "finish_reason": ""},
                 {"role": "assistant", "parts": [{"type": "text", "content": LEAD_IN}, call],
                  "finish_reason": "stop"}]
    second_out = [_chunk("It is 14°C"), _chunk(" and raining in Paris."),
                  {**_text("assistant", ANSWER), "finish_reason": "stop"}]
    tool_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "FunctionTool", "gen_ai.tool.call.id": "call_paris_1",
        "gen_ai.tool.call.arguments": '{"city": "Paris"}'}
    if tool_status == "UNSET":
        tool_attrs["gen_ai.tool.call.result"] = json.dumps(PARIS)
    else:
        tool_attrs["error.type"] = "WeatherServiceError"
    tool = span("execute_tool get_weather", tool_attrs, parent=root, start=300, end=310,
                scope=SCOPE, status=tool_status)
    if tool_status == "ERROR":
        tool.status_message = "WeatherServiceError"
        tool.events.append(SpanEvent("exception", 305, {
            "exception.type": "WeatherServiceError",
            "exception.message": "weather service unavailable for Paris"}))
    spans = [
        span("invoke_workflow weather_agent", {"gen_ai.operation.name": "invoke_workflow",
                                               "gen_ai.workflow.name": "weather_agent",
                                               "gen_ai.conversation.id": "conv-42"},
             span_id=top, start=0, end=10_000, scope=SCOPE),
        span("invoke_agent weather_agent", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent",
            "gen_ai.conversation.id": "conv-42"}, span_id=root, parent=top, start=1,
            end=9_999, scope=SCOPE),
        _generate_content(root, 100, [_text("user", QUESTION)], first_out),
        tool,
        _generate_content(root, 400, [_text("user", QUESTION),
                                      {"role": "assistant", "parts": [
                                          {"type": "text", "content": LEAD_IN}, call]},
                                      response], second_out),
    ]
    for s in spans:
        s.trace_id = trace_id
    return spans


def test_one_run_per_invoke_agent_under_the_workflow_span() -> None:
    [run] = all_runs(_schema2_turn("5" * 32))
    assert run.target.entity_name == "weather_agent"
    assert run.target.conversation_id == "conv-42"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]


def test_streamed_chunks_listed_as_output_messages_are_not_output() -> None:
    [run] = all_runs(_schema2_turn("6" * 32))
    [out] = run.output
    assert out.text == ANSWER
    texts = [p.text for p in out.content.parts if p.type == "text"]  # type: ignore[union-attr]
    assert texts == [LEAD_IN, ANSWER]
    assert calls_of(out) == [("call_paris_1", "get_weather", {"city": "Paris"}, "result", PARIS)]


def test_a_failed_tool_has_the_exception_message_as_its_error() -> None:
    [run] = all_runs(_schema2_turn("7" * 32, tool_status="ERROR"))
    [inv] = run.output[0].tool_invocations
    assert inv.state == "output-error"
    assert inv.error_text == "weather service unavailable for Paris"


def test_a_tool_failure_reported_by_the_error_callback_is_an_error_with_its_text() -> None:
    # on_tool_error_callback's {"error": text} is the call's response; FunctionTool marks the
    # span ERROR with error.type TOOL_ERROR and no exception event.
    spans = _schema2_turn("8" * 32)
    tool = next(s for s in spans if s.name == "execute_tool get_weather")
    tool.status_code, tool.status_message = "ERROR", "TOOL_ERROR"
    tool.attributes["error.type"] = "TOOL_ERROR"
    tool.attributes["gen_ai.tool.call.result"] = json.dumps(
        {"error": "weather service unavailable for Paris"})
    [run] = all_runs(spans)
    [inv] = run.output[0].tool_invocations
    assert (inv.state, inv.error_text) == ("output-error", "weather service unavailable for Paris")


def test_the_merged_response_span_of_parallel_calls_is_no_tool_call() -> None:
    spans = _schema2_turn("9" * 32)
    root = next(s for s in spans if s.name.startswith("invoke_agent")).span_id
    spans.append(span("execute_tool (merged)", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)",
        "gen_ai.tool.description": "(merged tools)",
        "gen_ai.tool.call.id": "d009a466-9d35-4cbb-ba7a-8a5f942db5f2"},
        parent=root, start=312, end=320, scope=SCOPE, trace_id="9" * 32))
    [run] = all_runs(spans)
    assert [t.tool_name for t in run.output[0].tool_invocations] == ["get_weather"]


def _call_part(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


def _response_msg(cid: str, response: Any) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "tool_call_response", "id": cid,
                                       "response": response}]}


def test_a_single_turn_sub_agent_is_a_run_of_its_own_and_its_tools_stay_in_it() -> None:
    # ADK opens the sub-agent's invoke_agent beside the execute_tool span of the root's call to
    # it; the root's run has that call (with the sub-agent's answer), not the sub-agent's tools.
    t = "a" * 32
    top, root, sub = new_span_id(), new_span_id(), new_span_id()
    fc = _call_part("call_fc_1", "forecast_agent", {"request": "Paris"})
    paris = _call_part("call_paris_1", "get_weather", {"city": "Paris"})
    lead = {"role": "assistant", "parts": [{"type": "text", "content": LEAD_IN}, fc]}

    def agent(sid: str, name: str, parent: str | None, start: int, end: int) -> Span:
        return span(f"invoke_agent {name}", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
            "gen_ai.conversation.id": "conv-42"}, span_id=sid, parent=parent, start=start,
            end=end, scope=SCOPE, trace_id=t)

    def tool(parent: str, start: int, name: str, cid: str, args: Any, result: Any) -> Span:
        return span(f"execute_tool {name}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": cid, "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result)}, parent=parent, start=start,
            end=start + 5, scope=SCOPE, trace_id=t)

    spans = [
        span("invoke_workflow weather_agent", {"gen_ai.operation.name": "invoke_workflow"},
             span_id=top, start=0, end=1_000, scope=SCOPE, trace_id=t),
        agent(root, "weather_agent", top, 1, 999),
        _generate_content(root, 10, [_text("user", QUESTION)], [{**lead, "finish_reason": "stop"}]),
        tool(root, 150, "forecast_agent", "call_fc_1", {"request": "Paris"}, {"result": "14°C"}),
        agent(sub, "forecast_agent", root, 160, 400),
        _generate_content(sub, 170, [_text("user", "Paris")],
                          [{"role": "assistant", "parts": [paris], "finish_reason": "stop"}]),
        tool(sub, 280, "get_weather", "call_paris_1", {"city": "Paris"}, PARIS),
        _generate_content(sub, 290, [_text("user", "Paris"), {"role": "assistant", "parts": [paris]},
                                     _response_msg("call_paris_1", PARIS)],
                          [{**_text("assistant", "14°C"), "finish_reason": "stop"}]),
        _generate_content(root, 500, [_text("user", QUESTION), lead,
                                      _response_msg("call_fc_1", {"result": "14°C"})],
                          [{**_text("assistant", ANSWER), "finish_reason": "stop"}]),
    ]
    for s in spans:
        s.trace_id = t
    runs = sorted(all_runs(spans), key=lambda r: r.target.started_at or 0)
    assert [r.target.entity_name for r in runs] == ["weather_agent", "forecast_agent"]
    [root_out], [sub_out] = runs[0].output, runs[1].output
    assert (root_out.text, calls_of(root_out)) == (ANSWER, [
        ("call_fc_1", "forecast_agent", {"request": "Paris"}, "result", {"result": "14°C"})])
    assert (sub_out.text, calls_of(sub_out)) == ("14°C", [
        ("call_paris_1", "get_weather", {"city": "Paris"}, "result", PARIS)])
    assert [m.text for m in runs[1].input.input_messages] == ["Paris"]
