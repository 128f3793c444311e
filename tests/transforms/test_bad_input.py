"""Bad and odd input: each case gets its reason code, and the other runs of the same trace
still come out right (DESIGN §3.5, §9)."""

from __future__ import annotations

import json
import random

from scorers.types import ScorerRun
from tests.transforms._runs import checked_build_runs as build_runs
from tests.transforms._spans import TRACE, genai_agent_trace, new_span_id, span
from transforms import Trace

QUESTION = "What's the weather in Paris?"
ANSWER = "It's 14°C and raining in Paris, Ana."


def _assert_weather_run(run: ScorerRun, name: str = "WeatherAgent",
                        question: str = QUESTION, answer: str = ANSWER) -> None:
    """The full, correct run of `genai_agent_trace`."""
    assert run.target.entity_name == name
    assert [m.text for m in run.input.input_messages] == [question]
    assert [(m.role, m.text) for m in run.input.remembered_messages] == [
        ("user", "Hi, I'm Ana."), ("assistant", "Hi Ana! How can I help?")]
    assert [s.content for s in run.input.system_messages] == [
        "You are a helpful weather assistant."]
    assert run.output[0].text == answer
    [tool] = run.output[0].tool_invocations
    assert (tool.tool_name, tool.args, tool.result, tool.state) == (
        "get_weather", {"city": "Paris"}, {"temp_c": 14, "conditions": "rain"}, "result")
    assert run.target.content_captured and not run.target.truncated


def _two_agents() -> tuple[list, list]:
    """Two sibling agent invocations in one trace (under one request span)."""
    request = span("POST /chat", {"http.method": "POST"}, start=0, end=10_000_000)
    a = genai_agent_trace(t0=1_000_000, name="WeatherAgent", root_parent=request.span_id)
    b = genai_agent_trace(t0=5_000_000, name="OtherAgent", question="And in Berlin?",
                          answer="Berlin: 9°C.", root_parent=request.span_id)
    return [request, *a], b


def test_json_cut_mid_string_keeps_text_and_flags_truncated() -> None:
    good, bad = _two_agents()
    for s in bad:
        if s.name.startswith("chat"):
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                s.attributes[key] = s.attributes[key][: len(s.attributes[key]) // 2]
    result = build_runs(Trace(TRACE, good + bad))
    assert result.reasons["truncated_json"] >= 2
    weather, other = result.runs
    _assert_weather_run(weather)
    assert other.target.truncated is True
    # The cut text is kept, not dropped: the scorer still sees what was sent.
    assert other.input.input_messages[0].text.startswith('[{"role": "system"')
    # The tool span still gives the tool call with its result.
    assert [t.result for t in other.output[0].tool_invocations] == [
        {"temp_c": 14, "conditions": "rain"}]


def test_redacted_content_is_not_captured() -> None:
    agent = span("Agent", {"openinference.span.kind": "AGENT", "agent.name": "A",
                           "input.value": "__REDACTED__", "output.value": "__REDACTED__"},
                 start=10, end=1000)
    llm = span("LLM", {"openinference.span.kind": "LLM",
                       "llm.input_messages.0.message.role": "user",
                       "llm.input_messages.0.message.content": "__REDACTED__",
                       "llm.output_messages.0.message.role": "assistant",
                       "llm.output_messages.0.message.content": "__REDACTED__"},
               parent=agent.span_id, start=20, end=900)
    good, _ = _two_agents()
    result = build_runs(Trace(TRACE, good + [agent, llm]))
    assert result.reasons["redacted"] == 1
    redacted = next(r for r in result.runs if r.target.entity_name == "A")
    assert redacted.target.content_captured is False
    _assert_weather_run(next(r for r in result.runs if r.target.entity_name == "WeatherAgent"))


def test_capture_switched_off() -> None:
    good, bad = _two_agents()
    for s in bad:
        s.attributes.pop("gen_ai.input.messages", None)
        s.attributes.pop("gen_ai.output.messages", None)
        s.attributes.pop("gen_ai.tool.call.arguments", None)
        s.attributes.pop("gen_ai.tool.call.result", None)
    result = build_runs(Trace(TRACE, good + bad))
    assert result.reasons["capture_off"] == 1
    weather, other = result.runs
    _assert_weather_run(weather)
    assert other.target.content_captured is False
    assert other.input.input_messages == []
    # Structure only: the tool call is still known, without arguments or result.
    assert [(t.tool_name, t.state) for t in other.output[0].tool_invocations] == [
        ("get_weather", "call")]


def test_root_never_arrives() -> None:
    missing_root = new_span_id()
    spans = genai_agent_trace(root_parent=missing_root)
    result = build_runs(Trace(TRACE, spans))
    assert result.reasons["no_root"] == 1
    assert result.reasons["orphan"] == 1
    [run] = result.runs
    _assert_weather_run(run)


def test_orphan_spans_are_counted_and_do_not_join_a_run() -> None:
    good, _ = _two_agents()
    orphan = span("execute_tool delete_everything", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delete_everything",
        "gen_ai.tool.call.id": "call_x"}, parent=new_span_id(), start=1_000_500)
    result = build_runs(Trace(TRACE, good + [orphan]))
    assert result.reasons["orphan"] == 1
    [run] = result.runs
    _assert_weather_run(run)


