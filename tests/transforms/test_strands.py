"""Strands Agents' own OTel GenAI tracing on hand-built spans shaped like its captures
(tests/testdata/captures/strands): the content lives in span events — the ≤v1.36 per-message
events holding Converse content blocks as JSON text (default mode), or several
`gen_ai.client.inference.operation.details` events per span, each with one content key
(`gen_ai_latest_experimental`) — or in span attributes (`gen_ai_span_attributes_only`), on the
agent span, on every `execute_event_loop_cycle` step and on each `chat` span."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._runs import one_trace_runs
from tests.transforms._spans import new_span_id, span
from transforms.types import Span, SpanEvent

SYSTEM = "You are a weather bot."
QUESTION = "What is the weather in Paris?"
LOOKUP = "Let me look that up."
ANSWER = "It is 14°C and raining in Paris."
FOLLOW_UP = "Should I take an umbrella?"
ANSWER_2 = "Yes, take an umbrella."
ERROR_TEXT = "Error: WeatherServiceError - weather service unavailable"
USE = {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}}
RESULT = {"toolResult": {"toolUseId": "call_1", "status": "success",
                         "content": [{"text": '{"temp_c": 14}'}]}}
USAGE = {"gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10}
DETAILS = "gen_ai.client.inference.operation.details"


def _blocks(*blocks: Any) -> str:
    return json.dumps([{"text": b} if isinstance(b, str) else b for b in blocks],
                      ensure_ascii=False)


def _ev(name: str, t: int, **attrs: Any) -> SpanEvent:
    return SpanEvent(name, t, attrs)


def _op(name: str, parent: str | None, start: int, end: int, op: str,
        events: list[SpanEvent], **attrs: Any) -> Span:
    s = span(name, {"gen_ai.operation.name": op, "gen_ai.system": "strands-agents",
                    "session.id": "conv-42", **attrs}, parent=parent, start=start, end=end)
    s.events = events
    return s


def _summary(run: ScorerRun) -> dict[str, Any]:
    assert run.target is not None
    out = run.output[0]
    return {
        "entity": run.target.entity_name,
        "conversation": run.target.conversation_id,
        "input": [m.text for m in run.input.input_messages],
        "remembered": [(m.role, m.text, [(t.tool_call_id, t.result, t.state)
                                         for t in m.tool_invocations])
                       for m in run.input.remembered_messages],
        "system": [m.content for m in run.input.system_messages],
        "answer": out.text,
        "texts": [p.text for p in out.content.parts if getattr(p, "type", "") == "text"],
        "tools": [(t.tool_call_id, t.args, t.result, t.error_text, t.state)
                  for t in out.tool_invocations],
        "captured": run.target.content_captured,
    }


def _legacy_turn_1(*, tool_failed: bool = False) -> list[Span]:
    """Turn 1 in the default mode: agent > cycle 1 > (chat, tool), cycle 2 > chat."""
    agent = _op("invoke_agent weather-agent", None, 1_000, 9_000, "invoke_agent", [
        _ev("gen_ai.system.message", 1_001, content=_blocks(SYSTEM)),
        _ev("gen_ai.user.message", 1_002, content=_blocks(QUESTION)),
        _ev("gen_ai.choice", 8_999, message=ANSWER + "\n", finish_reason="end_turn"),
    ], **{"gen_ai.agent.name": "weather-agent"})
    result = {"toolResult": {"toolUseId": "call_1", "status": "error",
                             "content": [{"text": ERROR_TEXT}]}} if tool_failed else RESULT
    cycle1 = _op("execute_event_loop_cycle", agent.span_id, 1_100, 4_000,
                 "execute_event_loop_cycle", [
                     _ev("gen_ai.user.message", 1_101, content=_blocks(QUESTION)),
                     _ev("gen_ai.choice", 3_999, message=_blocks(LOOKUP, USE),
                         **{"tool.result": _blocks(result)})])
    chat1 = _op("chat", cycle1.span_id, 1_200, 2_000, "chat", [
        _ev("gen_ai.system.message", 1_201, content=_blocks(SYSTEM)),
        _ev("gen_ai.user.message", 1_202, content=_blocks(QUESTION)),
        _ev("gen_ai.choice", 1_999, message=_blocks(LOOKUP, USE), finish_reason="tool_use"),
    ], **USAGE)
    tool = _op("execute_tool get_weather", cycle1.span_id, 2_100, 2_500, "execute_tool", [
        _ev("gen_ai.tool.message", 2_101, role="tool", content='{"city": "Paris"}', id="call_1"),
        _ev("gen_ai.choice", 2_499, message=json.dumps(result["toolResult"]["content"]),
            id="call_1"),
    ], **{"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1"})
    if tool_failed:
        tool.status_code, tool.status_message = "ERROR", "weather service unavailable"
    history = [_ev("gen_ai.user.message", 4_101, content=_blocks(QUESTION)),
               _ev("gen_ai.assistant.message", 4_102, content=_blocks(LOOKUP, USE)),
               _ev("gen_ai.tool.message", 4_103, content=_blocks(result))]
    cycle2 = _op("execute_event_loop_cycle", agent.span_id, 4_100, 8_000,
                 "execute_event_loop_cycle", history)
    chat2 = _op("chat", cycle2.span_id, 4_200, 7_000, "chat", [
        _ev("gen_ai.system.message", 4_201, content=_blocks(SYSTEM)),
        *[_ev(e.name, e.time_unix_nano + 100, **e.attributes) for e in history],
        _ev("gen_ai.choice", 6_999, message=_blocks(ANSWER), finish_reason="end_turn"),
    ], **USAGE)
    return [agent, cycle1, chat1, tool, cycle2, chat2]


def test_default_mode_events_hold_converse_blocks_read_as_one_run_per_turn() -> None:
    # Every message is a span event whose `content`/`message` is a JSON list of Converse
    # blocks; the loop-step spans repeat them; the tool span's own events hold its run.
    runs = one_trace_runs(_legacy_turn_1())
    assert len(runs) == 1
    assert _summary(runs[0]) == {
        "entity": "weather-agent", "conversation": "conv-42", "input": [QUESTION],
        "remembered": [], "system": [SYSTEM], "answer": ANSWER, "texts": [LOOKUP, ANSWER],
        "tools": [("call_1", {"city": "Paris"}, {"temp_c": 14}, None, "result")],
        "captured": True,
    }


def test_default_mode_history_resent_by_the_agent_is_remembered_with_its_tool_result() -> None:
    agent = _op("invoke_agent weather-agent", None, 1_000, 9_000, "invoke_agent", [
        _ev("gen_ai.system.message", 1_001, content=_blocks(SYSTEM)),
        _ev("gen_ai.user.message", 1_002, content=_blocks(FOLLOW_UP)),
        _ev("gen_ai.choice", 8_999, message=ANSWER_2 + "\n", finish_reason="end_turn"),
    ], **{"gen_ai.agent.name": "weather-agent"})
    history = [_ev("gen_ai.user.message", 1_201, content=_blocks(QUESTION)),
               _ev("gen_ai.assistant.message", 1_202, content=_blocks(LOOKUP, USE)),
               _ev("gen_ai.tool.message", 1_203, content=_blocks(RESULT)),
               _ev("gen_ai.assistant.message", 1_204, content=_blocks(ANSWER)),
               _ev("gen_ai.user.message", 1_205, content=_blocks(FOLLOW_UP))]
    cycle = _op("execute_event_loop_cycle", agent.span_id, 1_100, 8_000,
                "execute_event_loop_cycle", history)
    chat = _op("chat", cycle.span_id, 1_150, 7_000, "chat", [
        _ev("gen_ai.system.message", 1_151, content=_blocks(SYSTEM)),
        *[_ev(e.name, e.time_unix_nano + 10, **e.attributes) for e in history],
        _ev("gen_ai.choice", 6_999, message=_blocks(ANSWER_2), finish_reason="end_turn"),
    ], **USAGE)
    got = _summary(one_trace_runs([agent, cycle, chat])[0])
    assert got["input"] == [FOLLOW_UP]
    assert got["remembered"] == [
        ("user", QUESTION, []),
        ("assistant", LOOKUP, [("call_1", {"temp_c": 14}, "result")]),
        ("assistant", ANSWER, []),
    ]
    assert (got["answer"], got["texts"], got["tools"]) == (ANSWER_2, [ANSWER_2], [])


def test_a_failed_tool_reports_what_the_model_was_told() -> None:
    # The span status has only the exception's message; the text the agent handed the model
    # (its own record of the result) is the error text.
    got = _summary(one_trace_runs(_legacy_turn_1(tool_failed=True))[0])
    assert got["tools"] == [("call_1", {"city": "Paris"}, None, ERROR_TEXT, "output-error")]


def _details(t: int, key: str, value: Any) -> SpanEvent:
    return _ev(DETAILS, t, **{key: json.dumps(value, ensure_ascii=False)})


def _parts(role: str, *parts: Any, finish: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "parts": [
        {"type": "text", "content": p} if isinstance(p, str) else p for p in parts]}
    if finish:
        msg["finish_reason"] = finish
    return msg


def test_latest_mode_one_calls_record_split_over_several_events_is_one_call() -> None:
    # gen_ai_latest_experimental: instructions, input and output each in an operation-details
    # event of their own on the same span: one call, not three.
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather",
            "arguments": {"city": "Paris"}}
    response = {"type": "tool_call_response", "id": "call_1",
                "response": [{"text": '{"temp_c": 14}'}]}
    agent = _op("invoke_agent weather-agent", None, 1_000, 9_000, "invoke_agent", [
        _details(1_001, "gen_ai.input.messages", [_parts("user", QUESTION)]),
        _details(8_999, "gen_ai.output.messages", [_parts("assistant", ANSWER + "\n",
                                                          finish="end_turn")]),
    ], **{"gen_ai.agent.name": "weather-agent",
          "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}])})
    chat1 = _op("chat", agent.span_id, 1_200, 2_000, "chat", [
        _details(1_201, "gen_ai.system_instructions", [{"type": "text", "content": SYSTEM}]),
        _details(1_202, "gen_ai.input.messages", [_parts("user", QUESTION)]),
        _details(1_999, "gen_ai.output.messages", [_parts("assistant", LOOKUP, call,
                                                          finish="tool_use")]),
    ], **USAGE)
    tool = _op("execute_tool get_weather", agent.span_id, 2_100, 2_500, "execute_tool", [
        _details(2_101, "gen_ai.input.messages", [_parts("tool", call)]),
        _details(2_499, "gen_ai.output.messages", [_parts("tool", response)]),
    ], **{"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1"})
    chat2 = _op("chat", agent.span_id, 3_000, 7_000, "chat", [
        _details(3_001, "gen_ai.system_instructions", [{"type": "text", "content": SYSTEM}]),
        _details(3_002, "gen_ai.input.messages", [
            _parts("user", QUESTION), _parts("assistant", LOOKUP, call),
            _parts("user", response)]),
        _details(6_999, "gen_ai.output.messages", [_parts("assistant", ANSWER,
                                                          finish="end_turn")]),
    ], **USAGE)
    runs = one_trace_runs([agent, chat1, tool, chat2])
    assert len(runs) == 1
    got = _summary(runs[0])
    assert (got["input"], got["system"], got["answer"]) == ([QUESTION], [SYSTEM], ANSWER)
    assert got["texts"] == [LOOKUP, ANSWER]
    assert got["tools"] == [("call_1", {"city": "Paris"}, {"temp_c": 14}, None, "result")]


def test_a_loop_step_with_message_attributes_is_no_model_call() -> None:
    # gen_ai_span_attributes_only: the loop step (`execute_event_loop_cycle`) carries the
    # cycle's input messages as attributes; it names its own operation, so it is a step of
    # the run, never a model call (no second answer, no bare run).
    msgs = json.dumps([_parts("user", QUESTION)])
    agent = _op("invoke_agent weather-agent", None, 1_000, 9_000, "invoke_agent", [],
                **{"gen_ai.agent.name": "weather-agent", "gen_ai.input.messages": msgs,
                   "gen_ai.output.messages": json.dumps([_parts("assistant", ANSWER + "\n")])})
    cycle = _op("execute_event_loop_cycle", agent.span_id, 1_100, 8_000,
                "execute_event_loop_cycle", [], **{"gen_ai.input.messages": msgs})
    chat = _op("chat", cycle.span_id, 1_200, 7_000, "chat", [], **{
        "gen_ai.input.messages": msgs, **USAGE,
        "gen_ai.output.messages": json.dumps([_parts("assistant", ANSWER, finish="end_turn")])})
    runs = one_trace_runs([agent, cycle, chat])
    assert len(runs) == 1
    got = _summary(runs[0])
    assert (got["input"], got["answer"], got["texts"]) == ([QUESTION], ANSWER, [ANSWER])


def test_the_agent_spans_own_events_are_the_run_when_no_model_call_arrived() -> None:
    # Only the agent span (its model calls lost): its own events give the new input, the
    # instructions and the answer (without the line end `str(AgentResult)` adds).
    agent = _legacy_turn_1()[0]
    got = _summary(one_trace_runs([agent])[0])
    assert (got["input"], got["system"], got["answer"]) == ([QUESTION], [SYSTEM], ANSWER)


def test_a_choice_carrying_its_reply_as_content_is_that_reply() -> None:
    # A gen_ai.choice event with the reply under `content` and no `message` object (ADK's
    # legacy log events write a Google GenAI Content there) is the reply, not content left out.
    root = new_span_id()
    agent = span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent",
                                    "gen_ai.agent.name": "a"}, span_id=root, end=9_000)
    chat = _op("chat", root, 1_200, 7_000, "chat", [
        _ev("gen_ai.user.message", 1_201, content=QUESTION),
        _ev("gen_ai.choice", 6_999, content=ANSWER, finish_reason="stop", index=0),
    ], **USAGE)
    got = _summary(one_trace_runs([agent, chat])[0])
    assert (got["input"], got["answer"], got["captured"]) == ([QUESTION], ANSWER, True)


def test_redacted_instructions_are_no_system_message() -> None:
    # Redaction on with an empty allow-list: every content value is "[REDACTED]", the
    # system instructions too; a placeholder is redaction, never an instruction.
    redacted = "[REDACTED]"
    agent = _op("invoke_agent weather-agent", None, 1_000, 9_000, "invoke_agent", [
        _ev(DETAILS, 1_001, **{"gen_ai.input.messages": redacted}),
        _ev(DETAILS, 8_999, **{"gen_ai.output.messages": redacted}),
    ], **{"gen_ai.agent.name": "weather-agent", "gen_ai.system_instructions": redacted})
    chat = _op("chat", agent.span_id, 1_200, 7_000, "chat", [
        _ev(DETAILS, 1_201, **{"gen_ai.system_instructions": redacted}),
        _ev(DETAILS, 1_202, **{"gen_ai.input.messages": redacted}),
        _ev(DETAILS, 6_999, **{"gen_ai.output.messages": redacted}),
    ], **USAGE)
    run = one_trace_runs([agent, chat])[0]
    assert run.target is not None and run.target.content_captured is False
    assert run.input.system_messages == []
    assert redacted not in json.dumps([m.text for m in run.input.input_messages])
