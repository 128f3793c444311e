"""The hand-made attribute sets of reference/convention-fixtures.json, one convention each:
the scenario is history "Hi, I'm Ana." / "Hi Ana! How can I help?", new input "What's the
weather in Paris?", get_weather({"city": "Paris"}) -> {"temp_c": 14, "conditions": "rain"},
final answer "It's 14°C and raining in Paris, Ana."."""

from __future__ import annotations

from typing import Any

from tests.transforms._runs import history_of, one_run, tools_of
from tests.transforms._spans import TRACE, load_fixtures, log_event, span
from transforms import Trace, build_runs

FIX = load_fixtures()
SYSTEM = "You are a helpful weather assistant."
QUESTION = "What's the weather in Paris?"
ANSWER = "It's 14°C and raining in Paris, Ana."
RESULT = {"temp_c": 14, "conditions": "rain"}


def _spans(conv: str, names: list[str], root_id: str = "00f067aa0ba902b7") -> list[Any]:
    out = []
    for i, fx in enumerate(f for f in FIX[conv] if f["name"] in names):
        sid = fx.get("span_id") or f"{0xa000 + i:016x}"
        parent = fx.get("parent_span_id") if sid != root_id else None
        if parent is None and sid != root_id:
            parent = root_id
        out.append(span(fx["span_name"], fx["attributes"], span_id=sid, parent=parent,
                        start=1000 + 100 * i, end=(10_000 if sid == root_id else 1050 + 100 * i),
                        scope=fx.get("scope", ""), kind=fx.get("kind", "INTERNAL")))
    return out


def test_otel_genai_agent_chat_and_tool() -> None:
    names = [f["name"] for f in FIX["otel_genai"] if "log_events" not in f]
    run = one_run(_spans("otel_genai", names))
    t = run.target
    assert (t.convention, t.entity_name, t.entity_id, t.conversation_id) == (
        "genai", "WeatherAgent", "asst_5j66UpCp", "conv_42")
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [(m.role, m.text) for m in run.input.input_messages] == [("user", QUESTION)]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert "rememberedMessages" in t.derived  # inferred, not read
    assert run.output[0].text == ANSWER
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert t.content_captured and not t.truncated


def test_otel_genai_legacy_log_events_make_a_bare_run() -> None:
    fx = next(f for f in FIX["otel_genai"] if "log_events" in f)
    chat = span(fx["span_name"], fx["attributes"], span_id=fx["span_id"], kind="CLIENT")
    logs = [log_event(e, 2000 + i) for i, e in enumerate(fx["log_events"])]
    result = build_runs(Trace(TRACE, [chat], logs))
    assert len(result.runs) == 1
    run = result.runs[0]
    assert result.reasons["evaluation_event"] == 1  # the evaluation record is not content
    assert (run.target.entity_name, run.target.convention) == ("gpt-4o", "genai")
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    # The tool round in the call's input belongs to this invocation's output.
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.output[0].text == ANSWER


def test_openinference_agent_llm_tool() -> None:
    spans = _spans("openinference", [f["name"] for f in FIX["openinference"]])
    tool_fx = FIX["openinference"][2]
    second = dict(FIX["openinference"][1]["attributes"])
    second.update(tool_fx["next_llm_span_extra_attributes"])
    for k in [k for k in second if k.startswith("llm.output_messages.0.message.tool_calls")]:
        del second[k]
    spans.append(span("ChatCompletion", second, parent="00f067aa0ba902b7", start=5000,
                      end=6000))
    run = one_run(spans)
    t = run.target
    assert (t.convention, t.entity_name, t.conversation_id, t.resource_id) == (
        "openinference", "WeatherAgent", "sess-42", "ana@example.com")
    assert run.request_context == {"thread": "conv_42"}
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert "inputMessages" not in t.derived  # the AGENT input.value is this turn's input
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert run.output[0].text == ANSWER
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]


def test_openllmetry_decorators_and_legacy_prompts() -> None:
    run = one_run(_spans("openllmetry", [f["name"] for f in FIX["openllmetry"]]))
    t = run.target
    assert (t.convention, t.entity_name, t.conversation_id, t.resource_id) == (
        "openllmetry", "weather_agent", "sess-42", "ana")
    assert run.request_context["session_id"] == "sess-42"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    # entity.input is a Python-args dump: the input comes from the first LLM call.
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert "inputMessages" in t.derived
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert run.output[0].text == ANSWER
    # The @tool span has no call id: joined by name with the prompt's call_1, counted once.
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]