def test_parent_cycle_is_cut() -> None:
    good, _ = _two_agents()
    a_id, b_id = new_span_id(), new_span_id()
    a = span("invoke_agent Loop", {"gen_ai.operation.name": "invoke_agent",
                                   "gen_ai.agent.name": "Loop"}, span_id=a_id, parent=b_id,
             start=7_000_000)
    b = span("step", {}, span_id=b_id, parent=a_id, start=7_000_100)
    result = build_runs(Trace(TRACE, good + [a, b]))
    assert result.reasons["parent_cycle"] == 1
    weather = next(r for r in result.runs if r.target.entity_name == "WeatherAgent")
    _assert_weather_run(weather)


def test_self_parent_is_a_cycle() -> None:
    s = span("invoke_agent Self", {"gen_ai.operation.name": "invoke_agent",
                                   "gen_ai.agent.name": "Self"}, span_id="00000000000000aa",
             parent="00000000000000aa")
    result = build_runs(Trace(TRACE, [s]))
    assert result.reasons["parent_cycle"] == 1
    assert [r.target.entity_name for r in result.runs] == ["Self"]


def test_ten_thousand_deep_parent_chain() -> None:
    spans = genai_agent_trace()
    root, chat1, tool, chat2 = spans
    parent = root.span_id
    chain = []
    for i in range(10_000):
        s = span(f"step {i}", {}, parent=parent, start=root.start_time_unix_nano + 1 + i)
        chain.append(s)
        parent = s.span_id
    for s in (chat1, tool, chat2):  # the model calls and the tool sit at the bottom
        s.parent_span_id = parent
    result = build_runs(Trace(TRACE, [root, *chain, chat1, tool, chat2]))
    [run] = result.runs
    _assert_weather_run(run)


def test_ten_thousand_span_trace() -> None:
    spans = []
    for i in range(2_500):  # 2,500 agent invocations x 4 spans
        spans += genai_agent_trace(t0=1_000_000 + i * 10_000, name=f"agent-{i}")
    assert len(spans) == 10_000
    result = build_runs(Trace(TRACE, spans))
    assert len(result.runs) == 2_500
    assert [r.target.entity_name for r in result.runs[:2]] == ["agent-0", "agent-1"]
    _assert_weather_run(result.runs[-1], name="agent-2499")


def test_duplicate_span_ids_are_counted_once() -> None:
    spans = genai_agent_trace()
    once = build_runs(Trace(TRACE, spans))
    twice = build_runs(Trace(TRACE, spans + [span(s.name, s.attributes, span_id=s.span_id,
                                                  parent=s.parent_span_id,
                                                  start=s.start_time_unix_nano,
                                                  end=s.end_time_unix_nano)
                                             for s in spans]))
    assert twice.reasons["duplicate"] == 4
    assert [r.model_dump(mode="json") for r in twice.runs] == [
        r.model_dump(mode="json") for r in once.runs]
    _assert_weather_run(twice.runs[0])


def test_any_arrival_order_gives_the_same_runs() -> None:
    good, other = _two_agents()
    spans = good + other
    expected = [r.model_dump(mode="json") for r in build_runs(Trace(TRACE, spans)).runs]
    rng = random.Random(7)
    for _ in range(20):
        shuffled = spans[:]
        rng.shuffle(shuffled)
        got = [r.model_dump(mode="json") for r in build_runs(Trace(TRACE, shuffled)).runs]
        assert got == expected
    assert len(expected) == 2


def test_deeply_nested_json_attribute() -> None:
    good, bad = _two_agents()
    deep = "[" * 100_000 + "]" * 100_000
    for s in bad:
        if s.name.startswith("chat"):
            s.attributes["gen_ai.input.messages"] = deep
    result = build_runs(Trace(TRACE, good + bad))
    assert result.reasons["too_deep"] == 2
    weather, other = result.runs
    _assert_weather_run(weather)
    assert other.output[0].text == "Berlin: 9°C."


def test_run_with_no_output() -> None:
    good, bad = _two_agents()
    bad = [s for s in bad if not s.name.startswith("execute_tool")]
    for s in bad:
        s.attributes.pop("gen_ai.output.messages", None)
    result = build_runs(Trace(TRACE, good + bad))
    assert result.reasons["no_output"] == 1
    weather, other = result.runs
    _assert_weather_run(weather)
    assert other.output == []
    assert [m.text for m in other.input.input_messages] == ["And in Berlin?"]


