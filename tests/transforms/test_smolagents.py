"""smolagents under openinference-instrumentation-smolagents, on hand-built span sets shaped like
the real ones (tests/testdata/captures/smolagents/): the agent memory OpenInference records as
smolagents renders it (`New task:`, `Calling tools:` with a Python literal, `Observation:`) is
the conversation it stands for, and the `final_answer` tool call is the run's answer, not a
tool invocation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.transforms._runs import all_runs, calls_of
from tests.transforms._spans import new_span_id, span
from transforms.types import Span

SCOPE = "openinference.instrumentation.smolagents"
SYSTEM = "You are an expert assistant who can solve any task using tool calls.\nBe brief."
QUESTION = "What is the weather in Paris?"
FOLLOW_UP = "Should I take an umbrella?"
LEAD_IN = "Let me look that up."
ANSWER = "It is 14°C and raining in Paris."
ANSWER2 = "Yes, take an umbrella."
PARIS = '{"temp_c": 14, "conditions": "rain"}'


def _messages(prefix: str, msgs: list[tuple[str, str]]) -> dict[str, Any]:
    """Flattened `llm.*_messages` the way the instrumentation writes smolagents' text parts."""
    attrs: dict[str, Any] = {}
    for i, (role, text) in enumerate(msgs):
        attrs[f"{prefix}.{i}.message.role"] = role
        if text:
            attrs[f"{prefix}.{i}.message.contents.0.message_content.type"] = "text"
            attrs[f"{prefix}.{i}.message.contents.0.message_content.text"] = text
    return attrs


def _calls_text(*calls: tuple[str, str, dict[str, Any]]) -> str:
    """smolagents' `Calling tools:` memory text (a Python literal of the calls)."""
    return "Calling tools:\n" + str([{"id": cid, "type": "function",
                                      "function": {"name": name, "arguments": args}}
                                     for cid, name, args in calls])


def _llm(parent: str, start: int, inp: list[tuple[str, str]], text: str | None,
         calls: list[tuple[str, str, dict[str, Any]]]) -> Span:
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "input.mime_type": "application/json",
        # The instrumentation dumps smolagents' ChatMessage objects as their reprs.
        "input.value": json.dumps({"messages": [
            f"ChatMessage(role=<MessageRole.USER: 'user'>, content=[{{'type': 'text', "
            f"'text': {t!r}}}])" for _, t in inp]}),
        **_messages("llm.input_messages", inp),
        "llm.output_messages.0.message.role": "assistant",
    }
    if text is not None:
        attrs["llm.output_messages.0.message.contents.0.message_content.type"] = "text"
        attrs["llm.output_messages.0.message.contents.0.message_content.text"] = text
    for k, (cid, name, args) in enumerate(calls):
        key = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
        attrs[f"{key}.id"] = cid
        attrs[f"{key}.function.name"] = name
        attrs[f"{key}.function.arguments"] = json.dumps(args)
    return span("OpenAIModel.generate", attrs, parent=parent, start=start, end=start + 50,
                scope=SCOPE)


def _tool(parent: str, start: int, cls: str, name: str, kwargs: dict[str, Any],
          output: str) -> Span:
    return span(cls, {"openinference.span.kind": "TOOL", "tool.name": name,
                      "input.value": json.dumps({"args": [], "sanitize_inputs_outputs": True,
                                                 "kwargs": kwargs}),
                      "output.value": output, "output.mime_type": "text/plain"},
                parent=parent, start=start, end=start + 10, scope=SCOPE)


def _agent(task: str, output: str, children: list[Span], root: str, t0: int,
           trace_id: str) -> list[Span]:
    agent = span("weather_agent.run", {
        "openinference.span.kind": "AGENT", "session.id": "conv-42",
        "input.value": json.dumps({"task": task, "stream": False, "reset": True, "images": None}),
        "output.value": output}, span_id=root, start=t0, end=t0 + 10_000, trace_id=trace_id,
        scope=SCOPE)
    return [agent, *[_retrace(s, trace_id) for s in children]]


def _retrace(s: Span, trace_id: str) -> Span:
    s.trace_id = trace_id
    return s


def _turn1(output: str = ANSWER, trace_id: str = "1" * 32) -> list[Span]:
    root, s1, s2 = new_span_id(), new_span_id(), new_span_id()
    first = [("system", SYSTEM), ("user", f"New task:\n{QUESTION}")]
    paris_call = _calls_text(("call_1", "get_weather", {"city": "Paris"}))
    after_tool = first + [("assistant", LEAD_IN), ("tool-call", paris_call),
                          ("tool-response", f"Observation:\n{PARIS}")]
    steps = [
        span("Step 1", {"openinference.span.kind": "CHAIN"}, span_id=s1, parent=root,
             start=100, end=500, scope=SCOPE),
        _llm(s1, 110, first, LEAD_IN, [("call_1", "get_weather", {"city": "Paris"})]),
        _tool(s1, 200, "SimpleTool", "get_weather", {"city": "Paris"}, PARIS),
        span("Step 2", {"openinference.span.kind": "CHAIN"}, span_id=s2, parent=root,
             start=600, end=900, scope=SCOPE),
        _llm(s2, 610, after_tool, None, [("call_f1", "final_answer", {"answer": ANSWER})]),
        _tool(s2, 700, "FinalAnswerTool", "final_answer", {"answer": ANSWER}, ANSWER),
    ]
    return _agent(QUESTION, output, steps, root, 0, trace_id)


