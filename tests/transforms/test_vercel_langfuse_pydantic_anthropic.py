"""Hand-made spans for the AI SDK, Langfuse, Pydantic AI and Anthropic SDK conventions: the
`vercel_ai_sdk` and `langfuse_pydantic` sets of reference/convention-fixtures.json, the Vercel
AI SDK v4/v5 attribute variations the spec lists, Anthropic SDK threads, and one call recorded
by two libraries. Scenario as in test_convention_fixtures: history "Hi, I'm Ana." / "Hi Ana! How can I help?", new input
"What's the weather in Paris?", get_weather -> {"temp_c": 14, "conditions": "rain"}."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._runs import history_of, one_run, one_trace_runs, tools_of
from tests.transforms._spans import TRACE, load_fixtures, span
from transforms import SpanEvent, Trace, build_runs

FIX = load_fixtures()
SYSTEM = "You are a helpful weather assistant."
QUESTION = "What's the weather in Paris?"
ANSWER = "It's 14°C and raining in Paris, Ana."
LEAD_IN = "Let me look that up."
RESULT = {"temp_c": 14, "conditions": "rain"}
HISTORY = [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
ROOT = "00f067aa0ba902b7"


def _fx(conv: str, starts: str) -> dict[str, Any]:
    return next(f for f in FIX[conv] if f["name"].startswith(starts))


def _part_kinds(run: ScorerRun) -> list[str]:
    return [p.type if p.type != "text" else f"text:{p.text}" for p in run.output[0].content.parts]


# --------------------------------------------------------------------------- Vercel AI SDK

def _vercel_fixture_spans() -> list[Any]:
    root_fx = _fx("vercel_ai_sdk", "ai.generateText root")
    step2_fx = _fx("vercel_ai_sdk", "ai.generateText.doGenerate")
    tool_fx = _fx("vercel_ai_sdk", "ai.toolCall")
    prompt2 = json.loads(step2_fx["attributes"]["ai.prompt.messages"])
    step1 = {k: v for k, v in step2_fx["attributes"].items()
             if not k.startswith(("ai.response.", "gen_ai.response."))}
    step1["ai.prompt.messages"] = json.dumps(prompt2[:4])  # before the tool round
    step1.update(step2_fx["step1_doGenerate_toolcall_output"])
    return [
        span("ai.generateText", root_fx["attributes"], span_id=ROOT, scope="ai",
             start=1000, end=9000),
        span("ai.generateText.doGenerate", step1, parent=ROOT, scope="ai", start=1100,
             end=2000),
        span("ai.toolCall", tool_fx["attributes"], parent=ROOT, scope="ai", start=2100,
             end=2200),
        span("ai.generateText.doGenerate", step2_fx["attributes"], parent=ROOT, scope="ai",
             start=2300, end=8000),
    ]


def test_vercel_generate_text_root_steps_and_tool() -> None:
    run = one_run(_vercel_fixture_spans())
    t = run.target
    assert (t.convention, t.entity_name, t.conversation_id, t.resource_id) == (
        "vercel", "weather-agent", "sess-42", "ana")
    assert run.request_context == {"sessionId": "sess-42", "userId": "ana"}
    assert [s.content for s in run.input.system_messages] == [SYSTEM]  # ai.prompt.system
    assert run.input.tagged_system_messages == {}
    # ai.prompt is the app's whole conversation: the trailing user message is the new input.
    assert [(m.role, m.text) for m in run.input.input_messages] == [("user", QUESTION)]
    assert history_of(run) == HISTORY
    assert "inputMessages" in t.derived
    assert run.output[0].text == ANSWER
    # The step's toolCalls input is a JSON string; the ai.toolCall span has the result.
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert _part_kinds(run) == ["tool-invocation", f"text:{ANSWER}"]
    assert t.content_captured and not t.truncated


def test_vercel_v7_otel_root_alone() -> None:
    fx = _fx("vercel_ai_sdk", "AI SDK v7")
    run = one_run([span(fx["span_name"], fx["attributes"], span_id=ROOT, scope="gen_ai")])
    t = run.target
    assert (t.convention, t.entity_name) == ("genai", "weather-agent")
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == HISTORY  # from the root's own conversation
    assert run.output[0].text == ANSWER


def _prompt(messages: list[dict[str, Any]]) -> str:
    return json.dumps([{"role": "system", "content": SYSTEM}, *messages])


USER_Q = {"role": "user", "content": [{"type": "text", "text": QUESTION}]}


def _stream_steps(*, tool_parent_is_step: bool, call_input: Any, tool_result: str,
                  result_part: dict[str, Any], op: str = "ai.streamText") -> list[Any]:
    """streamText (or generateText) with a tool step and an answer step."""
    step_op = f"{op}.doStream" if op == "ai.streamText" else f"{op}.doGenerate"
    call_part = {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather",
                 "input": {"city": "Paris"}}
    step1 = "00000000000051e1"
    return [
        span(op, {"ai.operationId": op, "ai.telemetry.functionId": "weather-agent",
                  "ai.model.id": "gpt-4o", "ai.prompt": json.dumps(
                      {"system": SYSTEM, "messages": [{"role": "user", "content": QUESTION}]}),
                  "ai.response.text": ANSWER, "ai.response.finishReason": "stop"},
             span_id=ROOT, scope="ai", start=1000, end=9000),
        span(step_op, {"ai.operationId": step_op, "ai.prompt.messages": _prompt([USER_Q]),
                       "ai.response.text": LEAD_IN, "ai.response.finishReason": "tool-calls",
                       "ai.response.toolCalls": json.dumps([{
                           "type": "tool-call", "toolCallId": "call_1",
                           "toolName": "get_weather", "input": call_input}])},
             span_id=step1, parent=ROOT, scope="ai", start=1100, end=3000),
        span("ai.toolCall", {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "get_weather",
                             "ai.toolCall.id": "call_1", "ai.toolCall.args": '{"city":"Paris"}',
                             "ai.toolCall.result": tool_result},
             parent=step1 if tool_parent_is_step else ROOT, scope="ai", start=2500, end=2600),
        span(step_op, {"ai.operationId": step_op, "ai.prompt.messages": _prompt([
            USER_Q, {"role": "assistant", "content": [{"type": "text", "text": LEAD_IN},
                                                      call_part]},
            {"role": "tool", "content": [result_part]}]),
            "ai.response.text": ANSWER, "ai.response.finishReason": "stop"},
            parent=ROOT, scope="ai", start=3100, end=8000),
    ]


JSON_RESULT = {"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
               "output": {"type": "json", "value": RESULT}}


def test_vercel_stream_tool_span_under_the_step_and_object_input() -> None:
    run = one_run(_stream_steps(tool_parent_is_step=True, call_input={"city": "Paris"},
                                tool_result=json.dumps(RESULT), result_part=JSON_RESULT))
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert run.input.remembered_messages == []
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    # Root output = the last step only; the first step's text stays as intermediate text.
    assert _part_kinds(run) == [f"text:{LEAD_IN}", "tool-invocation", f"text:{ANSWER}"]
    assert run.output[0].text == ANSWER


def test_vercel_generate_json_string_input_and_double_encoded_result() -> None:
    text_result = {"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
                   "output": {"type": "text", "value": json.dumps(RESULT)}}
    run = one_run(_stream_steps(tool_parent_is_step=False, call_input='{"city":"Paris"}',
                                tool_result=json.dumps(json.dumps(RESULT)),
                                result_part=text_result, op="ai.generateText"))
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.output[0].text == ANSWER


def test_vercel_v4_args_and_result_without_a_tool_span() -> None:
    # v4: toolCalls items {toolCallType, toolCallId, toolName, args: JSON string}; prompt
    # tool-call parts carry `args`, tool-result parts `result`; no ai.toolCall span here.
    spans = _stream_steps(tool_parent_is_step=False, call_input=None, tool_result="",
                          result_part={"type": "tool-result", "toolCallId": "call_1",
                                       "toolName": "get_weather", "result": RESULT},
                          op="ai.generateText")
    spans[1].attributes["ai.response.toolCalls"] = json.dumps([{
        "toolCallType": "function", "toolCallId": "call_1", "toolName": "get_weather",
        "args": '{"city":"Paris"}'}])
    spans[1].attributes["ai.usage.promptTokens"] = 12
    del spans[2]
    run = one_run(spans)
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.output[0].text == ANSWER


def test_vercel_generate_object_output_is_the_object_text() -> None:
    obj = '{"city":"Paris","temp_c":14}'
    run = one_run([
        span("ai.generateObject", {"ai.operationId": "ai.generateObject",
                                   "ai.telemetry.functionId": "weather-agent",
                                   "ai.prompt": json.dumps({"system": SYSTEM,
                                                            "prompt": QUESTION}),
                                   "ai.response.object": obj}, span_id=ROOT, scope="ai"),
        span("ai.generateObject.doGenerate", {
            "ai.operationId": "ai.generateObject.doGenerate",
            "ai.prompt.messages": _prompt([USER_Q]),
            "ai.response.object": '{"city": "Paris", "temp_c": 14}',
            "ai.response.finishReason": "stop"}, parent=ROOT, scope="ai", start=1100)])
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert run.target.derived == []  # a string prompt is the new input; nothing before it
    assert run.output[0].text == obj
    assert _part_kinds(run) == [f"text:{obj}"]  # the step's copy is not repeated


def test_vercel_record_inputs_and_outputs_off() -> None:
    spans = _stream_steps(tool_parent_is_step=True, call_input={}, tool_result="",
                          result_part=JSON_RESULT)
    for s in spans:
        for k in [k for k in s.attributes if k.startswith(("ai.prompt", "ai.response.text",
                                                           "ai.response.toolCalls",
                                                           "ai.toolCall.args",
                                                           "ai.toolCall.result"))]:
            del s.attributes[k]
    run = one_run(spans)
    assert run.target.content_captured is False
    assert run.input.input_messages == []
    # The structure stays: the tool span says which tool ran.
    assert [(t[0], t[1], t[4]) for t in tools_of(run)] == [("get_weather", "call_1", "call")]


def test_vercel_tool_error_and_cut_prompt() -> None:
    spans = _stream_steps(tool_parent_is_step=True, call_input={"city": "Paris"},
                          tool_result="", result_part=JSON_RESULT)
    tool = spans[2]
    del tool.attributes["ai.toolCall.result"]
    tool.status_code, tool.status_message = "ERROR", "city not found"
    tool.events.append(SpanEvent("exception", 2550, {"exception.message": "city not found"}))
    spans[0].attributes["ai.prompt"] = spans[0].attributes["ai.prompt"][:40]  # a length limit
    run = one_run(spans)
    assert [(t[0], t[4]) for t in tools_of(run)] == [("get_weather", "output-error")]
    assert run.output[0].tool_invocations[0].error_text == "city not found"
    assert run.target.truncated is True
    assert [m.text for m in run.input.input_messages] == [QUESTION]  # from the first step


def test_vercel_nested_generate_text_with_another_function_id_is_its_own_run() -> None:
    spans = _stream_steps(tool_parent_is_step=False, call_input={"city": "Paris"},
                          tool_result=json.dumps(RESULT), result_part=JSON_RESULT,
                          op="ai.generateText")
    tool_id = spans[2].span_id
    spans.append(span("ai.generateText", {
        "ai.operationId": "ai.generateText", "ai.telemetry.functionId": "forecast-agent",
        "ai.prompt": json.dumps({"prompt": "Forecast for Paris"}),
        "ai.response.text": "Rain."}, parent=tool_id, scope="ai", start=2510, end=2590))
    runs = one_trace_runs(spans)
    assert [(r.target.entity_name, r.output[0].text) for r in runs] == [
        ("weather-agent", ANSWER), ("forecast-agent", "Rain.")]


# --------------------------------------------------------------------------- Langfuse

def test_langfuse_agent_observation_alone() -> None:
    fx = _fx("langfuse_pydantic", "Langfuse")
    run = one_run([span(fx["span_name"], fx["attributes"], span_id=ROOT, scope="langfuse-sdk")])
    t = run.target
    assert (t.convention, t.entity_name, t.conversation_id, t.resource_id) == (
        "langfuse", "weather-agent", "sess-42", "ana")
    assert run.request_context == {"channel": "web"}
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert "inputMessages" not in t.derived  # the observation's input is this turn's
    assert run.output[0].text == ANSWER


def _langfuse_agent(children: list[Any]) -> list[Any]:
    fx = _fx("langfuse_pydantic", "Langfuse")
    return [span(fx["span_name"], fx["attributes"], span_id=ROOT, scope="langfuse-sdk",
                 start=1000, end=9000), *children]


OPENAI_HISTORY = [{"role": "system", "content": SYSTEM},
                  {"role": "user", "content": "Hi, I'm Ana."},
                  {"role": "assistant", "content": "Hi Ana! How can I help?"},
                  {"role": "user", "content": QUESTION}]
OPENAI_CALL = {"role": "assistant", "content": LEAD_IN, "tool_calls": [
    {"id": "call_1", "type": "function",
     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
OPENAI_TOOL = {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(RESULT)}


def _generation(sid: str | None, parent: str, start: int, end: int, messages: Any,
                output: Any, name: str = "chat") -> Any:
    return span(name, {"langfuse.observation.type": "generation",
                       "langfuse.observation.model.name": "gpt-4o",
                       "langfuse.observation.input": json.dumps(messages),
                       "langfuse.observation.output": json.dumps(output), "session.id": "sess-42"},
                span_id=sid, parent=parent, scope="langfuse-sdk", start=start, end=end)


def test_langfuse_generations_tool_and_a_double_recorded_call() -> None:
    outer1, outer2 = "0000000000000c01", "0000000000000c02"
    spans = _langfuse_agent([
        _generation(outer1, ROOT, 1100, 2000, OPENAI_HISTORY, OPENAI_CALL),
        # The OpenAI integration records the same call again, nested in the app's one.
        _generation(None, outer1, 1150, 1950, {"tools": [], "messages": OPENAI_HISTORY},
                    OPENAI_CALL, name="OpenAI-generation"),
        span("get_weather", {"langfuse.observation.type": "tool",
                             "langfuse.observation.input": '{"args": [], "kwargs": {"city": '
                                                           '"Paris"}}',
                             "langfuse.observation.output": json.dumps(RESULT)},
             parent=ROOT, scope="langfuse-sdk", start=2100, end=2200),
        _generation(outer2, ROOT, 2300, 8000, OPENAI_HISTORY + [OPENAI_CALL, OPENAI_TOOL],
                    {"role": "assistant", "content": ANSWER}),
        _generation(None, outer2, 2350, 7900, OPENAI_HISTORY + [OPENAI_CALL, OPENAI_TOOL],
                    ANSWER, name="OpenAI-generation"),
    ])
    result = build_runs(Trace(TRACE, spans))
    run = result.runs[0]
    assert len(result.runs) == 1 and result.reasons["nested_call"] == 2
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert history_of(run) == HISTORY
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    # Each call once: the lead-in text is not repeated.
    assert _part_kinds(run) == [f"text:{LEAD_IN}", "tool-invocation", f"text:{ANSWER}"]


def test_propagated_langfuse_attributes_do_not_hide_another_librarys_span() -> None:
    # propagate_attributes puts langfuse.trace.* on every span, an OTel GenAI chat span too.
    chat = span("chat gpt-4o", {
        "langfuse.trace.metadata.tenant": "acme", "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": QUESTION}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": ANSWER}], "finish_reason": "stop"}])},
        span_id=ROOT, kind="CLIENT")
    run = one_run([chat])
    assert (run.target.convention, run.target.entity_name) == ("genai", "gpt-4o")
    assert run.output[0].text == ANSWER


# --------------------------------------------------------------------------- Pydantic AI

def test_pydantic_ai_run_span_alone_new_message_index_is_exact() -> None:
    fx = _fx("langfuse_pydantic", "Pydantic AI")
    run = one_run([span(fx["span_name"], fx["attributes"], span_id=ROOT, scope="pydantic-ai")])
    t = run.target
    assert (t.convention, t.entity_name, t.conversation_id) == (
        "pydantic_ai", "weather_agent", "conv_42")
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == HISTORY
    assert "rememberedMessages" not in t.derived and "inputMessages" not in t.derived
    assert run.output[0].text == ANSWER
    # No chat span seen: the run's all_messages transcript gives its tool call and result.
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]


def test_pydantic_ai_without_content_keeps_the_skeleton() -> None:
    fx = _fx("langfuse_pydantic", "Pydantic AI")
    attrs = dict(fx["attributes"])
    skeleton = json.loads(attrs["pydantic_ai.all_messages"])
    for m in skeleton:
        for p in m["parts"]:
            for key in ("content", "arguments", "result"):
                p.pop(key, None)
    attrs["pydantic_ai.all_messages"] = json.dumps(skeleton)
    for key in ("final_result", "gen_ai.system_instructions"):
        del attrs[key]
    run = one_run([span(fx["span_name"], attrs, span_id=ROOT, scope="pydantic-ai")])
    assert run.target.content_captured is False
    assert [t[0] for t in tools_of(run)] == ["get_weather"]


# --------------------------------------------------------------------------- Anthropic SDK

ANTHROPIC = "com.anthropic.sdk.python"


def _parts_msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "content": t}


def _sdk_call(start: int, end: int, inputs: list[Any], outputs: list[Any], stop: str, *,
              parent: str, system: str | None = None, sid: str | None = None,
              threads: bool = True) -> Any:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-haiku", "gen_ai.conversation.id": "conv-42",
        "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
        "anthropic.message.stop_reason": stop}
    if threads:
        attrs["anthropic.beta"] = ["message-threads-2026-08-12"]
    if system is not None:
        attrs["gen_ai.system_instructions"] = json.dumps([_text(system)])
    return span("anthropic.messages.create", attrs, span_id=sid, parent=parent, scope=ANTHROPIC,
                kind="CLIENT", start=start, end=end)


def _runner(sid: str, start: int, end: int) -> Any:
    return span("anthropic.messages.tool_runner", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "claude-haiku",
        "gen_ai.conversation.id": "conv-42"}, span_id=sid, parent="0000000000000a99",
        scope=ANTHROPIC, start=start, end=end)


CALL = _parts_msg("assistant", _text(LEAD_IN), {"type": "tool_call", "id": "toolu_1",
                                                "name": "get_weather",
                                                "arguments": {"city": "Paris"}})
TOOL_RESULT = _parts_msg("user", {"type": "tool_call_response", "id": "toolu_1",
                                  "response": [{"type": "text", "text": json.dumps(RESULT)}]})


def _thread_trace(second_turn_input: list[Any]) -> list[Any]:
    r1, r2 = "0000000000000b01", "0000000000000b02"
    return [
        span("chat-session", {}, span_id="0000000000000a99", start=0, end=99_000),
        _runner(r1, 1000, 9000),
        _sdk_call(1100, 2000, [_parts_msg("user", _text(QUESTION))], [CALL], "tool_use",
                  parent=r1, system=SYSTEM),
        span("anthropic.custom_tool_use get_weather", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "toolu_1", "gen_ai.tool.call.arguments": '{"city":"Paris"}',
            "anthropic.tool_result.content": json.dumps([{"type": "text",
                                                          "text": json.dumps(RESULT)}])},
            parent=r1, scope=ANTHROPIC, start=2100, end=2200),
        _sdk_call(2300, 8000, [TOOL_RESULT], [_parts_msg("assistant", _text(ANSWER))],
                  "end_turn", parent=r1),
        _runner(r2, 10_000, 19_000),
        _sdk_call(10_100, 18_000, second_turn_input,
                  [_parts_msg("assistant", _text("Yes, take an umbrella."))], "end_turn",
                  parent=r2),
    ]


def test_anthropic_thread_calls_are_stitched_from_their_siblings() -> None:
    runs = one_trace_runs(_thread_trace([_parts_msg("user", _text("Should I take an umbrella?"))]))
    assert [(r.target.convention, r.target.entity_name) for r in runs] == [
        ("anthropic", "claude-haiku")] * 2
    first, second = runs
    assert tools_of(first) == [("get_weather", "toolu_1", {"city": "Paris"}, RESULT, "result")]
    assert first.output[0].text == ANSWER
    # Turn 2 sent only its new message and no system prompt: both come from turn 1's calls.
    assert [s.content for s in second.input.system_messages] == [SYSTEM]
    assert [m.text for m in second.input.input_messages] == ["Should I take an umbrella?"]
    assert history_of(second) == [("user", QUESTION), ("assistant", LEAD_IN),
                                  ("assistant", ANSWER)]
    assert second.input.remembered_messages[1].tool_invocations[0].result == RESULT
    assert "rememberedMessages" in second.target.derived


def test_anthropic_thread_created_again_with_the_whole_history_is_not_doubled() -> None:
    # A new thread whose first request resends everything (and, here, no system prompt).
    whole = [_parts_msg("user", _text(QUESTION)), CALL, TOOL_RESULT,
             _parts_msg("assistant", _text(ANSWER)),
             _parts_msg("user", _text("Should I take an umbrella?"))]
    second = one_trace_runs(_thread_trace(whole))[1]
    assert history_of(second) == [("user", QUESTION), ("assistant", LEAD_IN),
                                  ("assistant", ANSWER)]


def test_anthropic_tool_error_result_is_output_error() -> None:
    trace = _thread_trace([_parts_msg("user", _text("Should I take an umbrella?"))])
    tool = trace[3]
    tool.status_code = "ERROR"
    tool.attributes["error.type"] = "tool_error"
    tool.attributes["anthropic.tool_result.content"] = json.dumps(
        [{"type": "text", "text": "city not found"}])
    inv = one_trace_runs(trace)[0].output[0].tool_invocations[0]
    assert (inv.state, inv.error_text) == ("output-error", "city not found")


def test_openinference_span_around_the_sdk_span_is_one_call() -> None:
    r1 = "0000000000000b01"
    oi = "0000000000000d01"
    spans = [
        _runner(r1, 1000, 9000),
        span("beta.messages.create", {
            "openinference.span.kind": "LLM", "llm.model_name": "claude-haiku",
            "input.value": json.dumps({"system": SYSTEM, "messages": [
                {"role": "user", "content": QUESTION}]}),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"role": "assistant", "stop_reason": "end_turn",
                                        "content": [{"type": "text", "text": LEAD_IN},
                                                    {"type": "text", "text": ANSWER}]}),
            "output.mime_type": "application/json"},
            span_id=oi, parent=r1, start=1100, end=8000),
        _sdk_call(1150, 7900, [_parts_msg("user", _text(QUESTION))],
                  [_parts_msg("assistant", _text(LEAD_IN), _text(ANSWER))], "end_turn",
                  parent=oi, system=SYSTEM),
    ]
    result = build_runs(Trace(TRACE, spans[:1] + spans[1:]))
    assert result.reasons["nested_call"] == 1
    run = result.runs[0]
    assert run.target.convention == "anthropic"
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    # One call: its text once, not once per library.
    assert sum(1 for p in run.output[0].content.parts if p.type == "text") == 1


def test_vercel_spans_that_openinference_also_translated_stay_vercel() -> None:
    # openinference-vercel adds its own kinds to the AI SDK's spans (the root a CHAIN, the
    # steps LLM): the ai.* attributes still make the root the agent run.
    spans = _stream_steps(tool_parent_is_step=True, call_input={"city": "Paris"},
                          tool_result=json.dumps(RESULT), result_part=JSON_RESULT)
    for s, kind in zip(spans, ("CHAIN", "LLM", "TOOL", "LLM")):
        s.attributes["openinference.span.kind"] = kind
    run = one_run(spans)
    assert (run.target.convention, run.target.entity_name) == ("vercel", "weather-agent")
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.output[0].text == ANSWER


def test_pydantic_ai_v2_agent_run_and_running_tool_spans() -> None:
    fx = _fx("langfuse_pydantic", "Pydantic AI")
    attrs = {k: v for k, v in fx["attributes"].items()
             if k not in ("gen_ai.operation.name", "gen_ai.agent.name")}
    messages = json.loads(attrs["pydantic_ai.all_messages"])
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(messages[:3]),
            "gen_ai.output.messages": json.dumps([messages[3]])}
    run = one_run([
        span("agent run", attrs, span_id=ROOT, scope="pydantic-ai", start=1000, end=9000),
        span("chat gpt-4o", chat, parent=ROOT, scope="pydantic-ai", start=1100, end=2000),
        span("running tool", {"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1",
                              "tool_arguments": '{"city":"Paris"}',
                              "tool_response": json.dumps(RESULT)},
             parent=ROOT, scope="pydantic-ai", start=2100, end=2200),
        span("chat gpt-4o", {**chat, "gen_ai.input.messages": json.dumps(messages[:5]),
                             "gen_ai.output.messages": json.dumps([messages[5]])},
             parent=ROOT, scope="pydantic-ai", start=2300, end=8000)])
    assert (run.target.convention, run.target.entity_name) == ("pydantic_ai", "weather_agent")
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == HISTORY and "rememberedMessages" not in run.target.derived
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.output[0].text == ANSWER


def test_anthropic_thread_continued_in_another_trace_is_counted() -> None:
    # Turn 2's runner in a trace of its own: the thread's history is not in this trace.
    turn2 = [s for s in _thread_trace([_parts_msg("user", _text("Should I take an umbrella?"))])
             if s.start_time_unix_nano >= 10_000]
    turn2[0].parent_span_id = None
    result = build_runs(Trace(TRACE, turn2))
    assert result.reasons["thread_history_missing"] == 1
    run = result.runs[0]
    assert [m.text for m in run.input.input_messages] == ["Should I take an umbrella?"]
    assert run.input.remembered_messages == [] and run.input.system_messages == []


def test_anthropic_thread_call_recorded_by_openinference_too_is_stitched() -> None:
    # The outer OpenInference span has no conversation id; the merged call still continues
    # the thread.
    trace = _thread_trace([_parts_msg("user", _text("Should I take an umbrella?"))])
    sdk = trace[-1]
    oi = span("beta.messages.create", {
        "openinference.span.kind": "LLM", "llm.model_name": "claude-haiku",
        "input.value": json.dumps({"messages": [{"role": "user",
                                                 "content": "Should I take an umbrella?"}]}),
        "input.mime_type": "application/json"},
        span_id="0000000000000d02", parent=sdk.parent_span_id, start=10_050, end=18_500)
    sdk.parent_span_id = oi.span_id
    second = one_trace_runs([*trace, oi])[1]
    assert [s.content for s in second.input.system_messages] == [SYSTEM]
    assert history_of(second) == [("user", QUESTION), ("assistant", LEAD_IN),
                                  ("assistant", ANSWER)]
    assert second.output[0].text == "Yes, take an umbrella."
