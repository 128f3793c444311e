"""filter_run: Mastra's filterRun semantics (reference §2)."""

from __future__ import annotations

from typing import Any

import pytest

from scorers import AgentRunInput, Message, ScorerRun, create_scorer, filter_run


def tool_msg(msg_id: str, tool: str, *, text: str | None = None) -> Message:
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"type": "text", "text": text})
    parts.append({"type": "tool-invocation", "toolInvocation": {
        "state": "result", "toolCallId": f"call_{msg_id}", "toolName": tool,
        "args": {}, "result": "ok"}})
    return Message.model_validate({"id": msg_id, "role": "assistant",
                                   "content": {"format": 2, "parts": parts}})


def text_msg(msg_id: str, text: str, role: str = "assistant") -> Message:
    return Message.model_validate({"id": msg_id, "role": role, "content": text})


def reasoning_msg(msg_id: str) -> Message:
    return Message.model_validate({"id": msg_id, "role": "assistant", "content": {
        "format": 2, "parts": [{"type": "reasoning", "reasoning": "thinking"}]}})


def data_msg(msg_id: str) -> Message:
    return Message.model_validate({"id": msg_id, "role": "assistant", "content": {
        "format": 2, "parts": [{"type": "data-om-status", "data": {"x": 1}}]}})


def make_run(remembered: list[Message], output: list[Message]) -> ScorerRun:
    return ScorerRun(
        input=AgentRunInput(input_messages=[text_msg("in", "question", "user")],
                            remembered_messages=remembered),
        output=output, ground_truth="truth", request_context={"user": "u1"})


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def test_tool_names_search_keeps_search_web_and_text_drops_write() -> None:
    # The case verified against the real Mastra package.
    output = [tool_msg("a", "search_web"), tool_msg("b", "write"), text_msg("c", "done")]
    run = make_run([], output)
    filtered = filter_run(tool_names=["search"])(run)
    assert ids(filtered.output) == ["a", "c"]
    assert ids(run.output) == ["a", "b", "c"]  # the caller's run is untouched


def test_part_types_are_prefix_matches() -> None:
    output = [text_msg("t", "hello"), reasoning_msg("r"), data_msg("d"), tool_msg("x", "search")]
    assert ids(filter_run(part_types=["text"])(make_run([], output)).output) == ["t"]
    assert ids(filter_run(part_types=["data-"])(make_run([], output)).output) == ["d"]
    assert ids(filter_run(part_types=["data-om-"])(make_run([], output)).output) == ["d"]
    assert ids(filter_run(part_types=["tool-"])(make_run([], output)).output) == ["x"]
    assert ids(filter_run(part_types=["text", "reasoning"])(make_run([], output)).output) == [
        "t", "r"]


def test_tool_messages_need_both_a_tool_name_and_a_part_type_match() -> None:
    output = [tool_msg("a", "search_web", text="looking"), tool_msg("b", "write", text="writing"),
              text_msg("c", "plain"), reasoning_msg("r")]
    run = make_run([], output)
    # both set: tool messages need a matching tool AND part type; others need a part type
    got = filter_run(tool_names=["search"], part_types=["text"])(run)
    assert ids(got.output) == ["a", "c"]
    got = filter_run(tool_names=["search"], part_types=["reasoning"])(run)
    assert ids(got.output) == ["r"]


def test_tool_names_only_affect_messages_with_tool_calls() -> None:
    output = [reasoning_msg("r"), text_msg("c", "x"), tool_msg("w", "write")]
    assert ids(filter_run(tool_names=["nothing"])(make_run([], output)).output) == ["r", "c"]


def test_limits_keep_the_last_n_after_filtering() -> None:
    remembered = [text_msg(f"m{i}", f"t{i}", "user" if i % 2 else "assistant") for i in range(6)]
    output = [tool_msg("a", "search"), text_msg("b", "x"), tool_msg("c", "write"),
              text_msg("d", "y")]
    run = make_run(remembered, output)
    got = filter_run(max_remembered_messages=2, max_output_messages=3)(run)
    assert ids(got.input.remembered_messages) == ["m4", "m5"]
    assert ids(got.output) == ["b", "c", "d"]
    got = filter_run(tool_names=["search"], max_output_messages=2)(run)
    assert ids(got.output) == ["b", "d"]  # filter first ('c' dropped), then the last 2
    got = filter_run(max_remembered_messages=0, max_output_messages=10)(run)
    assert got.input.remembered_messages == []
    assert ids(got.output) == ["a", "b", "c", "d"]


def test_remembered_messages_are_filtered_but_input_messages_never() -> None:
    remembered = [tool_msg("a", "write"), text_msg("b", "hi", "user")]
    run = make_run(remembered, [])
    run.input.input_messages.append(tool_msg("new", "write"))
    got = filter_run(tool_names=["search"])(run)
    assert ids(got.input.remembered_messages) == ["b"]
    assert ids(got.input.input_messages) == ["in", "new"]


def test_drop_options() -> None:
    run = make_run([], [text_msg("a", "x")])
    got = filter_run(drop_request_context=True, drop_ground_truth=True)(run)
    assert got.request_context == {}
    assert got.ground_truth is None
    assert (run.request_context, run.ground_truth) == ({"user": "u1"}, "truth")
    kept = filter_run()(run)
    assert (kept.request_context, kept.ground_truth) == ({"user": "u1"}, "truth")


def test_non_agent_runs_pass_through() -> None:
    run = ScorerRun(input="a string input", output={"not": "a list"})
    got = filter_run(tool_names=["x"], max_output_messages=1)(run)
    assert (got.input, got.output) == ("a string input", {"not": "a list"})


@pytest.mark.parametrize("kwargs", [
    {"max_remembered_messages": -1}, {"max_output_messages": 1.5},
    {"max_output_messages": True}, {"tool_names": "search"}])
def test_bad_options_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        filter_run(**kwargs)


async def test_filter_run_as_prepare_run_in_a_scorer() -> None:
    output = [tool_msg("a", "search_web"), tool_msg("b", "write"), text_msg("c", "done")]
    scorer = create_scorer(id="f", description="", prepare_run=filter_run(
        tool_names=["search"], max_output_messages=5)).generate_score(
        lambda run, results: float(len(run.output)))
    run = make_run([], output)
    result = await scorer.run(run)
    assert result.score == 2.0
    assert ids(result.output) == ["a", "c"]
    assert len(run.output) == 3