def _turn2() -> list[Span]:
    root, s1 = new_span_id(), new_span_id()
    memory = [("system", SYSTEM), ("user", f"New task:\n{QUESTION}"), ("assistant", LEAD_IN),
              ("tool-call", _calls_text(("call_1", "get_weather", {"city": "Paris"}))),
              ("tool-response", f"Observation:\n{PARIS}"),
              ("tool-call", _calls_text(("call_f1", "final_answer", {"answer": ANSWER}))),
              ("tool-response", f"Observation:\n{ANSWER}"),
              ("user", f"New task:\n{FOLLOW_UP}")]
    steps = [
        span("Step 1", {"openinference.span.kind": "CHAIN"}, span_id=s1, parent=root,
             start=100_100, end=100_500, scope=SCOPE),
        _llm(s1, 100_110, memory, None, [("call_f2", "final_answer", {"answer": ANSWER2})]),
        _tool(s1, 100_200, "FinalAnswerTool", "final_answer", {"answer": ANSWER2}, ANSWER2),
    ]
    return _agent(FOLLOW_UP, ANSWER2, steps, root, 100_000, "2" * 32)


def test_one_run_per_agent_run_answer_from_final_answer_tool_from_get_weather() -> None:
    [run] = all_runs(_turn1())
    assert run.target.entity_name == "weather_agent"
    assert run.target.conversation_id == "conv-42"
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert run.input.remembered_messages == []
    [out] = run.output
    assert out.text == ANSWER
    # The lead-in, get_weather with the observation it returned, then the answer; the
    # final_answer call is how the agent answered, not a tool it used.
    assert calls_of(out) == [("call_1", "get_weather", {"city": "Paris"}, "result",
                              {"temp_c": 14, "conditions": "rain"})]
    assert [p.type for p in out.content.parts] == ["text", "tool-invocation", "text"]
    assert out.content.parts[0].text == LEAD_IN  # type: ignore[union-attr]


def test_memory_rendered_as_text_is_the_remembered_conversation() -> None:
    [run] = all_runs(_turn2())
    assert [m.text for m in run.input.input_messages] == [FOLLOW_UP]
    remembered = run.input.remembered_messages
    assert [(m.role, m.text) for m in remembered] == [
        ("user", QUESTION), ("assistant", LEAD_IN), ("assistant", ANSWER)]
    assert calls_of(remembered[1]) == [("call_1", "get_weather", {"city": "Paris"}, "result",
                                        {"temp_c": 14, "conditions": "rain"})]
    assert "rememberedMessages" in run.target.derived
    [out] = run.output
    assert out.text == ANSWER2 and out.tool_invocations == []


def test_a_streamed_run_whose_output_is_the_events_reprs_takes_the_final_answer_call() -> None:
    reprs = ("ChatMessageStreamDelta(content='Let me l', tool_calls=None, token_usage=None)"
             "ChatMessageStreamDelta(content='ook that up.', tool_calls=None, token_usage=None)")
    [run] = all_runs(_turn1(output=reprs))
    assert run.output[0].text == ANSWER
    assert "ChatMessageStreamDelta" not in json.dumps(run.model_dump(mode="json"))


def test_one_observation_per_parallel_call_in_call_id_order() -> None:
    root, s1 = new_span_id(), new_span_id()
    calls = (("call_b", "get_weather", {"city": "Berlin"}),
             ("call_a", "get_weather", {"city": "Paris"}))
    memory = [("system", SYSTEM), ("user", f"New task:\n{QUESTION}"),
              ("tool-call", _calls_text(*calls)),
              # smolagents joins the observations in call id order: call_a, then call_b.
              ("tool-response", 'Observation:\n{"city": "Paris"}\n{"city": "Berlin"}'),
              ("user", f"New task:\n{FOLLOW_UP}")]
    steps = [span("Step 1", {"openinference.span.kind": "CHAIN"}, span_id=s1, parent=root,
                  start=100, end=500, scope=SCOPE),
             _llm(s1, 110, memory, None, [("call_f", "final_answer", {"answer": ANSWER2})])]
    [run] = all_runs(_agent(FOLLOW_UP, ANSWER2, steps, root, 0, "3" * 32))
    [_, calling] = run.input.remembered_messages
    assert [(t.tool_call_id, t.args, t.result) for t in calling.tool_invocations] == [
        ("call_b", {"city": "Berlin"}, {"city": "Berlin"}),
        ("call_a", {"city": "Paris"}, {"city": "Paris"})]


@pytest.mark.parametrize("rendered", [
    "Calling tools:\n[<function get_weather at 0x7f>]",  # a repr, no literal
    "Calling tools:\n[{[1]: 2}]",  # an unhashable key: literal_eval raises TypeError
    "Calling tools:\n" + "[" * 5000,  # too deep for the parser
])
def test_a_tool_call_memory_that_is_no_python_literal_stays_text(rendered: str) -> None:
    root, s1 = new_span_id(), new_span_id()
    memory = [("system", SYSTEM), ("user", f"New task:\n{QUESTION}"),
              ("tool-call", rendered),
              ("user", f"New task:\n{FOLLOW_UP}")]
    steps = [span("Step 1", {"openinference.span.kind": "CHAIN"}, span_id=s1, parent=root,
                  start=100, end=500, scope=SCOPE),
             _llm(s1, 110, memory, None, [("call_f", "final_answer", {"answer": ANSWER2})])]
    [run] = all_runs(_agent(FOLLOW_UP, ANSWER2, steps, root, 0, "4" * 32))
    assert [(m.role, m.text) for m in run.input.remembered_messages] == [
        ("user", QUESTION), ("assistant", rendered)]