def test_mastra_current_layout_remembered_is_exact() -> None:
    spans = _spans("mastra_otel_exporter", [f["name"] for f in FIX["mastra_otel_exporter"]])
    run = one_run(spans)
    t = run.target
    assert (t.convention, t.entity_name, t.entity_id, t.conversation_id, t.resource_id) == (
        "mastra", "Weather Agent", "weather-agent", "thread-123", "user-ana")
    assert run.request_context["runId"] == "run-9f1c"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert run.input.tagged_system_messages == {}
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert "rememberedMessages" not in t.derived  # model input minus agent input: exact
    assert run.output[0].text == ANSWER
    # model_generation.output.toolCalls and the execute_tool span: one call, with its result.
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]


def test_mastra_extra_system_messages_are_tagged_runtime() -> None:
    fx = {f["name"]: f for f in FIX["mastra_otel_exporter"]}
    agent = fx["AGENT_RUN -> invoke_agent (@mastra/otel-exporter 1.x)"]
    gen = dict(fx["MODEL_GENERATION (full prompt incl. memory) when MODEL_INFERENCE feature is "
                  "on"]["attributes"])
    gen["mastra.model_generation.input"] = gen["mastra.model_generation.input"].replace(
        '{"role":"system","content":"You are a helpful weather assistant."}',
        '{"role":"system","content":"You are a helpful weather assistant."},'
        '{"role":"system","content":"<working_memory>Name: Ana</working_memory>"}')
    run = one_run([span(agent["span_name"], agent["attributes"], span_id="00f067aa0ba902b7"),
                   span("model_generation gpt-4o-mini", gen, parent="00f067aa0ba902b7")])
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert {k: [s.content for s in v] for k, v in run.input.tagged_system_messages.items()} == {
        "runtime": ["<working_memory>Name: Ana</working_memory>"]}


def test_openllmetry_log_event_mode_events_on_the_agent_span() -> None:
    agent_fx = FIX["openllmetry"][0]
    agent = span(agent_fx["span_name"], agent_fx["attributes"], span_id="00f067aa0ba902b7",
                 start=1000, end=9000)
    chat = span("openai.chat", {"llm.request.type": "chat", "gen_ai.system": "openai",
                                "gen_ai.request.model": "gpt-4o"},
                parent="00f067aa0ba902b7", start=2000, end=3000, kind="CLIENT")

    def ev(name: str, body: dict[str, Any], t: int) -> Any:
        from transforms.types import LogEvent
        return LogEvent(event_name=name, trace_id=TRACE, span_id="00f067aa0ba902b7",
                        time_unix_nano=t, attributes={"gen_ai.system": "openai"}, body=body)

    logs = [ev("gen_ai.system.message", {"content": SYSTEM}, 2001),
            ev("gen_ai.user.message", {"content": "Hi, I'm Ana."}, 2002),
            ev("gen_ai.assistant.message", {"content": "Hi Ana! How can I help?"}, 2003),
            ev("gen_ai.user.message", {"content": QUESTION}, 2004),
            ev("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": {},
                                 "tool_calls": [{"id": "call_1", "type": "function", "function": {
                                     "name": "get_weather",
                                     "arguments": '{"city":"Paris"}'}}]}, 2900),
            ev("gen_ai.user.message", {"content": QUESTION}, 4001),
            ev("gen_ai.tool.message", {"content": '{"temp_c":14,"conditions":"rain"}',
                                       "id": "call_1"}, 4002),
            ev("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                 "message": {"content": ANSWER}}, 4900)]
    run = one_run([agent, chat], logs)
    assert run.target.entity_name == "weather_agent"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert run.output[0].text == ANSWER
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]
    assert run.target.content_captured is True


