"""Mastra model steps (`agent_step` spans): the run's answer and the system messages a later step
adds, on hand-built spans shaped like @mastra/otel-exporter 1.4's (the capture
`mastra/processor_retry` shows the real ones).

Mastra's agent and generation outputs join the text of every model step; when an output
processor rejects an answer and Mastra retries the step, the rejected answer is joined too
("It is 57°F in Paris.It is 14°C in Paris."). The last step's own output is the answer; an
earlier step that said something before calling tools said intermediate text; an earlier step
with text and no tool call was rejected and is neither. The retried step's prompt adds the
processor's feedback as a system message, which the generation's prompt (the first step's) lacks.
"""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._runs import one_run, tags_of
from tests.transforms._spans import span

INSTRUCTIONS = "You are a weather bot. Answer in one short sentence."
QUESTION = "What is the weather in Paris?"
REJECTED = "It is 57°F in Paris."
ACCEPTED = "It is 14°C in Paris."
LEAD_IN = "Let me look that up."
RETRY = ("[Processor Feedback] Your previous response was not accepted: Answer in degrees "
         "Celsius. Please try again with the feedback in mind.")
ROOT = "00f067aa0ba902b7"
GEN = "00f067aa0ba902b8"
CALL = {"toolCallId": "call_paris_1", "toolName": "get_weather", "args": {"city": "Paris"}}

# One step: (its text, whether it called get_weather, the system messages of its prompt).
Step = tuple[str, bool, list[str]]


def _run(steps: list[Step], *, root_text: str | None = None) -> ScorerRun:
    """An agent run whose generation made `steps`; the agent's and generation's text is
    `root_text`, by default every step's text joined as Mastra joins them."""
    text = "".join(s[0] for s in steps) if root_text is None else root_text
    calls = [CALL] if any(s[1] for s in steps) else []
    spans = [
        span("invoke_agent Weather Agent", {
            "gen_ai.operation.name": "invoke_agent", "mastra.span.type": "agent_run",
            "gen_ai.agent.id": "weather-agent", "gen_ai.agent.name": "Weather Agent",
            "gen_ai.system_instructions": INSTRUCTIONS, "mastra.agent_run.input": QUESTION,
            "mastra.agent_run.output": json.dumps({"text": text, "files": []})},
            span_id=ROOT, start=1_000, end=90_000),
        span("model_generation mock-model", {
            "gen_ai.operation.name": "model_generation", "mastra.span.type": "model_generation",
            "mastra.model_generation.input": json.dumps({"messages": [
                {"role": "system", "content": s} for s in steps[0][2]] + [
                {"role": "user", "content": [{"type": "text", "text": QUESTION}]}]}),
            "mastra.model_generation.output": json.dumps({"text": text, "toolCalls": calls})},
            span_id=GEN, parent=ROOT, start=2_000, end=80_000),
    ]
    for i, (step_text, called, system) in enumerate(steps):
        prompt: list[dict[str, Any]] = [{"role": "system", "content": s} for s in system]
        prompt.append({"role": "user", "content": QUESTION})
        if i:
            prompt += [{"role": "assistant", "content": "[tool: get_weather]"},
                       {"role": "tool", "content": "[tool-result: get_weather]"}]
        spans.append(span("agent_step Weather Agent", {
            "mastra.span.type": "model_step", "mastra.model_step.step_index": i,
            "mastra.model_step.input": json.dumps(prompt),
            "mastra.model_step.output": json.dumps(
                {"text": step_text, "toolCalls": [CALL] if called else []})},
            parent=GEN, start=3_000 + 10_000 * i, end=9_000 + 10_000 * i))
        if called:
            spans.append(span("execute_tool get_weather", {
                "mastra.span.type": "tool_call", "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_paris_1",
                "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
                "gen_ai.tool.call.result": json.dumps({"temp_c": 14})},
                parent=spans[-1].span_id, start=7_000 + 10_000 * i, end=8_000 + 10_000 * i))
    return one_run(spans)


def _texts(run: ScorerRun) -> list[str]:
    """The output's text parts in order (intermediate texts, then the answer)."""
    (msg,) = run.output
    return [p.text for p in msg.content.parts or [] if p.type == "text"]


def test_a_retried_answer_is_the_last_steps_and_the_feedback_is_tagged() -> None:
    run = _run([("", True, [INSTRUCTIONS]), (REJECTED, False, [INSTRUCTIONS]),
                (ACCEPTED, False, [INSTRUCTIONS, RETRY])])
    assert run.output[0].text == ACCEPTED
    assert _texts(run) == [ACCEPTED]  # the rejected answer is no intermediate text either
    assert [t.tool_call_id for t in run.output[0].tool_invocations] == ["call_paris_1"]
    assert [m.content for m in run.input.system_messages] == [INSTRUCTIONS]
    assert tags_of(run) == {"processor-retry-feedback": [RETRY]}


def test_a_retry_without_tools_gives_the_accepted_answer() -> None:
    run = _run([(REJECTED, False, [INSTRUCTIONS]), (ACCEPTED, False, [INSTRUCTIONS, RETRY])])
    assert _texts(run) == [ACCEPTED]
    assert tags_of(run) == {"processor-retry-feedback": [RETRY]}


def test_text_before_a_tool_call_is_intermediate_text_not_the_answer() -> None:
    run = _run([(LEAD_IN, True, [INSTRUCTIONS]), (ACCEPTED, False, [INSTRUCTIONS])])
    assert run.output[0].text == ACCEPTED
    assert _texts(run) == [LEAD_IN, ACCEPTED]
    assert tags_of(run) == {}


def test_an_answer_that_is_not_the_steps_joined_is_kept() -> None:
    # The agent's output says something else than the steps' texts joined (a processor that
    # rewrote the answer, say): it is the run's answer, as before.
    rewritten = "It is 14 °C in Paris (rewritten)."
    run = _run([("", True, [INSTRUCTIONS]), (ACCEPTED, False, [INSTRUCTIONS])],
               root_text=rewritten)
    assert _texts(run) == [rewritten]
    glued_otherwise = REJECTED + " " + ACCEPTED  # not exactly the join: not glued by Mastra
    run = _run([(REJECTED, False, [INSTRUCTIONS]), (ACCEPTED, False, [INSTRUCTIONS])],
               root_text=glued_otherwise)
    assert _texts(run) == [glued_otherwise]


def test_one_step_or_a_tool_step_and_an_answer_change_nothing() -> None:
    assert _texts(_run([(ACCEPTED, False, [INSTRUCTIONS])])) == [ACCEPTED]
    run = _run([("", True, [INSTRUCTIONS]), (ACCEPTED, False, [INSTRUCTIONS])])
    assert _texts(run) == [ACCEPTED]
    assert tags_of(run) == {}


def test_a_later_steps_unknown_system_message_is_runtime_after_the_first_calls() -> None:
    memory = "WORKING_MEMORY_SYSTEM_INSTRUCTION:\n<working_memory_data>Ana</working_memory_data>"
    extra = "Be brief."
    run = _run([("", True, [INSTRUCTIONS, memory]),
                (ACCEPTED, False, [INSTRUCTIONS, memory, extra, RETRY])])
    assert tags_of(run) == {"memory": [memory], "runtime": [extra],
                            "processor-retry-feedback": [RETRY]}
