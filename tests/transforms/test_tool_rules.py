"""The builder's tool rules on hand-built span sets, where every capture is too simple to tell a
right rule from a wrong one: failed tools (an errored tool span, Anthropic `is_error`, AI SDK
`output.type: error-*`), several calls of one tool without call ids, and a call recorded by two
libraries whose inner record was cut by a length limit."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._runs import one_run
from tests.transforms._spans import new_span_id, span
from transforms.types import Span

SYSTEM = [{"role": "system", "parts": [{"type": "text", "content": "You are a weather bot."}]}]
ASK = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Berlin?"}]}


def _chat(root: str, start: int, inp: list[dict[str, Any]], out: list[dict[str, Any]],
          **attrs: Any) -> Span:
    return span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                "gen_ai.input.messages": json.dumps(inp),
                                "gen_ai.output.messages": json.dumps(out), **attrs},
                parent=root, start=start, end=start + 50, kind="CLIENT")


def _agent(children: list[Span], root: str, end: int = 10_000) -> list[Span]:
    return [span("invoke_agent weather-agent", {"gen_ai.operation.name": "invoke_agent",
                                                "gen_ai.agent.name": "weather-agent"},
                 span_id=root, start=0, end=end), *children]


def _invocations(run: ScorerRun) -> list[tuple[str, str, Any, Any, str | None]]:
    assert len(run.output) == 1
    return [(t.tool_name, t.state, t.args, t.result, t.error_text)
            for t in run.output[0].tool_invocations]


def _two_calls() -> dict[str, Any]:
    return {"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "call_p", "name": "get_weather",
         "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "call_b", "name": "get_weather",
         "arguments": {"city": "Berlin"}}]}


def _final(text: str = "Paris: rain; Berlin: unavailable.") -> list[dict[str, Any]]:
    return [{"role": "assistant", "finish_reason": "stop",
             "parts": [{"type": "text", "content": text}]}]


# --------------------------------------------------------------------------- failed tools

def test_an_errored_tool_span_is_an_output_error_even_when_the_app_sent_its_text_back() -> None:
    # Chat completions has no error flag: the app sends the error text as a plain tool
    # message. Only the tool span's status says the call failed; its text is no result.
    root = new_span_id()
    results = {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "call_p", "response": {"temp_c": 14}},
        {"type": "tool_call_response", "id": "call_b", "response": "service down"}]}
    spans = _agent([
        _chat(root, 10, SYSTEM + [ASK], [_two_calls()]),
        span("execute_tool get_weather", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_p", "gen_ai.tool.call.arguments": '{"city":"Paris"}',
            "gen_ai.tool.call.result": '{"temp_c":14}'}, parent=root, start=100, end=110),
        span("execute_tool get_weather", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_b", "gen_ai.tool.call.arguments": '{"city":"Berlin"}',
            "error.type": "WeatherServiceError"}, parent=root, start=111, end=120,
            status="ERROR"),
        _chat(root, 200, SYSTEM + [ASK, _two_calls(), results], _final()),
    ], root)
    spans[3].status_message = "service down"
    assert _invocations(one_run(spans)) == [
        ("get_weather", "result", {"city": "Paris"}, {"temp_c": 14}, None),
        ("get_weather", "output-error", {"city": "Berlin"}, None, "service down"),
    ]


def _fed_back(result_part: dict[str, Any]) -> list[tuple[str, str, Any, Any, str | None]]:
    root = new_span_id()
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "toolu_b",
                                           "name": "get_weather", "arguments": {"city": "B"}}]}
    spans = _agent([
        _chat(root, 10, SYSTEM + [ASK], [call]),
        _chat(root, 200, SYSTEM + [ASK, call, {"role": "user", "parts": [result_part]}],
              _final()),
    ], root)
    return _invocations(one_run(spans))


def test_an_anthropic_tool_result_with_is_error_is_an_output_error() -> None:
    got = _fed_back({"type": "tool_result", "tool_use_id": "toolu_b", "is_error": True,
                     "content": [{"type": "text", "text": "unknown city: B"}]})
    assert got == [("get_weather", "output-error", {"city": "B"}, None, "unknown city: B")]


def test_an_ai_sdk_error_output_is_an_output_error() -> None:
    got = _fed_back({"type": "tool-result", "toolCallId": "toolu_b", "toolName": "get_weather",
                     "output": {"type": "error-text", "value": "unknown city: B"}})
    assert got == [("get_weather", "output-error", {"city": "B"}, None, "unknown city: B")]


def test_a_successful_fed_back_result_stays_a_result() -> None:
    got = _fed_back({"type": "tool_result", "tool_use_id": "toolu_b",
                     "content": [{"type": "text", "text": '{"temp_c": 9}'}]})
    assert got == [("get_weather", "result", {"city": "B"}, {"temp_c": 9}, None)]


# --------------------------------------------------------------------------- calls without ids

def _no_id_calls() -> dict[str, Any]:
    # get_time, then get_weather twice: results must go to a waiting call OF THE SAME NAME,
    # the first one; "any waiting call" would give the first weather result to get_time.
    return {"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "name": "get_time", "arguments": {"tz": "CET"}},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Berlin"}}]}


def test_tool_spans_without_call_ids_go_to_the_first_waiting_call_of_their_name() -> None:
    root = new_span_id()

    def tool(name: str, start: int, args: str, result: str) -> Span:
        return span(f"execute_tool {name}", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result},
            parent=root, start=start, end=start + 5)

    spans = _agent([
        _chat(root, 10, SYSTEM + [ASK], [_no_id_calls()]),
        tool("get_weather", 100, '{"city":"Paris"}', '{"temp_c":14}'),
        tool("get_time", 110, '{"tz":"CET"}', '"12:00"'),
        tool("get_weather", 120, '{"city":"Berlin"}', '{"temp_c":9}'),
        _chat(root, 200, SYSTEM + [ASK], _final()),
    ], root)
    assert _invocations(one_run(spans)) == [
        ("get_time", "result", {"tz": "CET"}, "12:00", None),
        ("get_weather", "result", {"city": "Paris"}, {"temp_c": 14}, None),
        ("get_weather", "result", {"city": "Berlin"}, {"temp_c": 9}, None),
    ]


def test_remembered_results_without_call_ids_go_to_the_first_waiting_call_of_their_name() -> None:
    # History resent on turn 2 (OpenLLMetry's gen_ai.tool.message has no id): results carry
    # only the tool name, in an order that differs from the calls'.
    root = new_span_id()
    results = [{"role": "tool", "parts": [{"type": "tool_call_response", "name": n,
                                          "response": r}]}
               for n, r in (("get_weather", {"temp_c": 14}), ("get_time", "12:00"),
                            ("get_weather", {"temp_c": 9}))]
    history = [ASK, _no_id_calls(), *results,
               {"role": "assistant", "parts": [{"type": "text", "content": "Noon; 14 and 9."}]}]
    follow_up = {"role": "user", "parts": [{"type": "text", "content": "Umbrella?"}]}
    spans = _agent([_chat(root, 10, SYSTEM + history + [follow_up], _final("Yes."))], root)
    run = one_run(spans)
    calls = [m for m in run.input.remembered_messages if m.tool_invocations]
    assert len(calls) == 1
    assert [(t.tool_name, t.args, t.result) for t in calls[0].tool_invocations] == [
        ("get_time", {"tz": "CET"}, "12:00"),
        ("get_weather", {"city": "Paris"}, {"temp_c": 14}),
        ("get_weather", {"city": "Berlin"}, {"temp_c": 9}),
    ]


# --------------------------------------------------------------------------- nested records

def test_a_call_recorded_twice_keeps_the_inner_records_truncated_flag() -> None:
    # OpenInference's LLM span around the Anthropic SDK's own span: one call. The inner
    # record's messages were cut by a length limit; the merged call (and the run) say so.
    outer, inner = new_span_id(), new_span_id()
    cut = json.dumps(SYSTEM + [ASK])[:40]
    spans = [
        span("beta.messages.create", {"openinference.span.kind": "LLM",
                                      "llm.model_name": "claude",
                                      "llm.output_messages.0.message.role": "assistant",
                                      "llm.output_messages.0.message.content": "Rain."},
             span_id=outer, start=0, end=1000, kind="CLIENT"),
        span("anthropic.messages.create", {"gen_ai.operation.name": "chat",
                                           "gen_ai.request.model": "claude",
                                           "gen_ai.input.messages": cut},
             span_id=inner, parent=outer, start=10, end=900, kind="CLIENT",
             scope="com.anthropic.sdk.python"),
    ]
    run = one_run(spans)
    assert run.target is not None
    assert run.target.truncated is True