def test_mastra_legacy_layout_model_generation_is_the_chat_span() -> None:
    import json as _json
    agent_fx = FIX["mastra_otel_exporter"][0]
    root = "00f067aa0ba902b7"
    msgs = [{"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
            {"role": "user", "parts": [{"type": "text", "content": "Hi, I'm Ana."}]},
            {"role": "assistant", "parts": [{"type": "text",
                                             "content": "Hi Ana! How can I help?"}]},
            {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    chat = span("chat gpt-4o-mini", {
        "gen_ai.operation.name": "chat", "mastra.span.type": "model_generation",
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.input.messages": _json.dumps(msgs),
        "gen_ai.output.messages": _json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": ANSWER}]}]),
        "gen_ai.response.finish_reasons": '["stop"]'}, span_id="000000000000c4a7", parent=root,
        start=2000, end=8000, kind="CLIENT")
    step = span("agent_step 0", {"gen_ai.operation.name": "agent_step",
                                 "mastra.span.type": "model_step"},
                span_id="0000000000005e90", parent="000000000000c4a7", start=2100, end=7000)
    tool = span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "mastra.span.type": "tool_call",
        "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        "gen_ai.tool.call.result": '{"temp_c":14,"conditions":"rain"}'},
        parent="0000000000005e90", start=3000, end=3500)
    run = one_run([span(agent_fx["span_name"], agent_fx["attributes"], span_id=root,
                        start=1000, end=9000), chat, step, tool])
    assert run.target.convention == "mastra"
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert run.input.tagged_system_messages == {}
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert "rememberedMessages" not in run.target.derived
    assert run.output[0].text == ANSWER
    # The tool span two levels under the model call is found (Mastra itself finds none).
    assert tools_of(run) == [("get_weather", "call_1", {"city": "Paris"}, RESULT, "result")]


def test_mastra_0x_exporter_layout() -> None:
    import json as _json
    root = "00f067aa0ba902b7"
    agent = span("agent.weather-agent", {
        "gen_ai.operation.name": "agent.run", "input": _json.dumps(
            [{"role": "user", "content": QUESTION}]),
        "output": _json.dumps({"text": ANSWER}), "threadId": "thread-123",
        "resourceId": "user-ana"}, span_id=root, scope="@mastra/otel-exporter",
        start=1000, end=9000)
    chat = span("chat gpt-4o-mini", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.prompt": _json.dumps({"messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Hi, I'm Ana."},
            {"role": "assistant", "content": "Hi Ana! How can I help?"},
            {"role": "user", "content": QUESTION}]}),
        "gen_ai.completion": _json.dumps({"text": ANSWER})}, parent=root,
        scope="@mastra/otel-exporter", start=2000, end=8000, kind="CLIENT")
    tool = span("tool.execute get_weather", {
        "gen_ai.operation.name": "tool.execute", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.input": '{"city":"Paris"}',
        "gen_ai.tool.output": '{"temp_c":14,"conditions":"rain"}'}, parent=root,
        scope="@mastra/otel-exporter", start=3000, end=3500)
    run = one_run([agent, chat, tool])
    t = run.target
    assert (t.convention, t.entity_id, t.conversation_id, t.resource_id) == (
        "mastra", "weather-agent", "thread-123", "user-ana")
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert run.output[0].text == ANSWER
    assert [(x[0], x[2], x[3], x[4]) for x in tools_of(run)] == [
        ("get_weather", {"city": "Paris"}, RESULT, "result")]


def test_openinference_llm_spans_with_raw_anthropic_request_and_response() -> None:
    import json as _json
    root = "00f067aa0ba902b7"
    history = [{"role": "user", "content": "Hi, I'm Ana."},
               {"role": "assistant", "content": [{"type": "text",
                                                  "text": "Hi Ana! How can I help?"}]},
               {"role": "user", "content": QUESTION}]
    tool_use = {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
         "input": {"city": "Paris"}}]}
    tool_result = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01",
         "content": '{"temp_c":14,"conditions":"rain"}'}]}

    def llm(messages: list[Any], response: dict[str, Any], start: int) -> Any:
        return span("Messages", {
            "openinference.span.kind": "LLM", "llm.model_name": "claude-haiku",
            "input.value": _json.dumps({"model": "claude-haiku", "system": SYSTEM,
                                        "messages": messages}),
            "input.mime_type": "application/json",
            "output.value": _json.dumps(response), "output.mime_type": "application/json",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Hi, I'm Ana."},
            parent=root, start=start, end=start + 100, kind="INTERNAL")

    agent = span("weather-agent", {"openinference.span.kind": "AGENT",
                                   "agent.name": "weather-agent", "input.value": QUESTION,
                                   "input.mime_type": "text/plain"},
                 span_id=root, start=1000, end=9000)
    run = one_run([
        agent,
        llm(history, {"role": "assistant", "content": tool_use["content"],
                      "stop_reason": "tool_use"}, 2000),
        llm(history + [tool_use, tool_result], {
            "role": "assistant", "content": [{"type": "text", "text": ANSWER}],
            "stop_reason": "end_turn"}, 3000)])
    assert [s.content for s in run.input.system_messages] == [SYSTEM]
    assert [m.text for m in run.input.input_messages] == [QUESTION]
    assert history_of(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert run.output[0].text == ANSWER  # no output.value on the agent: the last LLM's answer
    assert tools_of(run) == [("get_weather", "toolu_01", {"city": "Paris"}, RESULT, "result")]
    # The intermediate text stays, before the tool call, as an output part.
    assert [p.type for p in run.output[0].content.parts] == ["text", "tool-invocation", "text"]
