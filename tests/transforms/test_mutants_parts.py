"""Message-part shapes and JSON limits no capture exercises (found by bench/mutation.py).

Hand-built OTel GenAI spans, as in test_tool_rules: reasoning parts in each spelling the
conventions use, tool results given as content blocks, an AI SDK-like object that is a plain
tool result, Python call-argument dumps, and the JSON nesting limit at its boundary.
"""

from __future__ import annotations

from typing import Any

from tests.transforms._runs import one_run
from tests.transforms._spans import new_span_id
from tests.transforms.test_tool_rules import ASK, SYSTEM, _agent, _chat, _final
from transforms._attrs import tool_args
from transforms._json import MAX_JSON_DEPTH, parse_json_attr


def test_history_keeps_reasoning_in_every_spelling_and_drops_empty_parts() -> None:
    root = new_span_id()
    earlier = {"role": "assistant", "parts": [
        {"type": "thinking", "thinking": "Check the sky."},
        {"type": "reasoning", "reasoning": "Paris is rainy."},
        {"type": "reasoning"},
        {"type": "text", "content": {"unknown": "shape"}},
        {"type": "text", "text": "It rains."}]}
    follow_up = {"role": "user", "parts": [{"type": "text", "content": "And Berlin?"}]}
    run = one_run(_agent([_chat(root, 100, [*SYSTEM, ASK, earlier, follow_up],
                                _final("Sunny."))], root))
    remembered = run.model_dump(mode="json", by_alias=True)["input"]["rememberedMessages"]
    assert [m["role"] for m in remembered] == ["user", "assistant"]
    assert remembered[1]["content"]["parts"] == [
        {"type": "reasoning", "reasoning": "Check the sky."},
        {"type": "reasoning", "reasoning": "Paris is rainy."},
        {"type": "text", "text": "It rains."}]


def _tool_round(response: Any) -> Any:
    root = new_span_id()
    call = {"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "call_p", "name": "get_weather",
         "arguments": {"city": "Paris"}}]}
    result = {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "call_p", "response": response}]}
    run = one_run(_agent([
        _chat(root, 100, [*SYSTEM, ASK], [call]),
        _chat(root, 300, [*SYSTEM, ASK, call, result], _final("Rain, 12 C."))], root))
    (invocation,) = run.output[0].tool_invocations
    assert (invocation.state, invocation.tool_name) == ("result", "get_weather")
    return invocation.result


def test_a_tool_result_of_text_blocks_becomes_their_text() -> None:
    blocks = [{"text": "rain"}, {"type": "input_text", "content": "12 C"},
              {"type": "output_text", "value": "wind 3 m/s"}]
    assert _tool_round(blocks) == "rain\n12 C\nwind 3 m/s"


def test_a_result_object_with_type_and_value_among_other_fields_is_kept_whole() -> None:
    reading = {"type": "temperature", "value": 12, "unit": "C", "station": "Montsouris"}
    assert _tool_round(reading) == reading


def test_an_ai_sdk_tool_output_is_unwrapped() -> None:
    assert _tool_round({"type": "json", "value": {"sky": "rain"}}) == {"sky": "rain"}


def test_python_call_argument_dumps() -> None:
    assert tool_args({"args": [], "kwargs": {"city": "Paris"}}) == {"city": "Paris"}
    assert tool_args({"args": ['{"city": "Paris"}']}) == {"city": "Paris"}
    # Two positional arguments have no names to give: the dump stays as it is.
    assert tool_args({"args": ["Paris", "metric"]}) == {"args": ["Paris", "metric"]}
    assert tool_args({"args": ["Paris"], "kwargs": {"units": "metric"}}) == {
        "args": ["Paris"], "kwargs": {"units": "metric"}}


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_json_nesting_is_accepted_up_to_the_limit() -> None:
    deepest_allowed = _nested(MAX_JSON_DEPTH + 1)  # the outer list and 48 inside it
    parsed = parse_json_attr(deepest_allowed)
    assert (parsed.ok, parsed.too_deep) == (True, False)
    too_deep = parse_json_attr(_nested(MAX_JSON_DEPTH + 2))
    assert (too_deep.ok, too_deep.too_deep) == (False, True)


def _calls(call_parts: list[dict[str, Any]], result_parts: list[dict[str, Any]]
           ) -> list[tuple[str, str, str, Any, Any]]:
    root = new_span_id()
    call = {"role": "assistant", "finish_reason": "tool_call", "parts": call_parts}
    result = {"role": "tool", "parts": result_parts}
    run = one_run(_agent([
        _chat(root, 100, [*SYSTEM, ASK], [call]),
        _chat(root, 300, [*SYSTEM, ASK, call, result], _final("Rain."))], root))
    return [(t.tool_call_id, t.tool_name, t.state, t.args, t.result)
            for t in run.output[0].tool_invocations]


def test_responses_api_function_calls_and_outputs_pair_by_call_id() -> None:
    assert _calls(
        [{"type": "function_call", "call_id": "fc_1", "name": "get_weather",
          "arguments": '{"city": "Paris"}'}],
        [{"type": "function_call_output", "call_id": "fc_1", "output": "rain"}],
    ) == [("fc_1", "get_weather", "result", {"city": "Paris"}, "rain")]


def test_ai_sdk_tool_parts_pair_by_tool_call_id() -> None:
    assert _calls(
        [{"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather",
          "input": {"city": "Paris"}}],
        [{"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather",
          "output": {"type": "json", "value": {"sky": "rain"}}}],
    ) == [("c1", "get_weather", "result", {"city": "Paris"}, {"sky": "rain"})]


def test_a_call_without_a_name_is_an_unknown_tool() -> None:
    assert _calls([{"type": "tool_call", "id": "c1", "arguments": {"city": "Paris"}}],
                  [{"type": "tool_call_response", "id": "c1", "response": "rain"}],
                  ) == [("c1", "unknown", "result", {"city": "Paris"}, "rain")]


def test_openai_chat_messages_plain_string_inputs_and_tool_calls() -> None:
    root = new_span_id()
    call = {"role": "assistant", "content": None, "tool_calls": [
        "not a call",
        {"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "name": "get_time", "input": {"tz": "CET"}}]}
    results = [{"role": "tool", "tool_call_id": "c1", "content": "rain"},
               {"role": "tool", "tool_call_id": "c2", "content": "noon"}]
    run = one_run(_agent([
        _chat(root, 100, ["Weather in Paris?"], [call]),
        _chat(root, 300, ["Weather in Paris?", call, *results], _final("Rain at noon."))],
        root))
    assert [(m.role, m.text) for m in run.input.input_messages] == [
        ("user", "Weather in Paris?")]
    assert [(t.tool_call_id, t.tool_name, t.state, t.args, t.result)
            for t in run.output[0].tool_invocations] == [
        ("c1", "get_weather", "result", {"city": "Paris"}, "rain"),
        ("c2", "get_time", "result", {"tz": "CET"}, "noon")]
