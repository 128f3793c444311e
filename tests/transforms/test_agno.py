"""Agno under openinference-instrumentation-agno, on hand-built span sets shaped like the real
ones (tests/testdata/captures/agno/): the agent span's answer is plain text under a JSON mime
type, and the history Agno loads from its session storage is in each model call's request
(`input.value` messages, `from_history: true`)."""

from __future__ import annotations

import json
from typing import Any

from tests.transforms._runs import one_run
from tests.transforms._spans import new_span_id, span
from transforms.types import Span

SCOPE = "openinference.instrumentation.agno"
SYSTEM = "You are a weather bot. Answer in one short sentence."
QUESTION = "What is the weather in Paris?"
FOLLOW_UP = "Should I take an umbrella?"
ANSWER = "It is 14°C and raining in Paris."
ANSWER2 = "Yes, take an umbrella."
PARIS = '{"temp_c": 14, "conditions": "rain"}'
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def _msg(role: str, content: str | None = None, *, history: bool = False,
         **extra: Any) -> dict[str, Any]:
    """One Agno `Message` as the instrumentation dumps it into `input.value`."""
    m: dict[str, Any] = {"id": new_span_id(), "from_history": history,
                         "stop_after_tool_call": False, "role": role, "created_at": 1, **extra}
    if content is not None:
        m["content"] = content
    return m


def _llm(parent: str, start: int, messages: list[dict[str, Any]],
         output: dict[str, Any]) -> Span:
    return span("OpenAIChat.invoke", {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "input.mime_type": "application/json", "input.value": json.dumps({"messages": messages}),
        "output.mime_type": "application/json", "output.value": json.dumps([output])},
        parent=parent, start=start, end=start + 50, scope=SCOPE)


def _agent(question: str, answer: str, root: str, children: list[Span]) -> list[Span]:
    return [span("weather_agent.run", {
        "openinference.span.kind": "AGENT", "agent.name": "weather-agent",
        "session.id": "conv-42", "input.value": question,
        "output.value": answer, "output.mime_type": "application/json"},
        span_id=root, start=0, end=10_000, scope=SCOPE), *children]


def test_the_agent_spans_plain_text_answer_under_a_json_mime_type_is_the_answer() -> None:
    root = new_span_id()
    first = [_msg("system", SYSTEM), _msg("user", QUESTION)]
    # The app received the run's content: here Agno's concatenation of every call's text.
    answer = "Let me look that up." + ANSWER
    run = one_run(_agent(QUESTION, answer, root, [
        _llm(root, 100, first, {"role": "assistant", "content": "Let me look that up.",
                                "tool_calls": [CALL]}),
        span("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                             "input.value": '{"city": "Paris"}', "output.value": PARIS,
                             "output.mime_type": "text/plain"},
             parent=root, start=200, end=210, scope=SCOPE),
        _llm(root, 300, [*first, _msg("assistant", tool_calls=[CALL]),
                         _msg("tool", PARIS, tool_call_id="call_1")],
             {"role": "assistant", "content": ANSWER}),
    ]))
    assert run.target.entity_name == "weather-agent"
    assert run.target.conversation_id == "conv-42"
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    [out] = run.output
    assert out.text == answer
    [call] = out.tool_invocations
    assert (call.tool_name, call.args, call.result) == (
        "get_weather", {"city": "Paris"}, {"temp_c": 14, "conditions": "rain"})


def test_history_from_agnos_session_storage_is_remembered() -> None:
    root = new_span_id()
    messages = [_msg("system", SYSTEM), _msg("user", QUESTION, history=True),
                _msg("assistant", history=True, tool_calls=[CALL]),
                _msg("tool", PARIS, history=True, tool_call_id="call_1",
                     tool_name="get_weather", tool_args={"city": "Paris"}),
                _msg("assistant", ANSWER, history=True), _msg("user", FOLLOW_UP)]
    run = one_run(_agent(FOLLOW_UP, ANSWER2, root, [
        _llm(root, 100, messages, {"role": "assistant", "content": ANSWER2})]))
    assert [m.text for m in run.input.input_messages] == [FOLLOW_UP]
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    remembered = run.input.remembered_messages
    assert [(m.role, m.text) for m in remembered] == [
        ("user", QUESTION), ("assistant", ""), ("assistant", ANSWER)]
    [call] = remembered[1].tool_invocations
    assert (call.tool_call_id, call.state, call.result) == (
        "call_1", "result", {"temp_c": 14, "conditions": "rain"})
    assert run.output[0].text == ANSWER2 and run.output[0].tool_invocations == []
    # Agno marks every remembered message `from_history`: the history is exact, not inferred.
    assert "rememberedMessages" not in run.target.derived


def test_history_without_agnos_marks_is_inferred() -> None:
    # The same request without a clean from_history boundary (a marked message after an
    # unmarked one): the history is still read, but listed as inferred.
    root = new_span_id()
    messages = [_msg("system", SYSTEM), _msg("user", QUESTION, history=True),
                _msg("assistant", ANSWER, history=False), _msg("user", FOLLOW_UP, history=True),
                _msg("user", FOLLOW_UP)]
    run = one_run(_agent(FOLLOW_UP, ANSWER2, root, [
        _llm(root, 100, messages, {"role": "assistant", "content": ANSWER2})]))
    assert "rememberedMessages" in run.target.derived