def test_loop_guard_ignores_scorecar_spans() -> None:
    spans = genai_agent_trace()
    own = span("evaluation relevance", {"gen_ai.operation.name": "invoke_agent",
                                        "gen_ai.agent.name": "judge"},
               parent=spans[0].span_id, scope="scorecar")
    result = build_runs(Trace(TRACE, spans + [own]))
    assert result.reasons["own_span"] == 1
    [run] = result.runs
    _assert_weather_run(run)


def test_nested_agent_is_a_run_of_its_own() -> None:
    outer = genai_agent_trace(name="Planner")
    inner = genai_agent_trace(t0=1_000_300, name="WeatherAgent", root_parent=outer[2].span_id)
    result = build_runs(Trace(TRACE, outer + inner))
    planner, weather = result.runs
    assert planner.target.entity_name == "Planner"
    _assert_weather_run(weather)
    # The sub-agent's own tool call stays in its run.
    assert len(planner.output[0].tool_invocations) == 1


def test_trace_without_genai_spans() -> None:
    result = build_runs(Trace(TRACE, [span("GET /health", {"http.method": "GET"})]))
    assert result.runs == []
    assert result.reasons["not_genai"] == 1


def test_genai_spans_without_agent_or_model_call_are_no_run() -> None:
    only_tool = span("execute_tool get_weather", {"gen_ai.operation.name": "execute_tool",
                                                  "gen_ai.tool.name": "get_weather"})
    result = build_runs(Trace(TRACE, [only_tool]))
    assert result.runs == [] and result.reasons == {"no_run": 1}


def test_tool_error_is_output_error() -> None:
    spans = genai_agent_trace()
    tool = spans[2]
    tool.status_code = "ERROR"
    tool.attributes.pop("gen_ai.tool.call.result")
    tool.attributes["error.message"] = "weather service down"
    [run] = build_runs(Trace(TRACE, spans)).runs
    [inv] = run.output[0].tool_invocations
    # The second chat's input still carries the result the model saw; the span's error wins.
    assert inv.state == "output-error" and inv.error_text == "weather service down"


def test_double_encoded_tool_arguments_are_decoded() -> None:
    spans = genai_agent_trace()
    spans[2].attributes["gen_ai.tool.call.result"] = json.dumps(
        json.dumps({"temp_c": 14, "conditions": "rain"}))
    [run] = build_runs(Trace(TRACE, spans)).runs
    assert run.output[0].tool_invocations[0].result == {"temp_c": 14, "conditions": "rain"}


def test_bytes_attributes_serialize_as_base64() -> None:
    spans = genai_agent_trace()
    spans[0].resource = {"service.name": "x", "blob": b"\xff\x00\xfe"}
    spans[0].attributes["traceloop.association.properties.raw"] = b"\xff"
    [run] = build_runs(Trace(TRACE, spans)).runs
    dumped = json.loads(run.model_dump_json())
    assert dumped["target"]["resource"]["blob"] == "/wD+"
    assert dumped["requestContext"]["raw"] == "/w=="


_LIBRARIES = ("anthropic-sdk", "langfuse", "openlit", "pydantic-ai", "vercel-ai-v6", "vercel-ai-v7")


def test_real_captures_any_order_duplicates_and_missing_spans() -> None:
    # Real traces (thread stitching, double-recorded calls, log records that repeat a
    # call): arrival order and re-delivery change nothing; losing spans never raises.
    from pathlib import Path

    from tests.transforms._runs import decode_file
    from transforms import group_traces

    root = Path(__file__).resolve().parents[1] / "testdata" / "captures"
    rng = random.Random(11)
    checked = 0
    for lib in _LIBRARIES:
        for path in sorted((root / lib).glob("*.otlp.jsonl")):
            decoded = decode_file(path)
            for trace in group_traces(decoded.spans, decoded.logs).values():
                expected = [r.model_dump(mode="json") for r in build_runs(trace).runs]
                spans, logs = trace.spans[:], trace.logs[:]
                rng.shuffle(spans)
                rng.shuffle(logs)
                again = build_runs(Trace(trace.trace_id, spans + spans[:3], logs + logs))
                assert [r.model_dump(mode="json") for r in again.runs] == expected, path.name
                for drop in range(len(spans)):  # any one span lost: no exception anywhere
                    lost = build_runs(Trace(trace.trace_id, spans[:drop] + spans[drop + 1:],
                                            logs))
                    assert not lost.reasons.keys() & {"build_error", "extract_error"}
                checked += 1
    assert checked >= 30
