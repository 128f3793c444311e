"""One API call recorded twice, or not (found by bench/mutation.py): a model-call span directly
inside another is the same call (the outer record wins, `nested_call`); a model call made
inside a tool that runs under a model-call span is a call of its own."""

from __future__ import annotations

from tests.transforms._runs import build_one_trace
from tests.transforms._spans import TRACE, new_span_id, span
from tests.transforms.test_tool_rules import ASK, SYSTEM, _agent, _chat, _final
from transforms.types import Span


def _outer(root: str, outer: str) -> Span:
    recorded = _chat(root, 100, [*SYSTEM, ASK], _final("Outer says rain."))
    return span(recorded.name, dict(recorded.attributes), span_id=outer, parent=root,
                start=100, end=900, kind="CLIENT")


def test_a_call_recorded_twice_keeps_the_outer_record() -> None:
    root, outer = new_span_id(), new_span_id()
    inner = _chat(outer, 200, [*SYSTEM, ASK, {"role": "user", "parts": [
        {"type": "text", "content": "a prompt the outer library rewrote"}]}],
        _final("Inner says rain."))
    result = build_one_trace(_agent([_outer(root, outer), inner], root))
    assert result.reasons == {"nested_call": 1}
    (run,) = result.runs
    assert [m.text for m in run.input.input_messages] == ["Weather in Paris and Berlin?"]
    assert [m.text for m in run.output] == ["Outer says rain."]


def test_a_call_inside_a_tool_is_not_merged_into_the_call_around_it() -> None:
    root, outer, tool = new_span_id(), new_span_id(), new_span_id()
    lookup = span("execute_tool lookup", {"gen_ai.operation.name": "execute_tool",
                                          "gen_ai.tool.name": "lookup"},
                  span_id=tool, parent=outer, start=150, end=800)
    inner = _chat(tool, 200, [{"role": "user", "parts": [
        {"type": "text", "content": "Sub question"}]}], _final("Sub answer."))
    result = build_one_trace(_agent([_outer(root, outer), lookup, inner], root))
    assert "nested_call" not in result.reasons
    (run,) = result.runs
    assert [m.text for m in run.output] == ["Outer says rain."]


def test_a_run_points_at_its_trace_and_agent_span() -> None:
    # The score record's trace id, score id and sampling all come from here.
    root = new_span_id()
    (run,) = build_one_trace(_agent([_chat(root, 100, [*SYSTEM, ASK], _final("Rain."))], root)).runs
    assert run.target is not None
    assert (run.target.trace_id, run.target.span_id, run.target.entity_type) == (
        TRACE, root, "agent_run")
    assert (run.target.entity_id, run.target.entity_name) == ("weather-agent", "weather-agent")
